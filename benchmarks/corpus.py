"""The real-code corpus: released sources of JAX projects from PyPI, pinned and cached.

Each project is fetched once with `pip download --no-deps` (its sdist where PyPI has one that
pip can prepare, else its wheel: wheels of pure-Python projects hold the sources) and unpacked
under the cache folder, outside the repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHE = Path.home() / ".cache" / "jax-lsp-corpus"


@dataclass(frozen=True)
class Project:
    name: str
    distribution: str
    version: str


# The latest version PyPI served for each when this list was written: pinned so runs compare.
# maxtext, praxis, paxml, axlearn and transformer-engine have no sdist of these versions on
# PyPI: their wheels are used. axlearn's only release there is a snapshot of February 2024.
# transformer-engine: the JAX sources (transformer_engine/jax) are in the transformer-engine
# wheel (py3-none-any); transformer-engine-jax's sdist holds only its C++ extension's build files.
PROJECTS = (
    Project("maxtext", "maxtext", "0.2.5"),
    Project("easydel", "easydel", "0.3.0"),
    Project("levanter", "levanter", "1.1"),
    Project("haliax", "haliax", "1.3"),
    Project("praxis", "praxis", "1.4.0"),
    Project("paxml", "paxml", "1.4.0"),
    Project("axlearn", "axlearn", "0.0.1.post20240213000026"),
    Project("flax", "flax", "0.12.8"),
    Project("equinox", "equinox", "0.13.8"),
    Project("optax", "optax", "0.2.8"),
    Project("orbax-checkpoint", "orbax-checkpoint", "0.12.8"),
    Project("penzai", "penzai", "0.2.5"),
    Project("transformer-engine", "transformer-engine", "2.20.2"),
    Project("jax", "jax", "0.10.2"),
)


def _pip_download(project: Project, folder: Path, kind: str) -> Path | None:
    """The downloaded archive, or None if pip found no such file (or could not prepare it)."""
    if folder.exists():
        shutil.rmtree(folder)
    # Requires-Python is ignored: some projects need a newer Python than the one running this.
    choice = ["--no-binary", project.distribution] if kind == "sdist" else ["--only-binary", ":all:"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--ignore-requires-python",
            *choice,
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(folder),
            f"{project.distribution}=={project.version}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    archives = sorted(folder.glob("*")) if done.returncode == 0 and folder.exists() else []
    return archives[0] if archives else None


def _unpack(archive: Path, target: Path) -> Path:
    """Unpack into `target`; the project root is the sdist's single top folder, or `target`."""
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    if archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar")):
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.12 and the security releases before it
                tar.extractall(partial, filter="data")
            else:
                tar.extractall(partial)  # a pinned archive from PyPI
    else:  # .zip sdists and .whl
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(partial)
    partial.rename(target)
    return target


def root_of(unpacked: Path) -> Path:
    entries = list(unpacked.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else unpacked


def fetch(project: Project, cache: Path) -> tuple[Path, str]:
    """The project's source root in the cache, and what it came from ("sdist" or "wheel")."""
    for kind in ("sdist", "wheel"):
        unpacked = cache / "src" / f"{project.distribution}-{project.version}-{kind}"
        if unpacked.is_dir():
            return root_of(unpacked), kind
    for kind in ("sdist", "wheel"):
        archive = _pip_download(project, cache / "downloads" / f"{project.distribution}-{kind}", kind)
        if archive is not None:
            unpacked = cache / "src" / f"{project.distribution}-{project.version}-{kind}"
            return root_of(_unpack(archive, unpacked)), kind
    raise RuntimeError(f"{project.distribution}=={project.version}: pip found neither an sdist nor a wheel")


if __name__ == "__main__":
    for project in PROJECTS:
        print(project.name, *fetch(project, DEFAULT_CACHE), flush=True)

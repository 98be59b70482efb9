"""The real-code corpus: released sources of JAX projects from PyPI, pinned and cached, and
two trees from local folders.

Each PyPI project is fetched once with `pip download --no-deps` (its sdist where PyPI has one
that pip can prepare, else its wheel: wheels of pure-Python projects hold the sources) and
unpacked under the cache folder, outside the repository.

The local ones (`LOCAL`):
- `jax-repo`: the jax repository's own tree at a pinned release, tests included (the sdist
  holds only the package; the tests are where jedi spent seconds naming nothing). PyPI does not
  serve it and CI reaches nothing else, so it is read from a folder that is made by hand, once:

      git clone --bare https://github.com/jax-ml/jax jax.git    # or any copy of the history
      mkdir -p ~/.cache/jax-lsp-corpus/src/jax-repo-jax-v0.10.2
      git --git-dir=jax.git archive jax-v0.10.2 | tar -x -C ~/.cache/jax-lsp-corpus/src/jax-repo-jax-v0.10.2

  and skipped, with a printed line, where that folder is missing.
- `cpython-lib`: the standard library of the Python running this (CPython's `Lib/`, where
  `policy=` is the email package's keyword), copied into the cache without its site-packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
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


@dataclass(frozen=True)
class LocalProject:
    """Sources from a local folder (`folder` below the cache's `src/`), not from PyPI."""

    name: str
    version: str
    folder: str
    how: str  # how the folder is made, for the line that says it is missing


JAX_REPO_TAG = "jax-v0.10.2"
JAX_REPO = LocalProject(
    "jax-repo",
    JAX_REPO_TAG,
    f"jax-repo-{JAX_REPO_TAG}",
    f"`git archive {JAX_REPO_TAG}` of github.com/jax-ml/jax (benchmarks/corpus.py says how)",
)
PYTHON_VERSION = ".".join(map(str, sys.version_info[:3]))
CPYTHON_LIB = LocalProject(
    "cpython-lib",
    f"{sys.implementation.name} {PYTHON_VERSION}",
    f"cpython-Lib-{PYTHON_VERSION}",
    "copied from this Python's standard library",
)
LOCAL = (JAX_REPO, CPYTHON_LIB)


def local_root(project: LocalProject, cache: Path, folder: Path | None = None) -> Path | None:
    """The project's folder (`folder` if given); None, when it is missing and cannot be made."""
    root = folder if folder is not None else cache / "src" / project.folder
    if root.is_dir():
        return root
    if project is CPYTHON_LIB and folder is None:
        return _copy_standard_library(root)
    return None


def _copy_standard_library(target: Path) -> Path:
    """The running Python's standard library, without site-packages and byte code."""
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    shutil.copytree(
        sysconfig.get_paths()["stdlib"],
        partial,
        ignore=shutil.ignore_patterns("site-packages", "dist-packages", "__pycache__"),
        symlinks=True,
    )
    partial.rename(target)
    return target


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

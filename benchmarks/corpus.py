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

The small ones (`GITHUB`), and the repositories of maxtext and axlearn (`MAXTEXT_REPO`,
`AXLEARN_REPO`, for one file of each): public
repositories of at most 330 .py files that use JAX (most with jax.checkpoint, remat or Flax),
each pinned at a commit and read from a folder made by hand, once, like jax-repo's (only the .py
files are needed; where `git archive` fails on a blob that is absent from the clone, such as an
LFS object, `git ls-tree -r` and `git cat-file blob` give the .py files one by one):

    git clone --bare https://github.com/OWNER/NAME NAME.git
    mkdir -p ~/.cache/jax-lsp-corpus/src/github-NAME-COMMIT12   # the first 12 hex digits
    git --git-dir=NAME.git archive COMMIT -- '*.py' | tar -x -C ~/.cache/jax-lsp-corpus/src/github-NAME-COMMIT12

and skipped, with a printed line, where a folder is missing.
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


def _github(repository: str, commit: str) -> LocalProject:
    name = repository.split("/")[1]
    return LocalProject(
        name,
        commit,
        f"github-{name}-{commit[:12]}",
        f"`git archive {commit}` of github.com/{repository} (benchmarks/corpus.py says how)",
    )


# The commit each default branch had when this list was written.
MAXTEXT_REPO = _github("AI-Hypercomputer/maxtext", "e591f30cbbf217ed67ef71263ec0538239f9c3b8")
GITHUB = (
    _github("young-geng/EasyLM", "fe5b2c354e25d697fce7cd225e23bbbe72570da3"),
    _github("borisdayma/dalle-mini", "f0be4de610285a002052024a1e096126f9452cc4"),
    _github("sanchit-gandhi/whisper-jax", "f983178a80ad37cf2f655777c26a74438b5d8690"),
    _github("kingoflolz/mesh-transformer-jax", "f8315e3003033b23f21d78361b288953064e0e76"),
    _github("LargeWorldModel/LWM", "f45d2b70bda27abfa9cf32e228916b2883801366"),
    _github("Sea-Snell/JAXSeq", "aa6d7f33c9adc443c51089aec77b4838a0021585"),
    _github("lhao499/ringattention", "00636428e08e67046e8d4c1dc2b2cc57301d1632"),
    _github("google-deepmind/recurrentgemma", "2efa84dac0e68e63547a27a18fa943c98f1c312e"),
    _github("salesforce/jaxformer", "026b4ed674232849e2979f3008b3e526dc032741"),
    _github("ayaka14732/llama-2-jax", "6bb19056f2e10b052321c9c510df8d9474aca333"),
    _github("google/flaxformer", "399ea3a85e9807ada653fd0de1a9de627eb0acde"),
    _github("google-research/t5x", "cc342d419ec3e3e9c4bf1df33c82330cafdc1e16"),
    _github("google-deepmind/alphafold", "c77e5d2a8961d1a353632c462914ff0a32a950f6"),
    _github("google-research/vision_transformer", "c6de1e5378c9831a8477feb30994971bdc409e46"),
    _github("lucidrains/progen", "3054b2973ce27964ed1ce9c868648cb5889447bc"),
    _github("lucidrains/flash-attention-jax", "d73dcdd6cb4b4f8d786922e2ec6826036dae896a"),
    # Added in December 2026, each for its policies: a name -> policy table chosen by a config
    # string (tuna), a stateful policy factory (Hax-LLM), `getattr(jax.checkpoint_policies, ...)`
    # (simply, big_vision, openpi), nnx.remat and save_and_offload_only_these_names (maxdiffusion),
    # `policy=` as the keyword of calls that are not checkpoints (gemma's kauldron configs), a
    # policy chosen by an `if` between None and a ready-made one (llm-jax).
    _github("HeegyuKim/tuna", "2a6d45348c8516d24759697a77a1f2f4ef2841dc"),
    _github("sbl1996/Hax-LLM", "57ffc5d4c02448d9265642cdfa40ca48cce44dca"),
    _github("google-deepmind/simply", "e14c06121fd9c5967051f0956fb4a84ad84a551c"),
    _github("google-research/big_vision", "0127fb6b337ee2a27bf4e54dea79cff176527356"),
    _github("jenkspt/gpt-jax", "f22a46e81e72fd44c8115f8b63dcfa53eb0a6d14"),
    _github("AI-Hypercomputer/maxdiffusion", "7cfb8801d41d1728f0232cd7ee59e900a151fecf"),
    _github("google-deepmind/gemma", "7691fd4e7f26c9ec5db38110dddb3addfab4d767"),
    _github("Physical-Intelligence/openpi", "15a9616a00943ada6c20a0f158e3adb39df2ccac"),
    _github("evanatyourservice/llm-jax", "fe296a2f8d628889c59e8cb442bc3b1f84277607"),
    # Added for issue 48, each over 1 s cold: jedi was asked of a method of a parameter typed
    # with a class (`worker: Container`, `worker.exec(..., policy="once")`: JAX-Toolbox's triage
    # tool) and of `nnx.remat` where `nnx` came through a chain of star imports (macrogpt-jax).
    _github("NVIDIA/JAX-Toolbox", "bcbbfa578be90bf5c1dfef2c67cf074589391eee"),
    _github("Ueaj-Kerman/macrogpt-jax", "f7da7ef440fcf189e37992cb04632b9559d6bc4e"),
)
# Their 664 and 595 .py files are not small repositories: one file of each is measured
# (bench_real), as pre-commit checks a changed file. axlearn's repository, not its 2024 wheel
# (PROJECTS): its `common/utils.py` is imported by most of the tree.
AXLEARN_REPO = _github("apple/axlearn", "34aed43c1b6e581c4753d06d7cbeedd5010ef26b")


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

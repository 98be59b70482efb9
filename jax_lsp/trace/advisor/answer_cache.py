"""The advisor's answers kept between runs, in the project's cache folder
(``.jax-lsp-cache/advice/``, beside `check`'s): an unchanged site is answered without the agent.

An entry is one request's answer (the estimate of a site, one candidate's compile), as the agent
gave it, stored under a key of what decides it (`AnswerCache.key`: the request's parameters, the
step's limits, the target, the interpreter and the packages on its search path, JAX's and
libtpu's releases among them, the environment variables JAX and XLA read, and the trace agent's
own code) with the digests of the files the answer read (the site's, the example's and every
project module they imported, as the agent names them). An entry is used only while every one
of those files has the digest it had: an edit of a module the example imports answers from the
agent again. Only answers that ran to their end are kept (not a timeout, a crash, a
cancellation, a compile stopped by its limits), nor an answer whose files changed while it ran.

Entries are JSON files (a cache folder committed by someone else is never executed), written
atomically; the folder is bounded (`MAX_BYTES`): past it, the entries used longest ago go. Delete
the folder to clear it; `advise --no-cache` neither reads nor writes it.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jax_lsp import __version__
from jax_lsp.core.logger import logger
from jax_lsp.engine.files import CACHE_DIR_NAME
from jax_lsp.engine.result_cache import digest

log = logger(__name__)

FOLDER = "advice"  # in the project's cache folder
MAX_BYTES = 64 * 2**20  # the folder's size, at most (a large model's estimate is ~1 MB)
# The environment variables that change what JAX and XLA do in the agent's children.
ENVIRONMENT_PREFIXES = ("JAX_", "XLA_", "LIBTPU_", "TPU_")
AGENT = Path(__file__).resolve().parent.parent.parent / "trace_agent"


def cache_folder(root: Path) -> Path:
    """The advisor's folder in the project's cache folder."""
    return root / CACHE_DIR_NAME / FOLDER


class AnswerCache:
    """The answers of one project's cache folder (`cache_folder`)."""

    def __init__(self, folder: Path, max_bytes: int = MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    @staticmethod
    def key(*parts: Any) -> str:
        """The digest of ``parts`` (JSON values; paths as text)."""
        return digest(json.dumps([__version__, *parts], sort_keys=True, default=str).encode())

    def get(self, key: str) -> dict[str, Any] | None:
        """The answer stored under ``key``, if every file it read is unchanged; the entry counts
        as used (the bound drops the entries used longest ago)."""
        path = self.folder / f"{key}.json"
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            files, answer = entry["files"], entry["answer"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not isinstance(files, dict) or not isinstance(answer, dict):
            return None
        if any(file_digest(file) != expected for file, expected in files.items()):
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        return answer

    def stamp(self) -> int | None:
        """Now, as the file system's clock tells it (the time it gives a file written now, which
        lags the process's clock by up to a tick): taken as a request is sent, for `put`."""
        import tempfile  # here: a run answered from the cache writes nothing

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, suffix=".tmp") as handle:
                return os.fstat(handle.fileno()).st_mtime_ns
        except OSError:
            return None

    def put(self, key: str, files: Iterable[str], answer: dict[str, Any], started: int | None) -> bool:
        """Store ``answer`` under ``key`` with the digests of the ``files`` it read, unless one of
        them is gone or was written since ``started`` (`stamp`, when its request was sent): then
        it may describe neither text. Whether it was stored."""
        if started is None:
            return False
        digests = {}
        for file in sorted(set(files)):
            try:
                changed = os.stat(file).st_mtime_ns >= started
            except OSError:
                return False
            found = file_digest(file)
            if changed or found is None:
                return False
            digests[file] = found
        import tempfile  # here: a run answered from the cache writes nothing

        try:
            ignore = self.folder.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Automatically created by jax-lsp.\n*\n", encoding="utf-8")
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"files": digests, "answer": answer}, out)
            os.replace(temporary, self.folder / f"{key}.json")
        except OSError as exc:  # a read-only checkout still gets its advice
            log.warning("cannot write the advisor's cache %s: %s", self.folder, exc)
            return False
        self._bound()
        return True

    def _bound(self) -> None:
        """Drop the entries used longest ago until the folder holds at most ``max_bytes``."""
        entries = []
        for path in self.folder.glob("*.json"):
            try:
                status = path.stat()
            except OSError:
                continue
            entries.append((status.st_mtime_ns, status.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size


def file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return digest(handle.read())
    except OSError:
        return None


def environment(interpreter: str | None) -> dict[str, Any]:
    """What in the environment decides an answer: the interpreter, the packages on its search
    path (their ``*.dist-info`` names say each release: JAX's, libtpu's, Flax's...), the
    environment variables JAX and XLA read, and the trace agent's code."""
    python = os.path.realpath(interpreter or sys.executable)
    return {
        "python": python,
        "packages": _packages(_search_path(python)),
        "variables": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENVIRONMENT_PREFIXES)},
        "agent": _agent_digest(),
    }


def released(packages: Mapping[str, Any], name: str) -> str | None:
    """The release of package ``name`` in `environment`'s ``packages``, if installed."""
    prefix = f"{name}-"
    for folder in packages.values():
        for item in folder:
            if item.startswith(prefix) and item[len(prefix) : len(prefix) + 1].isdigit():
                return str(item[len(prefix) : -len(".dist-info")])
    return None


def _packages(folders: Iterable[str]) -> dict[str, list[str]]:
    """Per folder of the search path, the distributions installed there (``jax-0.10.2.dist-info``)."""
    found = {}
    for folder in folders:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith((".dist-info", ".egg-info", ".pth")))
        except OSError:
            continue
        found[folder] = names
    return found


@functools.lru_cache(maxsize=8)
def _search_path(python: str) -> tuple[str, ...]:
    """``sys.path`` of ``python`` (a short process of its own: no JAX is imported)."""
    if python == os.path.realpath(sys.executable):
        return tuple(sys.path)
    import subprocess  # here: only another interpreter than this one is asked (start-up time)

    try:
        out = subprocess.run(
            [python, "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return tuple(str(p) for p in json.loads(out))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.info("cannot read the search path of %s: %s", python, exc)
        return ()


@functools.lru_cache(maxsize=1)
def _agent_digest() -> str:
    texts = [(str(p.relative_to(AGENT)), p.read_bytes()) for p in sorted(AGENT.rglob("*.py"))]
    return digest(b"\0".join(name.encode() + b"\0" + text for name, text in texts))

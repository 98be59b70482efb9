"""Results of `jax-lsp check` kept between runs, like ruff's `.ruff_cache`.

An entry holds one file's own findings (its sites, and the policies they reach inside it), keyed
on the file's content and on the content of every module its analysis read; a second kind of
entry holds the findings of a module whose policies other files use, keyed on it and on those
users' entries. The whole store is keyed on jax-lsp's version, the Python that parses, the
settings and the list of files (a new or deleted module can change what an import resolves to).
Stored as JSON: a cache folder committed by someone else is never executed.

A third kind holds jedi's answers (a callee's qualified name, or that jedi could not name it), by
file and callee (jedi_names.callee_key), each with the digests of the files jedi read for it:
valid while those are unchanged.

As ruff does, a file whose modification time and size are those it had when it was last read
is not read again: its digest (or that it cannot hold a site) is taken from the store.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from jax_lsp import __version__
from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Edit, Finding, Fix, Position, Severity, Span
from jax_lsp.core.logger import logger
from jax_lsp.core.record import Record
from jax_lsp.core.text.python_versions import SkippedStatement

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:  # hashlib's own blake2b, without the OpenSSL bindings hashlib loads (a few ms at every start)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

log = logger(__name__)

KEEP_STORES = 4  # stores of other settings or file lists kept beside the current one


def digest(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


class FileResult(Record):
    """One file's own findings and what they depend on."""

    __slots__ = ("digest", "deps", "targets", "findings", "skipped")
    digest: str
    deps: dict[str, str]  # path -> digest of every other module the analysis read
    targets: tuple[str, ...]  # other modules holding policies this file's sites reach
    findings: tuple[Finding, ...]
    skipped: tuple[SkippedStatement, ...]  # its statements only a newer Python parses

    def __init__(
        self,
        digest: str,
        deps: dict[str, str],
        targets: tuple[str, ...],
        findings: tuple[Finding, ...],
        skipped: tuple[SkippedStatement, ...] = (),
    ) -> None:
        self._assign(digest, deps, targets, findings, skipped)


class ResultCache:
    def __init__(
        self, folder: Path, settings: Settings, files: Iterable[str], jax_version: str | None = None
    ):
        """`jax_version`: the JAX installed for the project, whose facts the findings speak for."""
        import json  # here: a check without the cache (--no-cache, or a file named alone) reads no JSON

        self.folder = folder
        context = json.dumps(
            [__version__, sys.version, repr(settings), sorted(files), jax_version],
            sort_keys=True,
            default=str,
        )
        self.path = folder / f"{digest(context.encode())}.json"
        self._files: dict[str, dict] = {}
        self._combined: dict[str, dict] = {}
        self._jedi: dict[str, dict[str, list]] = {}  # path -> "callee\0context" -> [answer, deps]
        # path -> [mtime_ns, size, digest, whether it could hold a site] when it was last read
        self._seen: dict[str, list] = {}
        self._dirty = False
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._files, self._combined = data["files"], data["combined"]
            self._seen = data.get("seen", {})
            self._jedi = data.get("jedi", {})
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.debug("ignoring an unreadable cache %s: %s", self.path, exc)

    # What a file held when it was last read -----------------------------------------
    def seen(self, path: str, stat: os.stat_result) -> tuple[str, bool] | None:
        """(digest, could hold a site) of the file as last read, if its time and size are unchanged."""
        try:
            mtime, size, file_digest, could_hold_site = self._seen[path]
        except (KeyError, TypeError, ValueError):
            return None
        if mtime != stat.st_mtime_ns or size != stat.st_size or not isinstance(file_digest, str):
            return None
        return file_digest, bool(could_hold_site)

    def remember(self, path: str, stat: os.stat_result, file_digest: str, could_hold_site: bool) -> None:
        entry = [stat.st_mtime_ns, stat.st_size, file_digest, could_hold_site]
        if self._seen.get(path) != entry:
            self._seen[path] = entry
            self._dirty = True

    # Per file ------------------------------------------------------------------
    def file_result(self, path: str, current_digest: str, digest_of) -> FileResult | None:
        """The stored result if the file and everything it read are unchanged.

        `digest_of(path)` gives a module's current digest (None when it is gone)."""
        entry = self._files.get(path)
        if entry is None or entry["digest"] != current_digest:
            return None
        if any(digest_of(dep) != dep_digest for dep, dep_digest in entry["deps"].items()):
            return None
        try:
            findings = tuple(_finding(f) for f in entry["findings"])
            skipped = tuple(
                SkippedStatement(line, (python[0], python[1]), why) for line, python, why in entry["skipped"]
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return FileResult(entry["digest"], entry["deps"], tuple(entry["targets"]), findings, skipped)

    def store_file(self, path: str, result: FileResult) -> None:
        self._files[path] = {
            "digest": result.digest,
            "deps": result.deps,
            "targets": list(result.targets),
            "findings": [_finding_json(f) for f in result.findings],
            "skipped": [[s.line, list(s.python), s.why] for s in result.skipped],
        }
        self._dirty = True

    # A module whose policies other files use ----------------------------------------
    @staticmethod
    def combined_key(own: FileResult, users: dict[str, FileResult]) -> str:
        import json

        parts = [
            own.digest,
            *own.deps.items(),
            *((u, r.digest, *r.deps.items()) for u, r in sorted(users.items())),
        ]
        return digest(json.dumps(parts, default=list).encode())

    def combined(self, path: str, key: str) -> tuple[Finding, ...] | None:
        entry = self._combined.get(path)
        if entry is None or entry["key"] != key:
            return None
        return tuple(_finding(f) for f in entry["findings"])

    def store_combined(self, path: str, key: str, findings: Iterable[Finding]) -> None:
        self._combined[path] = {"key": key, "findings": [_finding_json(f) for f in findings]}
        self._dirty = True

    # jedi's answers ---------------------------------------------------------------------
    def jedi_answers(
        self, digest_of
    ) -> dict[str, dict[tuple[str, str], tuple[str | None, frozenset[str] | None]]]:
        """The answers whose files jedi read are unchanged (`digest_of` as for `file_result`),
        by file and callee key; the others are dropped."""
        valid: dict[str, dict[tuple[str, str], tuple[str | None, frozenset[str] | None]]] = {}
        for path, answers in list(self._jedi.items()):
            for key, entry in list(answers.items()):
                try:
                    answer, deps = entry
                    callee, context = key.split("\0")
                    if answer is not None and not isinstance(answer, str):
                        raise TypeError(answer)
                    fresh = all(digest_of(dep) == dep_digest for dep, dep_digest in deps.items())
                except (TypeError, ValueError, AttributeError):
                    fresh = False
                if fresh:
                    valid.setdefault(path, {})[(callee, context)] = (answer, frozenset(deps))
                else:
                    del answers[key]
                    self._dirty = True
            if not answers:
                del self._jedi[path]
        return valid

    def store_jedi(
        self, path: str, key: tuple[str, str], answer: str | None, deps: dict[str, str | None]
    ) -> None:
        self._jedi.setdefault(path, {})["\0".join(key)] = [answer, deps]
        self._dirty = True

    def save(self) -> None:
        """Write the store atomically, and drop old stores (other settings, other file lists)."""
        if not self._dirty:
            return
        import json
        import tempfile  # here: a run that changes nothing writes nothing (start-up time)

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore = self.folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Automatically created by jax-lsp.\n*\n", encoding="utf-8")
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(
                    {
                        "files": self._files,
                        "combined": self._combined,
                        "seen": self._seen,
                        "jedi": self._jedi,
                    },
                    out,
                )
            os.replace(temporary, self.path)
            stores = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in stores[KEEP_STORES + 1 :]:
                old.unlink(missing_ok=True)
        except OSError as exc:  # a read-only checkout still gets its report
            log.warning("cannot write the cache %s: %s", self.folder, exc)


def _span_json(span: Span) -> list[int]:
    return [span.start.line, span.start.column, span.end.line, span.end.column]


def _span(data: list[int]) -> Span:
    return Span(Position(data[0], data[1]), Position(data[2], data[3]))


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "code": finding.code,
        "severity": finding.severity.value,
        "message": finding.message,
        "span": _span_json(finding.span),
        "fixes": [
            {
                "title": fix.title,
                "safe": fix.safe,
                "edits": [[e.path, _span_json(e.span), e.new_text] for e in fix.edits],
            }
            for fix in finding.fixes
        ],
        "related": [[path, _span_json(span)] for path, span in finding.related],
    }


def _finding(data: dict[str, Any]) -> Finding:
    return Finding(
        data["path"],
        data["code"],
        Severity(data["severity"]),
        data["message"],
        _span(data["span"]),
        tuple(
            Fix(
                fix["title"],
                fix["safe"],
                tuple(Edit(path, _span(span), text) for path, span, text in fix["edits"]),
            )
            for fix in data["fixes"]
        ),
        tuple((path, _span(span)) for path, span in data["related"]),
    )

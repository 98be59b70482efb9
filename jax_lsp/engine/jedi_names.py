"""What jedi says a callee is, when a file's imports cannot tell: the slow path, kept bounded.

- One `jedi.Project` per workspace and at most one `jedi.Script` per file text, reused for all
  the callees of that text (each Script parses the whole file and infers from scratch).
- A time budget per file text (`jedi-budget` seconds; 0 turns jedi off). Once it is spent, the
  file's remaining callees stay unknown, and an unknown callee is never reported. One inference
  already started runs to its end, so a pass may overrun the budget by that one.
- Answers are kept per callee, keyed by its dotted text, the file's import statements, the
  top-level statement around it and the module-level statements binding its first name: an edit
  elsewhere in the file reuses them. At most ANSWERS_KEPT per file, however often it changed.

What jedi read for an answer (the modules it followed, the files its search for callers opened,
as parso's FileIO reads or stats them) is kept with it: `check` keeps answers in its result cache,
valid while those files are unchanged (`preload`, `take_fresh`), and a file's result depends on
them as on the modules its analysis read. Where parso offers no such FileIO, answers are not kept.

Inline (the CLI, the API): jedi is asked while the sites are found (by `check`, only about the
calls that could give a finding: `analysis.could_give_findings`). In the background (the
server): finding sites only reads answers and notes the callees still to ask; `refine` asks jedi
about them later, on another thread, and the server checks the file again. Meanwhile a callee
whose context changed keeps its last answer (an edit must not make a finding blink).
"""

from __future__ import annotations

import _thread
import bisect
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from jax_lsp.core.logger import logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast

    import jedi

    from jax_lsp.core.binding.module import Module

log = logger(__name__)

# Files whose Script is kept: the CLI goes file by file, the server refines a few open buffers.
SCRIPTS_KEPT = 4
# Answers kept per file; past this, the older ones (for callee contexts edited since) go.
ANSWERS_KEPT = 512

Key = tuple[str, str]  # (the callee's dotted text, a digest of what its meaning depends on)
# An answer with the files jedi read for it (None: not known, so never kept between runs).
Answer = tuple[str | None, frozenset[str] | None]

_reads = _thread._local()  # (threading.local, without importing threading) .paths: the set the current thread's jedi reads are added to


def _record_jedi_reads() -> bool:
    """Make parso's FileIO (through which jedi reads and stats every source file) note the
    files it is asked about in `_reads.paths`; False when this parso has no such class."""
    try:
        from parso import file_io
    except ImportError:
        return False
    io = getattr(file_io, "FileIO", None)
    if io is None or not all(hasattr(io, name) for name in ("read", "get_last_modified")):
        return False
    if getattr(io, "_jax_lsp_noted", False):
        return True
    read, modified = io.read, io.get_last_modified

    def noted(method):
        def wrapper(self):
            paths = getattr(_reads, "paths", None)
            if paths is not None:
                paths.add(os.fspath(self.path))
            return method(self)

        return wrapper

    io.read, io.get_last_modified = noted(read), noted(modified)
    io._jax_lsp_noted = True
    return True


class FileStats:
    __slots__ = ("asked", "unnamed", "skipped", "seconds", "not_needed", "cached")

    def __init__(self) -> None:
        self.not_needed = 0  # callees jedi was not asked about: nothing in reach leads to JAX
        self.cached = 0  # callees answered from the result cache (an earlier run's jedi)
        self.asked = 0  # callees jedi was asked about
        self.unnamed = 0  # ... that it could not name
        self.skipped = 0  # callees left unknown because the budget was spent
        self.seconds = 0.0


def callee_key(module: Module, node: ast.expr) -> Key:
    """What jedi's answer for the callee `node` of `module` depends on, as far as we follow it."""
    import ast  # here, as hashlib and scopes: only when jedi is asked (start-up time of `jax-lsp check`)
    import hashlib

    from jax_lsp.core.binding.scopes import dotted

    source, body = module.source, module.source.tree.body
    starts = [statement.lineno for statement in body]

    def statement_text(line: int) -> str:
        index = bisect.bisect_right(starts, line) - 1
        if index < 0:
            return ""
        statement = body[index]
        return "".join(source.lines[statement.lineno - 1 : statement.end_lineno])

    parts = dotted(node) or []
    digest = hashlib.blake2b(digest_size=16)
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            digest.update(statement_text(statement.lineno).encode("utf-8", "surrogatepass"))
    for binding in module.scope.bindings.get(parts[0], []) if parts else []:
        digest.update(statement_text(binding.node.lineno).encode("utf-8", "surrogatepass"))
    digest.update(statement_text(node.lineno).encode("utf-8", "surrogatepass"))
    return ".".join(parts), digest.hexdigest()


class JediNames:
    def __init__(self, root: Path | None, interpreter: str | None, budget: float, background: bool = False):
        self.budget = budget
        self.background = background
        self._root = root
        self._interpreter = interpreter
        self._project: jedi.Project | None = None
        self._lock = _thread.allocate_lock()  # guards the dicts below; never held while jedi runs
        self._scripts: OrderedDict[str, tuple[str, jedi.Script]] = OrderedDict()  # path -> (text, Script)
        self._answers: dict[str, dict[Key, str | None]] = {}
        self._read_for: dict[str, dict[Key, frozenset[str] | None]] = {}  # what jedi read per answer
        self._stored: dict[str, dict[Key, Answer]] = {}  # from the result cache, still valid
        self._fresh: dict[str, dict[Key, Answer]] = {}  # asked in this process, for the cache
        self._script_reads: dict[str, set[str]] = {}  # path -> what jedi read for its Script
        self._recorded: bool | None = None  # whether jedi's reads are noted (known once jedi runs)
        # Told of the files each answer used depends on (Workspace.note_reads).
        self.depends: Callable[[Iterable[str]], None] = lambda paths: None
        self._latest: dict[str, dict[str, str | None]] = {}  # path -> callee text -> last answer
        self._waiting: dict[str, tuple[int, dict[Key, tuple[int, int]]]] = {}  # path -> (text hash, callees)
        self._spent: dict[str, tuple[int, float]] = {}  # path -> (text hash, seconds spent on it)
        self.stats: dict[str, FileStats] = {}

    def qualname(self, module: Module, node: ast.expr) -> str | None:
        """What jedi says the callee `node` of `module` is: an earlier answer, or (inline) asked
        now within the file's budget, or (background) noted for `refine`."""
        if self.budget <= 0:
            return None
        path, text = module.path, module.source.text
        key = callee_key(module, node)
        end = module.source.span(node).end
        position = (end.line + 1, max(end.column - 1, 0))  # jedi: 1-based lines, code points
        known = self._known(path, key)
        if known is not None:
            self._depend(path, key)
            return known[0]
        with self._lock:
            if self.background:
                token = hash(text)
                if self._waiting.get(path, (None,))[0] != token:
                    self._waiting[path] = (token, {})
                self._waiting[path][1][key] = position
                return self._latest.get(path, {}).get(key[0])
        answer = self._ask(path, text, {key: position})[key]
        self._depend(path, key)
        return answer

    def _known(self, path: str, key: Key) -> tuple[str | None] | None:
        """(answer,) when jedi answered the callee before, in this process or a kept run."""
        with self._lock:
            answers = self._answers.setdefault(path, {})
            if key in answers:
                return (answers[key],)
            stored = self._stored.get(path, {}).get(key)
            if stored is None:
                return None
            answers[key] = stored[0]
            self._read_for.setdefault(path, {})[key] = stored[1]
            self.stats.setdefault(path, FileStats()).cached += 1
            return (stored[0],)

    def _depend(self, path: str, key: Key) -> None:
        """Tell `depends` what the answer used depends on (outside the lock: it takes the
        workspace's)."""
        with self._lock:
            read = self._read_for.get(path, {}).get(key)
        if read:
            self.depends(read)

    # Kept between runs (engine.batch, with the result cache) -------------------------
    def preload(self, answers: dict[str, dict[Key, Answer]]) -> None:
        """Answers an earlier run kept, each still valid (the files jedi read are unchanged)."""
        with self._lock:
            for path, kept in answers.items():
                self._stored.setdefault(path, {}).update(kept)

    def add_fresh(self, answers: dict[str, dict[Key, Answer]]) -> None:
        """Answers another process's jedi gave, to be kept as this one's (`take_fresh`)."""
        with self._lock:
            for path, kept in answers.items():
                self._fresh.setdefault(path, {}).update(kept)

    def take_fresh(self, path: str | None = None) -> dict[str, dict[Key, Answer]]:
        """The answers jedi gave in this process since the last call (of `path`, or all) that
        can be kept: those whose reads were noted."""
        with self._lock:
            if path is not None:
                found = self._fresh.pop(path, None)
                return {path: found} if found else {}
            fresh, self._fresh = self._fresh, {}
            return fresh

    def waiting(self, path: Path | str, text: str) -> bool:
        """Whether finding the sites of `path` (as `text`) left callees for `refine`."""
        found = self._waiting.get(os.path.abspath(path))
        return found is not None and found[0] == hash(text) and bool(found[1])

    def refine(self, path: Path | str, text: str) -> bool:
        """Ask jedi about the callees left waiting for `path` as `text`; True if there were any."""
        path = os.path.abspath(path)
        with self._lock:
            found = self._waiting.get(path)
            if found is None or found[0] != hash(text):
                return False
            del self._waiting[path]
            answered = self._answers.get(path, {})
            requests = {key: position for key, position in found[1].items() if key not in answered}
        if requests:
            self._ask(path, text, requests)
        return True

    def file_changed(self, path: str) -> None:
        """A file changed on disk: what jedi said about other files may have changed with it
        (a star import of it). Their answers are asked again; the last ones stand meanwhile."""
        with self._lock:
            for other in list(self._answers):
                if other != path:
                    del self._answers[other]
            self._stored.clear()

    def not_needed(self, path: str) -> None:
        """A callee of `path` that jedi was not asked about: nothing in reach leads to JAX."""
        with self._lock:
            self.stats.setdefault(path, FileStats()).not_needed += 1

    def summary(self, display: Callable[[str], str] = str) -> list[str]:
        """For `check --verbose`: each file that spent its budget, then the totals."""
        if self.budget <= 0:
            return ["jedi: off (jedi-budget = 0)"]
        lines = [
            f"jedi: {display(path)}: budget of {self.budget:g} s spent, {stats.skipped} callee(s) left unknown"
            for path, stats in sorted(self.stats.items())
            if stats.skipped
        ]
        every = self.stats.values()
        lines.append(
            f"jedi: asked about {sum(s.asked for s in every)} callee(s) in "
            f"{sum(1 for s in every if s.asked or s.skipped)} file(s) "
            f"in {sum(s.seconds for s in every):.2f} s; {sum(s.unnamed for s in every)} it could not name, "
            f"{sum(s.skipped for s in every)} left unknown past the budget; "
            f"{sum(s.cached for s in every)} answered from the result cache, "
            f"{sum(s.not_needed for s in every)} not asked (nothing in reach leads to JAX)"
        )
        return lines

    # Asking jedi ---------------------------------------------------------------------------
    def _ask(self, path: str, text: str, requests: dict[Key, tuple[int, int]]) -> dict[Key, str | None]:
        token = hash(text)
        spent = self._spent[path][1] if self._spent.get(path, (None,))[0] == token else 0.0
        stats = self.stats.setdefault(path, FileStats())
        project = self._jedi_project(path)  # once per workspace, not charged to this file
        if self._recorded is None:  # here: parso is imported only when jedi is asked (start-up time)
            self._recorded = _record_jedi_reads()
        answers: dict[Key, str | None] = {}
        past_budget = set()  # unknown for want of time, not jedi's answer: never kept
        for key, (line, column) in requests.items():
            if spent >= self.budget:
                stats.skipped += 1
                answers[key] = None
                past_budget.add(key)
                continue
            started = time.perf_counter()
            answers[key] = self._infer(project, path, text, line, column)
            elapsed = time.perf_counter() - started
            spent += elapsed
            stats.asked += 1
            stats.unnamed += answers[key] is None
            stats.seconds += elapsed
        with self._lock:
            self._spent[path] = (token, spent)
            kept, reads = self._answers.setdefault(path, {}), self._read_for.setdefault(path, {})
            if len(kept) + len(answers) > ANSWERS_KEPT:
                kept.clear()
                reads.clear()
            kept.update(answers)
            latest = self._latest.setdefault(path, {})
            if len(latest) + len(answers) > ANSWERS_KEPT:
                latest.clear()
            for (callee, _), answer in answers.items():
                latest[callee] = answer
            # Each answer depends on everything jedi read for this text's Script so far: an
            # inference reuses what an earlier one loaded without reading it again.
            read = frozenset(self._script_reads.get(path, set()) - {path}) if self._recorded else None
            for key_asked, answer in answers.items():
                if key_asked in past_budget:
                    continue
                reads[key_asked] = read
                if read is not None and not self.background:  # the server keeps no result cache
                    self._fresh.setdefault(path, {})[key_asked] = (answer, read)
        return answers

    def _infer(
        self, project: jedi.Project | None, path: str, text: str, line: int, column: int
    ) -> str | None:
        _reads.paths = self._script_reads.setdefault(path, set())
        try:
            names = self._script(project, path, text).infer(line, column)
        except Exception:  # jedi is best effort: a failure means "unknown", never an error
            log.debug("jedi could not infer %s:%d:%d", path, line, column, exc_info=True)
            return None
        finally:
            _reads.paths = None
        return next((name.full_name for name in names if name.full_name), None)

    def _jedi_project(self, path: str) -> jedi.Project | None:
        if self._project is None:
            try:
                import jedi

                self._project = jedi.Project(
                    path=self._root or Path(path).parent, environment_path=self._interpreter
                )
            except Exception:  # then each Script fails too, and every callee stays unknown
                log.debug("no jedi project for %s", path, exc_info=True)
        return self._project

    def _script(self, project: jedi.Project | None, path: str, text: str) -> jedi.Script:
        import jedi

        kept = self._scripts.get(path)
        if kept is not None and kept[0] == text:
            self._scripts.move_to_end(path)
            return kept[1]
        self._script_reads[path] = _reads.paths = set()  # a new Script reads everything again
        script = jedi.Script(code=text, path=path, project=project)
        self._scripts[path] = (text, script)
        self._scripts.move_to_end(path)
        while len(self._scripts) > SCRIPTS_KEPT:
            self._script_reads.pop(self._scripts.popitem(last=False)[0], None)
        return script

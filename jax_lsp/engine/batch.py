"""Checking a whole tree at once (`jax-lsp check`): a byte search skips the files that cannot
hold a site, a result cache skips the unchanged ones, and the rest are checked here and, on a
large tree, on processes forked once a file is checked. Cross-module findings are kept: a
module whose policies other files use is checked last, with those uses, in this process.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from jax_lsp.core.findings import Finding
from jax_lsp.core.notebooks.files import file_could_hold_site
from jax_lsp.engine.files import discover_names
from jax_lsp.engine.result_cache import FileResult, ResultCache, digest

# The analysis is imported where it is used: a re-run whose results all come from the cache
# runs none of it, and start-up time is most of such a run.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.policies.resolve import ResolvedPolicy
    from jax_lsp.core.policies.sites import Site
    from jax_lsp.engine.forked import InChild, Turns
    from jax_lsp.engine.workspace import Workspace

# Parsed trees hold no reference cycles, so reference counting frees each file's tree once it
# is checked. The cyclic GC would still scan the heap every time a tree outlives a young
# generation, which on a large tree costs as much as the parsing; it runs every N files instead.
GC_EVERY_FILES = 500
# Below this many files to parse, or bytes to read and filter, starting processes costs more
# than it saves: each process imports the analysis (measured on the corpus: worth it for the
# projects of 8 MB and more, not for those of 6 MB and less).
PARALLEL_MIN_FILES = 24
PARALLEL_MIN_READ_BYTES = 8_000_000
WORKER_CHUNK = 8  # files sent to a process at once


class _Digests:
    """Each module's content digest (its open buffer's, else the file's), read once per run, or
    not at all when the result cache saw the file with the same time and size."""

    def __init__(self, workspace: Workspace, cache: ResultCache | None = None) -> None:
        self._sources = workspace
        self._cache = cache
        # (digest, could hold a site) by path, as the cache, a read here or another process's
        # found it; the digest None when none was needed, the whole None when it cannot be read.
        self._found: dict[str, tuple[str | None, bool] | None] = {}
        self._stats: dict[str, os.stat_result | None] = {}
        self._buffers = workspace.buffers() if cache is not None else {}

    @property
    def for_cache(self) -> bool:
        return self._cache is not None

    def of_file(self, path: str, digest_always: bool = False) -> tuple[str | None, bool] | None:
        """(digest, could hold a site) of a file; None when it cannot be read. Without a cache,
        the digest of a file that cannot hold a site is taken only if `digest_always`."""
        # A file vouched for already this run (_from_cache asks each one first) is not stated
        # again: the cache said nothing of it, or its answer is known.
        seen = self.vouched(path) if path not in self._stats else None
        if seen is not None:
            return seen
        if path in self._found:  # found already: read as another file's dependency, or elsewhere
            found = self._found[path]
            if found is None or found[0] is not None or not digest_always:
                return found
        data = self._sources.read(path)
        if data is None:
            self._found[path] = None
            return None
        could_hold = file_could_hold_site(path, data)
        value = digest(data) if could_hold or digest_always or self._cache is not None else None
        self.learn(path, value, could_hold)
        return value, could_hold

    def vouched(self, path: str) -> tuple[str, bool] | None:
        """(digest, could hold a site) as the cache saw the file, if its time and size are unchanged."""
        stat = self._stats[path] = self._stat(path)  # before the file is read: a change after it shows
        seen = self._cache.seen(path, stat) if stat is not None else None  # type: ignore[union-attr]
        if seen is not None:
            self._found[path] = seen
        return seen

    def found(self, path: str) -> tuple[str | None, bool] | None:
        """(digest, could hold a site) of a file read this run; None for one not read (or that
        could not be)."""
        return self._found.get(path)

    def learn(self, path: str, value: str | None, could_hold: bool) -> None:
        """What reading the file (here or on another process) found, after `vouched` said nothing."""
        self._found[path] = (value, could_hold)
        stat = self._stats.get(path)
        if stat is not None:
            self._cache.remember(path, stat, value, could_hold)  # type: ignore[union-attr, arg-type]

    def __call__(self, path: str) -> str | None:
        found = self._found.get(path) if path in self._found else self.of_file(path, digest_always=True)
        if found is not None and found[0] is None:
            found = self.of_file(path, digest_always=True)
        return None if found is None else found[0]

    def _stat(self, path: str) -> os.stat_result | None:
        """The file's status, when the cache may vouch for its content (not an open buffer)."""
        if self._cache is None or path in self._buffers:
            return None
        try:
            return os.stat(path)
        except OSError:
            return None


# Entry points ---------------------------------------------------------------------------------
# Up to this many files named, the files that could use their policies are found by a text
# search; the search grows with the files named, and past it the whole project is cheaper.
FEW_FILES = 16


def check_paths(
    workspace: Workspace, paths: Iterable[Path | str], cache_dir: Path | None = None, jobs: int = 1
) -> dict[str, list[Finding]]:
    """Findings per file for the given files and folders (folders are walked), reusing the
    results kept in `cache_dir` and checking on `jobs` processes."""
    return check_tree(
        workspace, discover_names([Path(p) for p in paths], workspace.settings.exclude), cache_dir, jobs
    )


def check_part(
    workspace: Workspace, files: Sequence[Path | str], cache_dir: Path | None = None, jobs: int = 1
) -> dict[str, list[Finding]]:
    """`check_tree` for some files of the project, and only theirs reported: a site in
    another file may use their policies. A few files (pre-commit names the changed ones) are
    checked one by one, once the files a text search finds could use them are indexed;
    more (a folder below the root) with the whole project, as a check of the root would,
    and its cache."""
    named = {os.path.abspath(p) for p in files}
    if len(named) <= FEW_FILES:
        with workspace.unchanging():
            workspace.index_users(files, jobs)
            found = {key: workspace.check_file(key) for key in named}
    else:
        found = check_tree(workspace, workspace.python_files(), cache_dir, jobs)
    return {key: findings for key, findings in found.items() if key in named and findings}


def check_own(
    workspace: Workspace, key: str, own_digest: str, digests: _Digests, for_cache: bool = True
) -> FileResult:
    """One file's findings from its own sites, and (`for_cache`) the modules its analysis read
    with their digests, which only the cache needs: the names index reads every file. The file
    is parsed as far as its sites need (a `def` or `class` holding no trigger waits until a site
    leads to it): a syntax error that no site reaches is left to the tools that read it. A file
    that its text shows to hold no site (`engine.defined_callees`) is not parsed at all."""
    from jax_lsp.engine.analysis import check_module, reached_elsewhere
    from jax_lsp.engine.defined_callees import files_showing_no_site

    showing = files_showing_no_site(workspace, key)
    if showing is not None:
        # A file gone since it was read has no digest: "" matches none, and the file is checked again.
        return FileResult(
            own_digest, {path: digests(path) or "" for path in showing} if for_cache else {}, (), ()
        )
    with workspace.recording_loads() as loaded:
        module = workspace.load(key, only_if_site=True)
        if module is None:
            return FileResult(own_digest, {}, (), ())
        sites = workspace.sites(module)
        findings = check_module(
            module, sites, (), workspace.settings, workspace.internal_errors, workspace.project()
        )
        targets = {
            t.module.path
            for _, reached in reached_elsewhere(sites, workspace.internal_errors)
            for t in reached
        }
    deps = {path: digests(path) for path in sorted(loaded) if path != key} if for_cache else {}
    skipped = tuple(module.source.skipped)
    return FileResult(own_digest, deps, tuple(sorted(targets)), tuple(findings), skipped)  # type: ignore[arg-type]


def check_tree(
    workspace: Workspace, files: Iterable[Path | str], cache_dir: Path | None = None, jobs: int = 1
) -> dict[str, list[Finding]]:
    """Findings per file for files already discovered (the CLI discovers them to report a
    missing path), reusing the results kept in `cache_dir` and checking on `jobs` processes."""
    with workspace.unchanging():
        return _check_tree(workspace, files, cache_dir, jobs)


def _check_tree(
    workspace: Workspace, files: Iterable[Path | str], cache_dir: Path | None, jobs: int
) -> dict[str, list[Finding]]:
    keys = [os.path.abspath(os.fspath(p)) for p in files]
    cache = (
        ResultCache(cache_dir, workspace.settings, keys, workspace.jax_version())
        if cache_dir is not None
        else None
    )
    digests = _Digests(workspace, cache)
    if cache is not None:
        workspace.jedi.preload(cache.jedi_answers(digests))
    own, todo = _from_cache(keys, cache, digests)
    with contextlib.ExitStack() as ahead:  # the installed packages' tags, read beside
        if jobs > 1 and _bytes_at_least(PARALLEL_MIN_READ_BYTES, [key for key, d in todo if d is None]):
            checked = _check_on_processes(workspace, todo, own, digests, jobs)  # they read the files too
        else:
            checks = _read_here(todo, cache, own, digests)
            if jobs > 1 and len(checks) >= PARALLEL_MIN_FILES:  # they read the tags each
                checked = _check_on_processes(workspace, checks, own, digests, jobs)
            else:
                if jobs > 1:
                    keys_checked = [key for key, _ in checks]
                    ahead.enter_context(
                        _package_tags_ahead(workspace, keys_checked, [key for key, _ in todo])
                    )
                checked = _check_here(workspace, checks, own, digests)
        if cache is not None:
            for key in checked:
                cache.store_file(key, own[key])
        for key, result in own.items():  # parsed in another process, or not at all
            workspace.pythons.record(key, result.skipped)

        results = {key: list(result.findings) for key, result in own.items()}
        wanted = set(keys)
        for target, users in _users_by_target(own).items():
            if target in wanted:
                results[target] = _check_with_users(workspace, target, users, own, cache, digests)
    if cache is not None:
        _store_jedi_answers(workspace, cache, digests)
        cache.save()
    return {key: results[key] for key in keys if results.get(key)}


def _store_jedi_answers(workspace: Workspace, cache: ResultCache, digests: _Digests) -> None:
    """Keep what jedi answered in this run (here and on other processes), with the digests
    of the files it read for each answer."""
    for path, answers in workspace.jedi.take_fresh().items():
        for key, (answer, read) in answers.items():
            if read is not None:
                cache.store_jedi(path, key, answer, {dep: digests(dep) for dep in sorted(read)})


# A file to check, with its digest; None when it is still to be read (and filtered).
_ToDo = list[tuple[str, str | None]]


def _from_cache(
    keys: list[str], cache: ResultCache | None, digests: _Digests
) -> tuple[dict[str, FileResult], _ToDo]:
    """The results the cache holds for files it vouches for, and the files left to check."""
    own: dict[str, FileResult] = {}
    todo: _ToDo = []
    for key in keys:
        seen = digests.vouched(key)
        if seen is None:
            todo.append((key, None))
        elif seen[1]:
            stored = cache.file_result(key, seen[0], digests)  # type: ignore[union-attr]
            if stored is not None:
                own[key] = stored
            else:
                todo.append((key, seen[0]))
    return own, todo


def _read_here(
    todo: _ToDo, cache: ResultCache | None, own: dict[str, FileResult], digests: _Digests
) -> list[tuple[str, str]]:
    """The files left to check once those not yet read are read: those that could hold a site
    and whose new content the cache holds no result for (a file touched, not changed)."""
    checks = []
    for key, key_digest in todo:
        if key_digest is None:
            found = digests.of_file(key)
            if found is None or not found[1]:
                continue
            key_digest = found[0]
            assert key_digest is not None  # a file that could hold a site always gets its digest
            stored = cache.file_result(key, key_digest, digests) if cache is not None else None
            if stored is not None:
                own[key] = stored
                continue
        checks.append((key, key_digest))
    return checks


class _Here:
    """The files checked in this process, their results put in `own`; each module is released
    once checked unless it is needed again."""

    def __init__(self, workspace: Workspace, own: dict[str, FileResult], digests: _Digests) -> None:
        self._workspace, self._own, self._digests = workspace, own, digests
        self.checked: list[str] = []
        self._targeted: set[str] = set()

    def check(self, key: str, key_digest: str | None) -> bool:
        """Check one file (read and filtered first if `key_digest` is None: not read yet);
        whether it could hold a site."""
        workspace = self._workspace
        if key_digest is None:
            found = self._digests.of_file(key)
            if found is None or not found[1]:
                return False
            key_digest = found[0]
            assert key_digest is not None  # a file that could hold a site always gets its digest
        result = self._own[key] = check_own(
            workspace, key, key_digest, self._digests, self._digests.for_cache
        )
        self.checked.append(key)
        if len(self.checked) % GC_EVERY_FILES == 0:
            gc.collect()
        self._targeted.update(result.targets)
        # Kept: a module whose sites reach others, or whose policies others reach, is needed
        # again when the modules it shares policies with are checked together; and one writing
        # tags, read again when a later check asks for the tags.
        if not result.targets and key not in self._targeted and not _writes_tags(workspace, key):
            workspace.release(key)
        return True


def _check_here(
    workspace: Workspace,
    todo: Sequence[tuple[str, str | None]],
    own: dict[str, FileResult],
    digests: _Digests,
) -> list[str]:
    """Checks each file in this process, adding its result to `own`; the files checked (a file
    not read yet, its digest None, is read and filtered first)."""
    here = _Here(workspace, own, digests)
    with _collect_garbage_rarely():
        for key, key_digest in todo:
            here.check(key, key_digest)
    return here.checked


def _package_tags_ahead(
    workspace: Workspace, checks: list[str], read: list[str]
) -> contextlib.AbstractContextManager[None]:
    """JAX112 reads the installed packages' tags when a file names a checkpoint name that the
    workspace's own tags leave untagged, and JAX107's fix of a factory of names left uncalled
    lists every tag in reach; both wait for them. In a check allowed a second process in which
    some file to check seems to need them (`names_untagged_in`, the files `read` searched for
    tags only then; `factory_uncalled_in`), they are read beside from its first file on, until
    the modules that others' policies reach are checked with those uses. A process left unasked costs
    the check time (its start, and the parent's pages it copies), not findings. The names are
    looked for in the files to check alone: a call of a factory of names is a trigger
    (core.text.triggers), and a search of every file for them cost a quarter of the byte filter's."""
    if not checks:
        return contextlib.nullcontext()
    # Here: a re-run may parse nothing.
    from jax_lsp.core.tags.tags import factory_uncalled_in, names_untagged_in

    settings = workspace.settings
    writing = [workspace.read(key) or b"" for key in checks]
    untagged = settings.enabled("JAX112") and names_untagged_in(
        writing, (workspace.read(key) or b"" for key in read)
    )
    if not untagged and not (settings.enabled("JAX107") and factory_uncalled_in(writing)):
        return contextlib.nullcontext()
    return workspace.checkpoint_names().packages_ahead()  # imports the index (and difflib)


def _users_by_target(own: dict[str, FileResult]) -> dict[str, dict[str, FileResult]]:
    users: dict[str, dict[str, FileResult]] = {}
    for key, result in own.items():
        for target in result.targets:
            users.setdefault(target, {})[key] = result
    return users


def _check_with_users(
    workspace: Workspace,
    target: str,
    users: dict[str, FileResult],
    own: dict[str, FileResult],
    cache: ResultCache | None,
    digests: _Digests,
) -> list[Finding]:
    """The findings of a module whose policies `users` reach, with those uses."""
    from jax_lsp.engine.analysis import check_module

    # A module that could not hold a site was not checked alone: its findings are all here.
    mine = own.get(target) or FileResult(digests(target) or "", {}, (), ())
    key = ResultCache.combined_key(mine, users) if cache is not None else ""
    stored = cache.combined(target, key) if cache is not None else None
    if stored is not None:
        return list(stored)
    module = workspace.load(target)
    if module is None:
        return []
    foreign = []
    for user in users:
        reached = _reached_in(workspace, user, target)
        if any(
            t.module is not module for _, ts in reached for t in ts
        ):  # resolved before `target` was released
            workspace.release(user)
            reached = _reached_in(workspace, user, target)
        foreign += reached
    findings = check_module(
        module,
        workspace.sites(module),
        foreign,
        workspace.settings,
        workspace.internal_errors,
        workspace.project(),
    )
    if cache is not None:
        cache.store_combined(target, key, findings)
    return findings


def _reached_in(workspace: Workspace, user: str, target: str) -> list[tuple[Site, list[ResolvedPolicy]]]:
    """The sites of `user`, each with what it reaches in `target` (policy functions, members of
    its policy tables)."""
    from jax_lsp.engine.analysis import reached_elsewhere

    user_module = workspace.load(user, only_if_site=True)  # as its own check loaded it: it has sites
    if user_module is None:
        return []
    found = []
    for site, reached in reached_elsewhere(workspace.sites(user_module), workspace.internal_errors):
        here = [t for t in reached if t.module.path == target]
        if here:
            found.append((site, here))
    return found


# Processes -------------------------------------------------------------------------------
def _check_on_processes(
    workspace: Workspace,
    todo: Sequence[tuple[str, str | None]],
    own: dict[str, FileResult],
    digests: _Digests,
    jobs: int,
) -> list[str]:
    """`_check_here`, with `jobs - 1` forked processes sharing the work (`_check_beside`): the
    files go in chunks, the largest first, to whichever process asks first. They are forked
    once this one has checked a file: what that check made for the whole project (the installed
    JAX's facts, the new-remat switch, the modules its sites led to) is theirs then, not made
    again by each, and neither is the analysis imported again. The chunks of a process that
    failed are checked here."""
    from jax_lsp.engine.forked import MAX_TURNS, InChild, Turns  # here: most checks fork nothing

    ordered = sorted(todo, key=lambda item: -_size(item[0]))  # no process is left with a big one at the end
    size = max(WORKER_CHUNK, -(-len(ordered) // MAX_TURNS))
    chunks = [ordered[at : at + size] for at in range(0, len(ordered), size)]
    here = _Here(workspace, own, digests)

    def beside() -> list[bytes]:
        return [_check_beside(workspace, chunks, turns, digests)]

    with Turns(len(chunks)) as turns, contextlib.ExitStack() as forked, _collect_garbage_rarely():
        helpers: list[InChild[bytes]] = []
        done = set()
        for index in turns:
            for key, key_digest in chunks[index]:
                if here.check(key, key_digest) and not helpers:
                    helpers = [forked.enter_context(InChild(beside)) for _ in range(jobs - 1)]
            done.add(index)
        for helper in helpers:
            taken, checked = _take_checked(workspace, helper, own, digests)
            done.update(taken)
            here.checked += checked
        for index in sorted(set(range(len(chunks))) - done):
            for key, key_digest in chunks[index]:
                here.check(key, key_digest)
    return here.checked


def _check_beside(
    workspace: Workspace, chunks: list[list[tuple[str, str | None]]], turns: Turns, digests: _Digests
) -> bytes:
    """In a forked process: the chunks of files it takes its turn at, read and checked as its
    parent checks its own (`_Here`, with the parent's digests as they were at the fork), as
    pickled (chunk numbers, results by file, (digest, could hold a site) of each file it read,
    its internal errors, jedi's counts and fresh answers)."""
    import pickle

    known_errors = len(workspace.internal_errors)  # the parent's, as at the fork: they stay there
    own: dict[str, FileResult] = {}
    here = _Here(workspace, own, digests)
    taken = []
    for index in turns:
        taken.append(index)
        for key, key_digest in chunks[index]:
            here.check(key, key_digest)
    unread = [key for index in taken for key, key_digest in chunks[index] if key_digest is None]
    return pickle.dumps(
        (
            taken,
            own,
            {key: digests.found(key) for key in unread},
            workspace.internal_errors[known_errors:],
            {key: workspace.jedi.stats[key] for key in own if key in workspace.jedi.stats},
            workspace.jedi.take_fresh(),
        )
    )


def _take_checked(
    workspace: Workspace, helper: InChild[bytes], own: dict[str, FileResult], digests: _Digests
) -> tuple[list[int], list[str]]:
    """What a forked process checked (`_check_beside`), added to `own`, the digests and the
    workspace; the numbers of the chunks it took (none if it failed), and the files it checked."""
    import pickle

    (answer,) = helper.items()  # made here, of no chunk, if the process failed
    taken, results, read, errors, jedi_stats, jedi_answers = pickle.loads(answer)
    for key, found in read.items():
        if found is not None:
            digests.learn(key, *found)
    own.update(results)
    workspace.internal_errors.extend(errors)
    workspace.jedi.stats.update(jedi_stats)  # for `check --verbose`
    workspace.jedi.add_fresh(jedi_answers)  # for the result cache
    return taken, list(results)


def _writes_tags(workspace: Workspace, key: str) -> bool:
    """Whether the file may tag a value (`checkpoint_name`): such a module is kept once checked,
    as the tags index reads it again when a later check asks for the tags (parsing it again
    cost as much as its own check's parse: JAX's `api_test.py`)."""
    from jax_lsp.core.tags.tags import TAG_FUNCTION

    module = workspace.loaded(key)  # the module its check loaded, if it parsed one
    return module is not None and TAG_FUNCTION in module.source.text


def _bytes_at_least(limit: int, paths: list[str]) -> bool:
    """Whether the files at `paths` hold `limit` bytes or more."""
    total = 0
    for path in paths:
        total += _size(path)
        if total >= limit:
            return True
    return False


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@contextlib.contextmanager
def _collect_garbage_rarely() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

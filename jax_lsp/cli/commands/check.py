"""`jax-lsp check`: report (and with --fix, repair) broken remat policies in files on disk."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

from jax_lsp.cli.errors import ERROR_EXIT, fail, say_error
from jax_lsp.cli.output import (
    FORMATS,
    MACHINE_FORMATS,
    Report,
    display_path,
    fixed_line,
    notebook_reader,
    render,
)
from jax_lsp.cli.trace_arguments import add_trace_arguments
from jax_lsp.core import Finding
from jax_lsp.core.config import (
    Settings,
    SettingsError,
    find_pyproject,
    load_pyproject,
    settings_from_mapping,
)
from jax_lsp.core.logger import logger
from jax_lsp.engine import Workspace, files
from jax_lsp.engine.batch import check_part, check_tree
from jax_lsp.engine.files import CACHE_DIR_NAME
from jax_lsp.engine.project import project_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse  # the command line is read without it where it can be (cli.quick_args)

log = logger(__name__)


def add_parser(subparsers: argparse._SubParsersAction, help_line: str) -> None:
    parser = subparsers.add_parser(
        "check",
        help=help_line,
        description="Check Python files for broken JAX remat policies. "
        "Exit 0 when clean, 1 when findings remain, 2 on usage or internal errors.",
    )
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--output-format", choices=FORMATS, default="full")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes")
    parser.add_argument("--unsafe-fixes", action="store_true", help="with --fix, apply unsafe fixes too")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to report")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes to skip")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PYPROJECT",
        help="settings file (default: the nearest pyproject.toml with [tool.jax-lsp])",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="FOLDER",
        help=f"where results are kept between runs (default: {CACHE_DIR_NAME} in the project root)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes for large trees, and for finding the users of named files (default: one per CPU)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="say on stderr how much jedi was asked, and which files spent their jedi-budget",
    )
    add_trace_arguments(parser, flag=True)
    parser.set_defaults(run=run)


def _common_parent(paths: list[Path]) -> Path:
    resolved = [p.resolve() for p in paths]
    folders = [p if p.is_dir() else p.parent for p in resolved]
    return Path(os.path.commonpath(folders))


def _settings(args: argparse.Namespace, start: Path) -> tuple[Settings, Path | None]:
    """pyproject settings overridden by the flags, and the folder `exclude` globs are relative to."""
    pyproject = args.config or find_pyproject(start)
    if args.config is not None and not args.config.is_file():
        raise SettingsError(f"{args.config}: no such file")
    settings = load_pyproject(pyproject) if pyproject else Settings()
    if args.select is not None:  # like ruff: a new selection drops the config's ignores too
        settings = settings.merged(ignore=())
    for flag in ("select", "ignore"):
        value = getattr(args, flag)
        if value is not None:
            codes = [c.strip() for c in value.split(",") if c.strip()]
            try:
                settings = settings_from_mapping({flag: codes}, settings)
            except SettingsError as exc:
                raise SettingsError(f"--{flag}: {exc}") from None
    return settings, pyproject.parent.resolve() if pyproject else None


def _check(
    ws: Workspace, paths: list[str], whole_project: bool, cache_dir: Path | None = None, jobs: int = 1
) -> tuple[dict[str, list[Finding]], list[str]]:
    """Findings per file, and the internal errors met (each costs one site, policy or file).

    When only part of the project is named (pre-commit passes the changed files), a site in
    another file may use their policies: batch.check_part takes those files into account.
    If checking together fails, the files are checked one at a time.
    """
    errors = []
    results: dict[str, list[Finding]] | None = None
    try:
        if whole_project:
            results = check_tree(ws, paths, cache_dir, jobs)
        else:
            results = check_part(ws, paths, cache_dir, jobs)
    except Exception:
        log.debug("checking the paths together failed; now one at a time", exc_info=True)
    if results is None:
        try:
            ws.index_users(paths)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"internal error while indexing the project: {type(exc).__name__}: {exc}")
        results = {}
        for path in paths:
            try:
                results[path] = ws.check_file(path)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{path}: internal error while checking: {type(exc).__name__}: {exc}")
    errors += [str(error) for error in dict.fromkeys(ws.take_internal_errors())]
    return results, errors


def _lines_reader() -> Callable[[str], list[str]]:
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        from jax_lsp.core.text.decoding import decode, split_lines  # here: read only to show findings

        if path not in cache:
            try:
                text = decode(Path(path).read_bytes())[0]
            except OSError:
                text = ""
            cache[path] = split_lines(text.replace("\0", " "))
        return cache[path]

    return lines


def _no_findings(output_format: str) -> str | None:
    """What a script reading stdout gets when the check could not run: valid JSON still."""
    return render(output_format, Report(findings=[])) if output_format in ("json", "sarif") else None


def run(args: argparse.Namespace) -> int:
    # The process ends after one pass over the tree: the cyclic GC stays off (the batch collects
    # every so many files). Turned back on, its first pass would scan every object the check made.
    gc.disable()
    try:
        return _run(args)
    except Exception as exc:  # noqa: BLE001 - exit 2 (not 1, "findings"), and keep stdout parseable
        return fail(args.output_format, f"internal error: {type(exc).__name__}: {exc}", _no_findings)


def _run(args: argparse.Namespace) -> int:
    paths = args.paths or [Path(".")]
    try:
        start = _common_parent([p for p in paths if p.exists()] or [Path(".")])
        settings, config_dir = _settings(args, start)
        targets = files.discover_resolved(paths, settings.exclude, config_dir)
    except (SettingsError, files.MissingPathError) as exc:
        return fail(args.output_format, str(exc), _no_findings)
    root = config_dir or project_root(start)
    ws = Workspace(
        roots=[root], settings=settings, interpreter=args.interpreter, findings_only=not args.trace
    )
    whole_project = any(root.is_relative_to(p.resolve()) for p in paths if p.is_dir())
    cache_dir = None if args.no_cache else (args.cache_dir or root / CACHE_DIR_NAME)
    jobs = max(1, args.jobs)
    by_path, errors = _check(ws, targets, whole_project, cache_dir, jobs)
    fixed, written = 0, 0  # findings fixed, files written
    if args.fix:
        from jax_lsp.cli.fixing import fix_all  # here: a check without --fix writes nothing (start-up time)

        outcome = fix_all(
            ws,
            by_path,
            errors,
            args.unsafe_fixes,
            lambda: _check(ws, targets, whole_project, cache_dir, jobs),
        )
        by_path, errors = outcome.findings, outcome.errors
        fixed, written = outcome.fixed, len(outcome.written)
    if args.trace:
        from jax_lsp.cli.tracing import trace_check  # here: only --trace runs the trace (start-up time)

        by_path, trace_errors = trace_check(ws, by_path, targets, args, root)
        errors += trace_errors
    findings = sorted((f for fs in by_path.values() for f in fs), key=lambda f: f.sort_key)
    report = Report(
        findings=findings,
        source_lines=_lines_reader(),
        notebook=notebook_reader(),
        fixed=fixed,
        fixed_files=written,
        unsafe_fixes=args.unsafe_fixes,
        internal_errors=len(errors),
    )
    try:
        sys.stdout.write(render(args.output_format, report))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped (`jax-lsp check | head`): it read all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor may the exit's flush fail
    if args.output_format in MACHINE_FORMATS and fixed:  # stdout is for the report alone
        print(fixed_line(fixed, written), file=sys.stderr)
    skipped = ws.pythons.summary(targets)  # not findings: no effect on the exit code
    if skipped:
        print(f"jax-lsp: note: {skipped}", file=sys.stderr)
    jax = ws.jax_facts() if findings else None  # read only when there is something it spoke for
    if jax is not None and not jax.supported:
        print(
            f"jax-lsp: note: jax {jax.requested} is older than jax {jax.version}, the oldest release "
            f"jax-lsp knows: the findings speak for jax {jax.version}",
            file=sys.stderr,
        )
    if args.verbose:
        for line in ws.jedi.summary(display_path):
            print(f"jax-lsp: {line}", file=sys.stderr)
    for error in errors:
        say_error(error)
    if errors:
        return ERROR_EXIT
    return 1 if findings else 0

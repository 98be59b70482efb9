"""`jax-lsp advise FILE[:LINE[:COLUMN]]`: what each remat policy would save and recompute at a site.

Traces an example of the site (shapes only: nothing is compiled or allocated at full size,
unless --compile) once per candidate policy, in the trace agent, and estimates each
candidate's training step's peak temporary memory from its trace. Without LINE, every policy
site of the file is advised, and every checkpoint that passes no policy (`jax.checkpoint(f)`,
`@jax.remat`, `nn.remat(Block)`: JAX's default, `policy=None`, which JAX treats as
`nothing_saveable`). Where a key chooses the policy (`getattr(jax.checkpoint_policies, KEY)`,
`TABLE[KEY]`, a helper returning a table member), the suggestion names the key to set and,
when the project gives it a literal default, its file and line. Under the table, each name the
current policy lists that changes nothing (the policy traced without it keeps the same), and
why (docs/advise.md, "Names that change nothing"); under jax_remat3 no policy is compared
(the site is not advised), but the names the new remat ignores are still listed. A note under
the table says what the JAX release does not let the advisor see (on jax 0.4.30, the residuals
"from a literal"). Exit 0 when every site was
advised (and, with --budget, some policy fits), 1 when a --budget fits no policy, 2 when a
site could not be advised.

Each answer is kept in the project's cache folder (.jax-lsp-cache/advice/) while the files it read
are unchanged: advising an unchanged site again starts no trace agent and compiles nothing
(--no-cache: neither read nor write it). Otherwise each run starts its own trace agent, which
imports JAX, then the model and what the model imports. Ctrl-C stops the step in flight at once
(its process too); the steps that ended are kept in the cache.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jax_lsp.cli.errors import ERROR_EXIT, fail, say_error
from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.cli.output.written_policy import written_block
from jax_lsp.cli.site_argument import CommandError, Project, SiteArgument, add_site_argument
from jax_lsp.cli.trace_arguments import add_compile_arguments, add_trace_arguments, trace_options
from jax_lsp.cli.tracing import trace_service
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.answer_cache import AnswerCache, cache_folder
from jax_lsp.trace.advisor.chart import chart_svg
from jax_lsp.trace.advisor.contract import written_policy_json
from jax_lsp.trace.advisor.examples import example_for
from jax_lsp.trace.advisor.pipeline import Cancel, StepEvent
from jax_lsp.trace.advisor.report import format_markdown
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.residual_list import SHOWN
from jax_lsp.trace.advisor.sites import advise_anchors, anchor_of_line
from jax_lsp.trace.advisor.sizes import parse_size
from jax_lsp.trace.advisor.write.writing import write_policy
from jax_lsp.trace.advisor.write.written import WrittenPolicy
from jax_lsp.trace.compile_target import CompileTargetError, choose_target


def add_parser(subparsers: argparse._SubParsersAction, help_line: str) -> None:
    parser = subparsers.add_parser(
        "advise",
        help=help_line,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_site_argument(
        parser,
        "a policy= argument, of a checkpointed def, or of a checkpoint without a policy (its call or "
        "decorator); without it, every site",
    )
    parser.add_argument(
        "--example",
        metavar="SPEC",
        help="MODULE:FUNCTION or path/to/file.py:FUNCTION: a function without arguments returning the "
        'checkpointed callable\'s positional arguments, or {"fn": entry, "args": (...), "kwargs": {...}}; '
        "the path or module is looked for in the current folder, then the project root, then the site's "
        "folder, and imported as Python imports it "
        "(default: a `# jax-lsp: example=SPEC` comment on the site's line, or [tool.jax-lsp.examples])",
    )
    parser.add_argument(
        "--budget",
        metavar="SIZE",
        help="device memory for the step's temporaries at their peak (the estimated peak, or the "
        "compiled temporaries with --compile; not the arguments or the gradients; 24GiB, "
        "600000B): suggest a policy",
    )
    parser.add_argument(
        "--policies",
        metavar="EXPR",
        action="append",
        default=[],
        help="a candidate policy (dots_saveable, save_only_these_names('h'), any expression of the "
        "site's module); repeat it for several (default: the ready-made ones, the names the code tags, "
        "the offload variants where the backend has pinned_host memory)",
    )
    parser.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also compile each candidate's training step (jit of the gradient over the example's "
        "positional arguments) for the --target and show XLA's memory_analysis() beside the "
        "estimate; the budget is then compared with the compiled peak on a TPU, the compiled "
        "temporaries on the CPU (default: on for a TPU target, off for cpu). Each candidate "
        "compiles in a process of its own, under --compile-timeout and --compile-memory-limit-mb: "
        "one that runs out of either is a row that says so",
    )
    parser.add_argument(
        "--target",
        metavar="MACHINE",
        help="what --compile compiles for, from any machine: a TPU type (v5e-1, v5litepod-8, v4-8, "
        "v5p-8, v6e-4), a topology as JAX writes it (v5e:2x2), or cpu (default: [tool.jax-lsp] target, "
        "else this machine's TPU, read without opening it, else cpu); a TPU needs libtpu "
        "(pip install 'jax[tpu]')",
    )
    parser.add_argument(
        "--run",
        action="store_true",
        dest="run_steps",
        help="also run each candidate's training step on the local accelerator (random inputs of the "
        "example's shapes) and show its median step time and the device's peak_bytes_in_use; the "
        "device is opened once for every candidate and given back; where another process holds the "
        "TPU it says so and runs nothing; with no accelerator, the steps run on the CPU",
    )
    parser.add_argument(
        "--write-policy",
        action="store_true",
        help="with --budget: also write a policy for the site, keeping on the device, offloading or "
        "recomputing each of its values (grouped by checkpoint_name, else by the expression that made "
        "them, which the edit tags), the least recompute whose step compiles within the budget; "
        "compiles every candidate (as --compile) and the written one for the target before it is shown",
    )
    parser.add_argument("--output-format", choices=("table", "json", "markdown"), default="table")
    parser.add_argument(
        "--residuals",
        metavar="N|all",
        type=_residuals,
        default=SHOWN,
        help=f"how many of the lines that make what the current policy keeps the table and Markdown list, "
        f"largest first, the rest summed in one line; all: every one (default: {SHOWN}; the JSON always has "
        "every residual)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE.svg",
        type=Path,
        help="also draw every candidate, its memory against its recompute, with the budget and the "
        "current and suggested policies marked, as an SVG picture (one chart per site, top to bottom)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        help="the project root: the JSON's paths are relative to it, an example is looked for in it "
        "after the current folder, and it is on sys.path after the current folder (default: the "
        "nearest folder above FILE with pyproject.toml or .git, else the current folder when it "
        "holds FILE)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the answers kept in the project's cache folder (.jax-lsp-cache/advice/)",
    )
    add_trace_arguments(parser, flag=False)
    add_compile_arguments(parser)
    parser.set_defaults(run=run)


def _residuals(text: str) -> int | None:
    """``--residuals``: a count of groups, or None for ``all``."""
    if text == "all":
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of lines or all")
    return int(text)


# What a script reading `--output-format json` gets when nothing could be advised.
_NOTHING_ADVISED = {"json": "null\n"}.get


def _progress(event: StepEvent) -> None:
    """A step's progress, on a terminal's stderr."""
    print(f"jax-lsp: {event.text}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    try:
        advised = SiteArgument.parse(args.site)
        budget = parse_size(args.budget) if args.budget else None
    except CommandError as exc:
        return fail(args.output_format, str(exc), _NOTHING_ADVISED)
    except ValueError as exc:
        return fail(args.output_format, f"--budget: {exc}", _NOTHING_ADVISED)
    try:
        project = Project.open(advised.path, args.root, cwd=cwd)
        positions = advised.positions(project.workspace, "advise", advise_anchors, anchor_of_line)
    except CommandError as exc:
        return fail(args.output_format, str(exc), _NOTHING_ADVISED)
    try:
        target = choose_target(args.target, project.settings.compile_target)
    except CompileTargetError as exc:
        where = "--target" if args.target else "[tool.jax-lsp] target"
        return fail(args.output_format, f"{where}: {exc}", _NOTHING_ADVISED)
    if args.write_policy and budget is None:
        message = "--write-policy needs --budget: the policy is written for a budget"
        return fail(args.output_format, message, _NOTHING_ADVISED)
    compile = target.is_tpu if args.compile is None else args.compile
    compile = compile or args.write_policy  # the written policy is compared with every candidate compiled
    path, root, ws = advised.path, project.root, project.workspace
    examples_root = project.pyproject.parent if project.pyproject else root
    cache = None if args.no_cache else AnswerCache(cache_folder(root))
    plan = {"compile": compile, "run": args.run_steps, "budget": budget, "cache": cache}
    results: list[Advice] = []
    written: dict[int, WrittenPolicy] = {}  # by the advice's id, with --write-policy
    cancel = Cancel()
    try:
        with trace_service(args) as service:
            for line, column in positions:
                example = args.example or example_for(
                    ws, path, line, project.settings.examples, examples_root, key_line=line
                )
                request = {
                    "column": column,
                    "example": example,
                    "root": root,
                    "import_root": ws.imports.import_root(path),
                    "cwd": cwd,
                    "interpreter": args.interpreter,
                    "options": trace_options(args),
                    "target": target,
                }
                progress = _progress if sys.stderr.isatty() else None
                advice = advise(
                    service,
                    path,
                    line,
                    policies=args.policies,
                    progress=progress,
                    cancel=cancel,
                    **plan,
                    **request,
                )
                results.append(advice)
                if args.write_policy and budget is not None:
                    written[id(advice)] = write_policy(service, ws, advice, budget, **request)
    except KeyboardInterrupt:  # the step in flight was stopped, and the agent with the service
        cancel.cancel()
        print("jax-lsp: advise: cancelled (the steps that ended are kept in the cache)", file=sys.stderr)
        return 130

    if args.output_format == "json":
        documents = [_document(a, root, budget, written.get(id(a)), args.write_policy) for a in results]
        out = documents[0] if advised.line is not None else documents
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        render = format_markdown if args.output_format == "markdown" else advice_table
        texts = [
            render(a, cwd, budget, args.residuals) + _written_text(a, cwd, written.get(id(a)))
            for a in results
        ]
        sys.stdout.write("\n\n".join(texts).rstrip("\n") + "\n")
    if args.plot is not None:
        try:
            args.plot.write_text(chart_svg(results, cwd, budget), encoding="utf-8")
        except OSError as exc:
            say_error(f"--plot: cannot write {args.plot}: {exc.strerror or exc}")
            return ERROR_EXIT
    if any(not a.ok for a in results):
        return 2
    if budget is not None and any(
        a.suggest(budget) is None and not _written_fits(written.get(id(a))) for a in results
    ):
        return 1
    return 0


def _written_fits(written: WrittenPolicy | None) -> bool:
    """Whether a written policy fits where no named one does (False without one)."""
    return written is not None and written.entry is not None


def _document(
    advice: Advice, root: Path, budget: int | None, written: WrittenPolicy | None, asked: bool
) -> dict:
    """The advice's contract, with ``written_policy`` where --write-policy asked for it."""
    document = advice.to_contract(root, budget)
    if asked:
        document["written_policy"] = written_policy_json(written, root) if written is not None else None
    return document


def _written_text(advice: Advice, root: Path, written: WrittenPolicy | None) -> str:
    return written_block(advice, written, root) if written is not None else ""

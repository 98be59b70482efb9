"""`advise --write-policy` on public models, compiled for a TPU target from this machine (issue 46).

    python benchmarks/write_policy_models.py --python PY [--cache DIR] [--out DIR] [--only NAME]
                                             [--target v5e-1] [--fractions 0.25 0.5 0.75] [--strict]

For each model of benchmarks/advise_against_jax.py (nanodo, haliax, tunix, recurrentgemma: the
repository at its pinned commit in the cache folder, its example copied to a working copy's root
as `advise_example.py`), in one agent of ``--python`` (an interpreter whose JAX has libtpu, with
the models' packages: benchmarks/advise_models/requirements.txt):

1. the site advised with every named candidate compiled for the target (`advise --compile`),
   timed;
2. for 3 budgets between the smallest and the largest compiled peak of the named candidates
   that keep everything on the device (at ``--fractions`` of the way), the written policy
   (`write_policy`), timed: its verdict, its compiled peak, the best named candidate that fits,
   both recomputes (and predicted step times where the advisor predicts them);
3. each written policy's edits applied to a copy of the working copy (kept under ``--out`` for
   the chip's round, `benchmarks/write_policy/on_chip.sh`), and the site advised there with its
   current policy compiled: the compiled peak must equal the written candidate's, and, where the
   site is in the user's files, `jax-lsp trace` of it must find no JAX190.

It prints a table per model and writes, after each model, ``--out``/record.json (the figures) and cases.json (the
written policies the chip's round measures). Only a written policy the search offers (verdict
"written") is applied and measured; where the best named policy wins or ties, the row's message
names the best written one and its predicted step, and `written` and `fits` are null. Exit 0 when
every written policy offered fits when compiled and its applied edit compiles to the same peak.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from advise_against_jax import DEFAULT_CACHE, MODELS, Model  # noqa: E402

from jax_lsp.core.codes import UNPREDICTED  # noqa: E402
from jax_lsp.core.text.edits import apply_edits  # noqa: E402
from jax_lsp.engine import Workspace  # noqa: E402
from jax_lsp.trace import TraceService  # noqa: E402
from jax_lsp.trace.advisor import step_time  # noqa: E402
from jax_lsp.trace.advisor.advice import Advice  # noqa: E402
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice  # noqa: E402
from jax_lsp.trace.advisor.request import advise  # noqa: E402
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops  # noqa: E402
from jax_lsp.trace.advisor.write.search import Objective, by_step_time  # noqa: E402
from jax_lsp.trace.advisor.write.writing import write_policy  # noqa: E402
from jax_lsp.trace.advisor.write.written import WRITTEN, WrittenPolicy  # noqa: E402
from jax_lsp.trace.compile_target import parse_target  # noqa: E402
from jax_lsp.trace.mapping import trace_notes  # noqa: E402
from jax_lsp.trace.options import TraceOptions  # noqa: E402


def _working_copy(cache: Path, model: Model, out: Path) -> Path:
    source = cache / f"{model.name}-{model.commit}"
    root = out / "models" / model.name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root)
    shutil.copy(HERE / "advise_models" / f"{model.name}.py", root / "advise_example.py")
    return root


def _budgets(advice: Advice, fractions: list[float]) -> list[int]:
    sizes = [
        size
        for p in advice.policies
        if p.error is None and p.host_bytes == 0 and (size := advice.budgeted_bytes(p)) is not None
    ]
    low, high = min(sizes), max(sizes)
    return [int(low + (high - low) * f) for f in fractions]


def _applied(root: Path, written: WrittenPolicy, copy: Path) -> None:
    """``root`` copied to ``copy`` with the written policy's edits applied."""
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root, copy)
    by_file: dict[str, list] = {}
    for edit in written.edits:
        by_file.setdefault(edit.path, []).append(edit)
    for path, edits in by_file.items():
        target = copy / Path(path).resolve().relative_to(root.resolve())
        target.write_text(apply_edits(target.read_text(encoding="utf-8"), edits), encoding="utf-8")


def _moved_line(written: WrittenPolicy, path: Path, line: int) -> int:
    """The 1-based ``line`` of ``path`` (the working copy's file the edits name) once the edits
    added lines above it."""
    added = sum(
        e.new_text.count("\n") - (e.span.end.line - e.span.start.line)
        for e in written.edits
        if Path(e.path).resolve() == path.resolve() and e.span.start.line < line - 1
    )
    return line + added


def _check_applied(
    model: Model, copy: Path, written: WrittenPolicy, request: dict[str, Any]
) -> dict[str, Any]:
    """The site advised in the edited ``copy`` (an agent of its own, the copy's folders on its
    path): its current policy compiled, against the written candidate's figures; and the trace of
    a site in the user's files, for JAX190."""
    path, line = model.site.rsplit(":", 1)
    site = copy / path
    moved = _moved_line(written, copy.parent / model.name / path, int(line))
    os.environ["PYTHONPATH"] = _python_path(copy, model)
    service = TraceService()
    try:
        return _advised_again(service, model, site, moved, copy, written, request)
    finally:
        service.shutdown()


def _python_path(root: Path, model: Model) -> str:
    return os.pathsep.join([str(HERE.parent), *(str(root / p) for p in model.paths)])


def _advised_again(
    service: TraceService,
    model: Model,
    site: Path,
    moved: int,
    copy: Path,
    written: WrittenPolicy,
    request: dict[str, Any],
) -> dict[str, Any]:
    again = advise(service, site, moved, compile=True, **{**request, "root": copy, "cwd": copy})
    current = again.current if again.ok else None
    entry = written.entry
    assert entry is not None and entry.compiled is not None
    peak = current.compiled.peak_bytes if current is not None and current.compiled is not None else None
    found: dict[str, Any] = {
        "advised": again.ok,
        "message": again.message,
        "peak_bytes": peak,
        "same_peak": peak == entry.compiled.peak_bytes,
        "same_recompute": current is not None and current.recompute_flops == entry.recompute_flops,
        "no_effect": [n.name for n in current.no_effect] if current is not None else None,
    }
    if "site-packages" not in str(site) and not model.paths:  # a site in the user's files
        result = service.trace(site, moved, root=copy, interpreter=request["interpreter"])
        found["jax190"] = [n.message for n in trace_notes(result) if n.code == UNPREDICTED]
    return found


def _measurable(advice: Advice, named: PolicyAdvice | None) -> str | None:
    """The best named policy as an expression the edited copy's site can take: the current policy
    (its text may be JAX's default, "None", or a library's value) as a ready-made candidate that
    keeps the same."""
    if named is None or not named.current:
        return named.policy if named is not None else None
    same = [p for p in advice.same_as(named) if p.jax_policy and p.recompute_flops == named.recompute_flops]
    return min((p.policy for p in same), key=len, default=None)


def _named_row(advice: Advice, policy: PolicyAdvice | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    return {
        "policy": policy.policy,
        "size": advice.budgeted_bytes(policy),
        "recompute_flops": policy.recompute_flops,
        "step_estimate_s": step_time.ranked_seconds(advice.target, policy),
    }


def _without_ties(advice: Advice) -> Objective | None:
    """`--strict`: the step-time objective with no tie, so that a written policy predicted faster
    by any margin is offered (and applied, and made a case for the chip's round), to measure
    whether such predicted gains hold; None where the advice has no step times."""
    objective = by_step_time(advice)
    if objective is None:
        return None
    return Objective(objective.key, objective.timed, objective.words + ", no ties")


def run_model(model: Model, args: argparse.Namespace) -> dict[str, Any]:
    root = _working_copy(args.cache, model, args.out)
    os.environ["PYTHONPATH"] = _python_path(root, model)
    path, line = model.site.rsplit(":", 1)
    target = parse_target(args.target, "--target")
    options = TraceOptions(timeout=600, compile_timeout=args.compile_timeout)
    request = {
        "example": f"advise_example.py:{args.example}",
        "root": root,
        "cwd": root,
        "interpreter": args.python,
        "options": options,
        "target": target,
    }
    service = TraceService()
    record: dict[str, Any] = {"model": model.name, "site": model.site, "target": args.target, "budgets": []}
    try:
        begun = time.perf_counter()
        advice = advise(service, root / path, int(line), compile=True, **request)
        record["named_s"] = time.perf_counter() - begun
        if not advice.ok:
            record["error"] = f"{advice.status}: {advice.message}"
            return record
        record["named"] = [_named_row(advice, p) for p in advice.policies if p.error is None]
        objective = _without_ties(advice) if args.strict else None
        for index, budget in enumerate(_budgets(advice, args.fractions)):
            written = write_policy(service, Workspace([root]), advice, budget, objective, **request)
            entry = written.entry
            row: dict[str, Any] = {
                "budget": budget,
                "verdict": written.verdict,
                "message": written.message,
                "search_s": written.cost.seconds if written.cost else None,
                "compiles": written.cost.compiles if written.cost else 0,
                "named": _named_row(advice, written.named),
                "written": _named_row(advice, entry),
                "fits": None if entry is None else (advice.budgeted_bytes(entry) or budget + 1) <= budget,
                "edits": len(written.edits),
                "site_edit_note": written.site_edit_note,
            }
            if written.verdict == WRITTEN:
                copy = args.out / "models" / f"{model.name}-budget{index}"
                _applied(root, written, copy)
                row["applied"] = _check_applied(model, copy, written, request)
                os.environ["PYTHONPATH"] = _python_path(root, model)
                row["case"] = {
                    "copy": str(copy.relative_to(args.out)),
                    "example": args.example,
                    "site": [path, _moved_line(written, root / path, int(line))],
                    "paths": list(model.paths),
                    "written": entry.policy if entry is not None else None,
                    "named": _measurable(advice, written.named),
                }
            record["budgets"].append(row)
            _print_row(model, row)
    finally:
        service.shutdown()
    return record


def _print_row(model: Model, row: dict[str, Any]) -> None:
    named, written = row["named"] or {}, row["written"] or {}

    def figure(part: dict[str, Any]) -> str:
        if not part:
            return "-"
        return f"{format_bytes(part['size'] or 0)}, {format_flops(part['recompute_flops'])}"

    applied = row.get("applied") or {}
    print(
        f"{model.name:15} {format_bytes(row['budget']):>10} {row['verdict']:10} written {figure(written):28} "
        f"named {figure(named):28} compiles {row['compiles']} {row['search_s'] or 0:6.1f} s "
        f"same peak {applied.get('same_peak', '-')} jax190 {applied.get('jax190', '-')}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", required=True, help="the models' interpreter (JAX with libtpu)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "write_round")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--target", default="v5e-1")
    parser.add_argument(
        "--example", default="example_chip", help="the example's function (default: at a TPU chip's scale)"
    )
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 0.75])
    parser.add_argument("--compile-timeout", type=float, default=900.0)
    parser.add_argument(
        "--strict",
        action="store_true",
        help="offer a written policy predicted faster by any margin, the step model's error aside "
        "(for the chip's round to measure such gains)",
    )
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        if not (args.cache / f"{model.name}-{model.commit}").is_dir():
            print(f"{model.name}: not in {args.cache}, skipped")
            continue
        records.append(run_model(model, args))
        (args.out / "record.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
        cases = [
            {"model": r["model"], **row["case"]} for r in records for row in r["budgets"] if row.get("case")
        ]
        (args.out / "cases.json").write_text(json.dumps(cases, indent=1), encoding="utf-8")
    rows = [row for record in records for row in record["budgets"]]
    offered = [row for row in rows if row["written"] is not None]
    fits = all(row["fits"] for row in offered)
    held = all((row.get("applied") or {}).get("same_peak", True) for row in offered)
    print(
        f"{len(rows)} budgets, {len(offered)} written policies offered (the others: the best named "
        f"policy, see each row's message); of those, every one fits: {fits}; every applied edit "
        f"compiles the same: {held}"
    )
    return 0 if fits and held else 1


if __name__ == "__main__":
    sys.exit(main())

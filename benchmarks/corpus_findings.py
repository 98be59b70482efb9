"""What jax-lsp finds in the real-code corpus, file by file, for telling whether a change meant
to be faster changed any result. Run it on two checkouts and compare the two files:

    python benchmarks/corpus_findings.py before.json            # in the old checkout
    python benchmarks/corpus_findings.py after.json             # in the new one
    python benchmarks/corpus_findings.py --compare before.json after.json

For each project it records the findings of a whole-project check (code, line, column,
message), the policy sites of every file a full parse gives (line of the call, how many
policies it resolves to), the findings of `check FILE` for each file that holds a site or a
finding or defines a policy that a site reaches (pre-commit's path: the files that could use
its policies, found by a text search, are checked with it), and every
internal error. Runs in this process, on the corpus bench_real downloads (it must be there),
and on the local trees of corpus.LOCAL (the jax repository's, skipped with a printed line where
its folder is missing; this Python's standard library) and corpus.GITHUB (likewise skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from corpus import DEFAULT_CACHE, GITHUB, LOCAL, PROJECTS, LocalProject, fetch, local_root

from jax_lsp.core.notebooks.files import file_could_hold_site
from jax_lsp.core.policies.resolve import PolicyFunction
from jax_lsp.engine import Workspace
from jax_lsp.engine.batch import check_part, check_paths
from jax_lsp.engine.files import discover

# As `jax-lsp check FILE` runs by default: a forked process reads part of the project (engine.forked).
JOBS = os.cpu_count() or 1

Results = dict[str, list]


def _finding_rows(findings: list) -> list[list]:
    return [[f.code, f.span.start.line, f.span.start.column, f.message] for f in findings]


def project_results(root: Path) -> Results:
    out: Results = {}
    internal = f"internal errors in {root.name}"
    whole = Workspace(roots=[root])
    for path, findings in check_paths(whole, [root], None, 1).items():
        out.setdefault(str(path), []).append(["check", _finding_rows(findings)])
    parsed = Workspace(roots=[root])
    policy_modules = set()  # the modules that define a policy some site reaches
    for path in discover([root]):
        data = path.read_bytes()
        module = parsed.load(path) if file_could_hold_site(str(path), data) else None
        sites = parsed.sites(module) if module is not None else []
        if sites:
            rows = sorted((site.call.lineno, len(targets)) for site, targets in sites)
            out.setdefault(str(path), []).append(["sites", rows])
            policy_modules |= {
                t.module.path for _, targets in sites for t in targets if isinstance(t, PolicyFunction)
            }
    for path in sorted(set(out) | {p for p in policy_modules if parsed.in_roots(p)}):
        alone = Workspace(roots=[root])
        findings = check_part(alone, [path], jobs=JOBS).get(path, [])
        out.setdefault(path, []).append(["check FILE", _finding_rows(findings)])
        if errors := alone.take_internal_errors():
            out.setdefault(internal, []).extend(str(e) for e in errors)
    if errors := whole.take_internal_errors() + parsed.take_internal_errors():
        out.setdefault(internal, []).extend(str(e) for e in errors)
    return out


def compare(before: Results, after: Results) -> int:
    changed = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    for key in changed:
        print(f"{key}\n  before: {before.get(key)}\n  after:  {after.get(key)}")
    print(f"{len(changed)} of {len(before.keys() | after.keys())} entries differ")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, help="where to write the results (JSON)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--projects", nargs="*", help="only these projects (by name)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        return compare(before, after)
    if args.output is None:
        parser.error("name the output file, or --compare two of them")
    results: Results = {}
    for project in (*PROJECTS, *LOCAL, *GITHUB):
        if args.projects and project.name not in args.projects:
            continue
        if isinstance(project, LocalProject):
            local = local_root(project, args.cache_dir)
            if local is None:
                print(f"{project.name}: skipped, no folder ({project.how})", file=sys.stderr)
                continue
            root = local
        else:
            root, _ = fetch(project, args.cache_dir)
        found = project_results(root)
        print(f"{project.name}: {len(found)} files with sites or findings", file=sys.stderr)
        results.update(found)
    args.output.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

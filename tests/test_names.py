"""One meaning per name (issue 49, item 8): the *target* is the chip compiled for
(`trace.compile_target.CompileTarget`, `advise --target`); a `FILE:LINE` is a site
(`cli.site_argument.SiteArgument`), what a site's policy resolves to a `ResolvedPolicy`. No other
class, type alias or module of jax_lsp is named for a target."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jax_lsp"
# Modules about the chip compiled for: the host's machines, the agent's compile for a topology.
TARGET_MODULES = {"trace/compile_target.py", "trace_agent/advisor/target.py"}


def _defined_names(tree: ast.Module) -> set[str]:
    names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_only_the_chip_compiled_for_is_a_target():
    named = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        targets = {n for n in _defined_names(ast.parse(path.read_bytes())) if "Target" in n}
        if targets - {"CompileTarget", "CompileTargetError"}:
            named[module] = sorted(targets)
        if "target" in path.stem and module not in TARGET_MODULES:
            named[module] = ["(the module's name)"]
    assert named == {}


def test_the_check_sees_a_target_class_and_alias():
    tree = ast.parse("class Target:\n    pass\n\nResolvedTarget = int | str\n")
    assert _defined_names(tree) == {"Target", "ResolvedTarget"}

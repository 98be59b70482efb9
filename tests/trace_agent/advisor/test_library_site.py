"""A checkpoint site in a library (tests/fixtures/advisor/library_site: `stacklib`, installed in
its `site-packages`, and a user's model on it): the advice names the user's call that chooses the policy, shows the current policy
as the user wrote it, edits the user's line where the user passes the policy itself, and names
the residuals after the user's lines."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.report import suggestion
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.advisor.table import policy_label
from tests.agent import ADVISOR_FIXTURES, AGENT_PYTHON, AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

POLICIES = "jax.checkpoint_policies."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ADVISOR_FIXTURES / "library_site", tmp_path, dirs_exist_ok=True)
    return tmp_path


def _advise(service, root: Path, needle: str, example: str, package: Path | None = None) -> Advice:
    """The advice of the site at ``needle`` in stacklib's `blocks.py`: installed (in the project's
    `site-packages`), or where ``package`` puts it."""
    installed = root / "site-packages"
    site = (package or installed / "stacklib") / "blocks.py"
    advice = advise(
        service, site, line_of(site, needle), example=example, root=root, cwd=root, import_root=installed
    )
    assert advice.ok, advice.message
    return advice


def _text_at(path: Path, line: int, column: int, end_column: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[line - 1][column:end_column]


def test_a_policy_the_user_passes_to_a_library_helper(service, project):
    advice = _advise(service, project, "jax.checkpoint(block, policy=policy)", "user_model.py:direct_example")
    call = advice.user_call
    assert call is not None and Path(call.path) == (project / "user_model.py").resolve()
    assert call.line == line_of(project / "user_model.py", "remat_block(layer, policy=")
    assert (call.keyword, call.callee, call.carries_policy) == ("policy", "remat_block", True)
    assert call.text == POLICIES + "nothing_saveable"
    assert _text_at(project / "user_model.py", call.line, call.column, call.end_column) == call.text
    assert advice.current is not None and advice.current.policy == POLICIES + "nothing_saveable"

    contract = advice.to_contract(project, budget=2**30)
    suggested = contract["suggested"]["policy"]
    edit = contract["user_call"]["edit"]
    assert edit["path"] == "user_model.py" and edit["new_text"] == suggested
    assert (edit["start"]["line"], edit["start"]["column"]) == (call.line, call.column)
    assert (edit["end"]["line"], edit["end"]["column"]) == (call.end_line, call.end_column)
    action, where = suggestion(advice, advice.suggest(2**30), project)
    assert (action, where) == (f"policy={suggested}", f"user_model.py:{call.line}")

    computed = [r for p in advice.policies for r in p.residuals if r.kind == "computed"]
    assert computed and {Path(r.path).name for r in computed} == {"user_model.py"}


def test_a_value_the_library_makes_the_policy_from(service, project):
    advice = _advise(service, project, "jax.checkpoint(body, policy=policy)", "user_model.py:stack_example")
    call = advice.user_call
    assert call is not None and Path(call.path) == (project / "user_model.py").resolve()
    assert call.line == line_of(project / "user_model.py", 'Stack(remat="recompute")')
    assert (call.keyword, call.text, call.callee, call.carries_policy) == (
        "remat",
        '"recompute"',
        "Stack",
        False,
    )
    # the library gives nothing_saveable: the ready-made row is the current one, labelled with the call
    assert advice.current is not None and advice.current.policy == POLICIES + "nothing_saveable"
    assert policy_label(advice.current, call) == 'nothing_saveable (remat="recompute")'
    assert policy_label(advice.current) == "nothing_saveable"

    contract = advice.to_contract(project, budget=2**30)
    assert contract["user_call"]["edit"] is None  # no value of `remat` is known to give a policy
    action, where = suggestion(advice, advice.suggest(2**30), project)
    assert action == f"policy={contract['suggested']['policy']}"
    assert where is not None and f'remat="recompute" in Stack(...) at user_model.py:{call.line}' in where

    computed = [r for p in advice.policies for r in p.residuals if r.kind == "computed"]
    assert computed and {Path(r.path).name for r in computed} == {"user_model.py"}


def test_a_configuration_field_that_selects_the_policy_is_set_at_the_users_call(service, project):
    """`POLICIES[self.config.remat_policy]` in the library, `StackConfig(remat_policy=...)` in the
    user's file: the suggestion sets the key there (not the library's default of the field)."""
    advice = _advise(
        service, project, "POLICIES[self.config.remat_policy]", "user_model.py:configured_example"
    )
    call = advice.user_call
    assert call is not None and Path(call.path) == (project / "user_model.py").resolve()
    assert call.line == line_of(project / "user_model.py", 'StackConfig(remat_policy="recompute")')
    assert (call.keyword, call.text, call.callee) == ("remat_policy", '"recompute"', "StackConfig")
    suggested = advice.suggest(2**30)
    assert suggested is not None and suggested.select is not None
    action, where = suggestion(advice, suggested, project)
    assert (action, where) == (f"set remat_policy to {suggested.select.key!r}", f"user_model.py:{call.line}")
    edit = advice.to_contract(project, budget=2**30)["user_call"]["edit"]
    assert edit["new_text"] == f'"{suggested.select.key}"'
    assert (edit["start"]["line"], edit["start"]["column"]) == (call.line, call.column)


def test_a_positional_value_gives_no_user_call_not_the_users_own_checkpoint(service, project):
    """The library's frame that builds the checkpoint is named `checkpoint`: the user's own
    `jax.checkpoint(..., policy=...)` is still not the call that chooses the library's policy."""
    advice = _advise(
        service, project, "jax.checkpoint(body, policy=policy)", "user_model.py:positional_example"
    )
    assert advice.user_call is None


def test_a_package_of_the_project_is_no_library_wherever_the_example_is(service, project):
    """A model package copied into the project, the example at the project's root (big_vision's
    Gemma, its policy from `dict(remat_policy=...)`): the user's own code, so no user's call, and
    the residuals named after the package's own lines."""
    shutil.move(project / "site-packages" / "stacklib", project / "stacklib")
    advice = _advise(
        service,
        project,
        "policy=POLICIES[self.remat_policy]",
        "user_model.py:dict_config_example",
        project / "stacklib",
    )
    assert advice.user_call is None
    scanned = [r for p in advice.policies for r in p.residuals if r.kind == "computed" and r.iterations]
    assert scanned and {Path(r.path).name for r in scanned} == {"blocks.py"}


def test_a_config_dict_is_not_the_users_call(service, project):
    """`FieldStack(**dict(remat_policy=...))`: the field the site reads is set through `**`; the
    `dict(...)` call holds the keyword but is no call of the library's."""
    advice = _advise(
        service, project, "policy=POLICIES[self.remat_policy]", "user_model.py:dict_config_example"
    )
    assert advice.user_call is None


def _installed_policy_keyword(module: str, qualname: str) -> tuple[Path, int]:
    """The `policy=` keyword inside the function ``qualname`` (`checkpoint`,
    `_CheckpointWrapper.__call__`) of the agent's installed ``module``."""
    found = subprocess.run(
        [AGENT_PYTHON, "-c", f"import {module} as found; print(found.__file__)"],
        capture_output=True,
        text=True,
    )
    if found.returncode:
        pytest.skip(f"{AGENT_PYTHON} lacks {module}")
    path = Path(found.stdout.strip())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node: ast.Module | ast.ClassDef | ast.FunctionDef = tree
    for name in qualname.split("."):
        [node] = [n for n in node.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == name]
    [keyword] = [n for n in ast.walk(node) if isinstance(n, ast.keyword) and n.arg == "policy"]
    return path, keyword.value.lineno


def _flax_checkpoint_site() -> tuple[Path, int]:
    """The `policy=` of `jax.remat` in flax's own `lift.checkpoint` (what `nn.remat` goes through)."""
    return _installed_policy_keyword("flax.core.lift", "checkpoint")


def _in_an_agent_of_its_own(
    path: Path, line: int, example: str, project: Path, *, compile: bool = False
) -> tuple[Advice, Advice, Advice | None]:
    """The site advised twice (with ``compile``, thrice: the last one compiling) in an agent of
    its own: the first advise is cold, the next ones warm (the agent imported what it used)."""
    own = AgentTraceService()
    request = {"example": example, "root": project, "cwd": project}
    try:
        cold, warm = (advise(own, path, line, **request) for _ in range(2))
        compiled = advise(own, path, line, compile=True, **request) if compile else None
    finally:
        own.shutdown()
    assert (cold.status, warm.status) == ("ok", "ok"), warm.message
    assert [p.policy for p in warm.policies] == [p.policy for p in cold.policies]
    return cold, warm, compiled


def _assert_advises_the_users_nn_remat(advice: Advice, project: Path) -> None:
    assert advice.ok, advice.message
    call = advice.user_call
    assert call is not None and Path(call.path) == (project / "linen_block.py").resolve()
    assert call.line == line_of(project / "linen_block.py", "nn.remat(MLPBlock, policy=")
    assert (call.keyword, call.callee, call.carries_policy) == ("policy", "nn.remat", True)
    assert call.text == POLICIES + "dots_with_no_batch_dims_saveable"
    computed = [r for p in advice.policies for r in p.residuals if r.kind == "computed"]
    assert computed and {Path(r.path).name for r in computed} == {"linen_block.py"}


def test_flaxs_own_remat_internals_advise_the_users_nn_remat_warm_and_compiled(tmp_path):
    """In an agent of its own, so that the first advise is cold (flax not imported yet): the
    next ones run in children of an agent that holds flax, whose other modules hold the copy of
    `lift` they imported; the child imports flax afresh, so they reach the marked site too, the
    compile of each candidate included (docs/advise.md, "A checkpoint in a library")."""
    path, line = _flax_checkpoint_site()
    shutil.copy(ADVISOR_FIXTURES / "linen_block.py", tmp_path / "linen_block.py")
    cold, warm, compiled = _in_an_agent_of_its_own(
        path, line, "linen_block.py:example", tmp_path, compile=True
    )
    assert compiled is not None
    for advice in (cold, warm, compiled):
        _assert_advises_the_users_nn_remat(advice, tmp_path)
    assert compiled.compiled and compiled.policies
    assert all(entry.compiled is not None for entry in compiled.policies), [
        entry.compile_error for entry in compiled.policies
    ]


def test_a_project_module_that_imports_the_library_is_imported_afresh_with_it(tmp_path):
    """The model in a project module the example imports: the agent preloads that module too, and
    it holds the agent's flax; the child imports it afresh with flax, so a warm advise reaches
    the site."""
    path, line = _flax_checkpoint_site()
    shutil.copy(ADVISOR_FIXTURES / "linen_block.py", tmp_path / "linen_block.py")
    (tmp_path / "run_block.py").write_text(
        "import linen_block\n\n\ndef example():\n    return linen_block.example()\n", encoding="utf-8"
    )
    _, warm, _ = _in_an_agent_of_its_own(path, line, "run_block.py:example", tmp_path)
    assert warm.user_call is not None and Path(warm.user_call.path).name == "linen_block.py"


def test_an_installed_package_that_imports_the_sites_package_is_imported_afresh_with_it(
    tmp_path, monkeypatch
):
    """`stacklib` and a package of models on it (`stackmodels`, as levanter is on haliax) both
    installed (on the agent's PYTHONPATH): once the agent holds both, the child imports both
    afresh, or the models call the agent's copy of the site and a warm advise says `not_reached`."""
    packages = tmp_path / "site-packages"
    shutil.copytree(ADVISOR_FIXTURES / "library_site" / "site-packages" / "stacklib", packages / "stacklib")
    (packages / "stackmodels").mkdir()
    shutil.copy(ADVISOR_FIXTURES / "library_site" / "user_model.py", packages / "stackmodels" / "__init__.py")
    project = tmp_path / "project"
    project.mkdir()
    (project / "run_stack.py").write_text(
        "import stackmodels\n\n\ndef example():\n    return stackmodels.stack_example()\n", encoding="utf-8"
    )
    site = packages / "stacklib" / "blocks.py"
    line = line_of(site, "jax.checkpoint(body, policy=policy)")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(packages), os.environ.get("PYTHONPATH")]))
    )
    _in_an_agent_of_its_own(site, line, "run_stack.py:example", project)


def test_equinoxs_own_checkpoint_advises_warm_and_compiled(tmp_path):
    """Equinox registers its modules as pytrees as it imports: imported afresh in a warm agent's
    child, `eqx.filter_checkpoint`'s own `jax.checkpoint` is reached and every candidate compiles."""
    path, line = _installed_policy_keyword("equinox._ad", "_CheckpointWrapper.__call__")
    shutil.copy(ADVISOR_FIXTURES / "eqx_block.py", tmp_path / "eqx_block.py")
    _, _, compiled = _in_an_agent_of_its_own(path, line, "eqx_block.py:example", tmp_path, compile=True)
    assert compiled is not None and compiled.ok, compiled.message
    assert compiled.policies and all(entry.compiled is not None for entry in compiled.policies), [
        entry.compile_error for entry in compiled.policies
    ]

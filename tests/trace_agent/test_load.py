"""What the agent runs of the user's module, how it finds the policy, and what it reports."""

import pytest

from jax_lsp.core.jax_facts import installed_jax_version
from tests.agent import AGENT_FACTS, AGENT_PYTHON, line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX


def test_only_definitions_imports_and_needed_assignments_run(service, write, tmp_path):
    marker = tmp_path / "ran"
    path = write(
        "model.py",
        f"""
        import pathlib
        import jax

        MARK = pathlib.Path({str(marker)!r})
        MARK.with_suffix(".call").write_text("x")  # a top-level call
        UNUSED = MARK.with_suffix(".assign").write_text("x")  # an assignment the policy does not need
        SAVED = ("sin",)

        def policy(prim, *args, **params):
            return prim.name in SAVED

        for _ in range(1):
            MARK.with_suffix(".loop").write_text("x")

        if __name__ == "__main__":
            MARK.with_suffix(".main").write_text("x")
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.ok, result.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]
    assert {d.primitive for d in result.decisions if d.decision == "saved"} == {"sin"}


def test_workspace_root_is_importable(service, write, tmp_path):
    write("pkg/__init__.py", "")
    write(
        "pkg/policies.py",
        """
        def policy(prim, *args, **params):
            return prim.name == "exp"
    """,
    )
    path = write(
        "train/run.py",
        """
        import jax
        from pkg.policies import policy

        f = jax.checkpoint(lambda x: x, policy=policy)
    """,
    )
    result = service.trace(path, line_of(path, "policy=policy"), root=tmp_path)
    assert result.ok, result.message
    [saved] = [d for d in result.decisions if d.decision == "saved"]
    assert (saved.primitive, saved.path, saved.line) == ("exp", str(tmp_path / "pkg/policies.py"), 2)


def test_import_error_names_file_and_line(service, write):
    path = write(
        "model.py",
        """
        import jax
        import not_a_module_anywhere

        def policy(prim, *args, **params):
            return False
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.status == "import_error"
    assert result.message.startswith("model.py:2: ModuleNotFoundError")
    assert (result.error.path, result.error.line) == (path, 2)


def test_syntax_error_in_an_imported_module(service, write):
    write("helper.py", "def broken(:\n")
    path = write(
        "model.py",
        """
        import helper

        def policy(prim, *args, **params):
            return False
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.status == "import_error"
    assert "SyntaxError" in result.message and "helper.py:1" in result.message


def test_no_policy_at_the_line(service, write):
    path = write(
        "model.py",
        """
        import jax
        x = 1 + 1
    """,
    )
    result = service.trace(path, 1)
    assert result.status == "not_found"
    assert "No policy at model.py:1" in result.message


def test_nested_def_is_found_through_the_factory_site(service, write):
    path = write(
        "model.py",
        """
        import jax

        def make(name):
            def policy(prim, *args, **params):
                return prim.name == name
            return policy

        f = jax.checkpoint(lambda x: x, policy=make("tanh"))
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.ok, result.message
    assert {d.primitive for d in result.decisions if d.decision == "saved"} == {"tanh"}
    assert {d.line for d in result.decisions} == {line_of(path, "return prim.name")}


def test_site_value_in_a_function_that_cannot_be_evaluated(service, write):
    path = write(
        "model.py",
        """
        import jax

        def block(x, policy):
            return jax.checkpoint(lambda y: y, policy=policy)(x)
    """,
    )
    result = service.trace(path, line_of(path, "policy=policy"))
    assert result.status == "needs_run"  # valid code: the trace says what it needs (the advisor)
    assert result.message.startswith(
        "The policy at line 4 is made inside `block` as your code runs (name 'policy' is not defined outside it)"
    )


def test_return_lines_and_offload_memory(service, write):
    path = write(
        "model.py",
        """
        import jax
        from jax.ad_checkpoint import Offloadable

        def policy(prim, *args, **params):
            if prim is jax.lax.dot_general_p:
                return Offloadable(src="device", dst="pinned_host")
            if prim.name == "sin":
                return True
            return False
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.ok, result.message
    rows = {(d.primitive, d.decision, d.line, d.dst_space) for d in result.decisions}
    # Where the agent's JAX maps memory kinds itself, "pinned_host" is host memory and residuals
    # say where they are; older JAX hands the kind to XLA as written (facts: host_memory_kinds).
    mapped = AGENT_FACTS.host_memory_kinds is not None
    assert ("dot_general", "offloaded", 6, "host" if mapped else None) in rows
    assert ("sin", "saved", 8, None) in rows
    assert ("exp", "recomputed", 9, None) in rows
    assert result.residuals.host_bytes > 0 if mapped else result.residuals.host_bytes is None
    assert result.residuals.count == len(result.residuals.items)
    if AGENT_FACTS.offload_under_jit_on_cpu_error is None:
        assert result.modes == ("grad", "jit(grad)")
    else:  # this JAX cannot offload under jit on CPU: the trace says so, and is no failure
        assert result.modes == ("grad",)
        assert "not run under jit(grad)" in result.message
        assert AGENT_FACTS.offload_under_jit_on_cpu_error in result.message
    assert (result.jax_version, result.platform) == (installed_jax_version(AGENT_PYTHON), "cpu")


def test_probe_covers_the_primitive_kinds(service, write):
    path = write(
        "model.py",
        """
        def policy(prim, *args, **params):
            return False
    """,
    )
    result = service.trace(path, 1)
    seen = {d.primitive for d in result.decisions}
    assert {
        "dot_general",
        "conv_general_dilated",
        "sin",
        "exp",
        "tanh",
        "logistic",
        "mul",
        "add",
        "reduce_sum",
        "reduce_max",
        "reshape",
        "transpose",
        "broadcast_in_dim",
    } <= seen


def test_checkpoint_names_come_from_the_policy_and_its_factory(service, write):
    path = write(
        "model.py",
        """
        import jax
        cp = jax.checkpoint_policies
        f = jax.checkpoint(lambda x: x, policy=cp.save_only_these_names("attn_out", "mlp_in"))
    """,
    )
    result = service.trace(path, 3)
    assert result.ok, result.message
    assert set(result.names) == {"attn_out", "mlp_in"}
    saved = {(d.label, d.line) for d in result.decisions if d.decision == "saved"}
    assert saved == {("name:attn_out", None), ("name:mlp_in", None)}
    assert result.residuals.count >= 2


@pytest.mark.parametrize("dst", ["host", "cpu", "pinned-host"])
def test_offload_to_a_kind_jax_maps_to_device_memory(service, write, dst):
    path = write(
        "model.py",
        f"""
        import jax
        from jax.ad_checkpoint import Offloadable

        def policy(prim, *args, **params):
            if prim.name == "sin":
                return Offloadable(src="device", dst={dst!r})
            return False
    """,
    )
    result = service.trace(path, 4)
    assert result.ok
    if AGENT_FACTS.host_memory_kinds is None:  # this JAX maps no kind itself: nothing to claim
        assert not result.silent
        assert {d.dst_space for d in result.decisions if d.decision == "offloaded"} == {None}
        return
    [mistake] = result.silent
    assert (mistake.kind, mistake.line) == ("device_offload", 6)
    assert f"memory kind {dst!r} to device memory" in mistake.message
    assert result.residuals.host_bytes == 0


def test_string_comparison_that_never_matches(service, write):
    path = write(
        "model.py",
        """
        NAMES = {"sin", "not_a_primitive"}

        def policy(prim, *args, **params):
            if prim != "cos":
                return prim in NAMES
            return True
    """,
    )
    result = service.trace(path, 3)
    kinds = sorted((m.kind, m.line, m.column) for m in result.silent)
    assert kinds == [("string_compare", 4, 7), ("string_compare", 5, 15)]
    messages = " ".join(m.message for m in result.silent)
    assert "`prim != 'cos'` was True" in messages
    assert "`prim in NAMES` was False" in messages and "`sin`" in messages


def test_policy_none_or_false_is_nothing_saveable(service, write):
    path = write(
        "model.py",
        """
        import jax
        f = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.nothing_saveable())
    """,
    )
    result = service.trace(path, 2)
    assert result.ok
    assert [m.kind for m in result.silent] == ["falsy_policy"]


def test_runs_in_the_workspace_root(service, write, tmp_path):
    write("data/names.txt", "tanh\n")
    path = write(
        "src/model.py",
        """
        import pathlib

        NAMES = pathlib.Path("data/names.txt").read_text().split()

        def policy(prim, *args, **params):
            return prim.name in NAMES
    """,
    )
    result = service.trace(path, line_of(path, "def policy"), root=tmp_path)
    assert result.ok, result.message
    assert {d.primitive for d in result.decisions if d.decision == "saved"} == {"tanh"}


def test_anchors_include_policies_used_by_other_modules(write, tmp_path):
    from jax_lsp.engine import Workspace
    from jax_lsp.trace.locations import policy_anchors

    policies = write(
        "policies.py",
        """
        def policy(prim, *args, **params):
            return prim.name == "sin"

        def helper(x):
            return x
    """,
    )
    write(
        "train.py",
        """
        import jax
        from policies import policy

        f = jax.checkpoint(lambda x: x, policy=policy)
    """,
    )
    workspace = Workspace([tmp_path])
    workspace.index()
    assert [(a.line, a.kind) for a in policy_anchors(workspace, policies)] == [(1, "def")]


def test_form_feed_and_line_separator_do_not_shift_lines(tmp_path):
    from jax_lsp.trace.mapping import _line_span
    from jax_lsp.trace_agent.load import source_lines

    text = "x = 1\x0c\ny = '\u2028'\n    return z\n"
    path = tmp_path / "m.py"
    path.write_text(text, encoding="utf-8")
    assert source_lines(text)[2] == "    return z"
    span = _line_span(str(path), 3, {})
    assert (span.start.line, span.start.column, span.end.column) == (2, 4, 12)


def test_a_package_that_imports_the_module_back_is_no_circular_import(service, write, tmp_path):
    """haliax's `_src/scan.py`: its package's `__init__` imports it, and it imports the package.
    The module is loaded as an import loads it, its package first (`python -c "import lib.scan"`
    works; loading the module before its package made a circular import)."""
    write("lib/__init__.py", "from lib.scan import make\nfrom lib import other\n")
    write("lib/other.py", "SAVED = ('exp',)\n")
    path = write(
        "lib/scan.py",
        """
        import jax
        from lib.other import SAVED


        def policy(prim, *args, **params):
            return prim.name in SAVED


        def make(f):
            return jax.checkpoint(f, policy=policy)
    """,
    )
    result = service.trace(path, line_of(path, "def policy"), root=tmp_path)
    assert result.ok, result.message


def test_the_project_root_is_on_the_path_beside_the_modules_own_import_root(service, write, tmp_path):
    """As for `advise`: the project root first, then the folder above the site's outermost
    package (a script folder here), so a package at the root imports (`--root` with a site
    outside any package)."""
    write("rbpf/__init__.py", "SAVED = ('sin',)\n")
    path = write(
        "scripts/train.py",
        """
        import jax
        from rbpf import SAVED


        def policy(prim, *args, **params):
            return prim.name in SAVED
    """,
    )
    result = service.trace(path, line_of(path, "def policy"), root=tmp_path, import_root=tmp_path / "scripts")
    assert result.ok, result.message


def test_a_stub_put_in_sys_modules_serves_the_imports_after_it(service, write):
    """As an import of the module runs it: `sys.modules["name"] = stub` before `import name`."""
    path = write(
        "model.py",
        """
        import sys
        import types

        stub = types.ModuleType("fancy_logger")
        stub.SAVED = ("sin",)
        sys.modules["fancy_logger"] = stub

        import fancy_logger


        def policy(prim, *args, **params):
            return prim.name in fancy_logger.SAVED
    """,
    )
    result = service.trace(path, line_of(path, "def policy"))
    assert result.ok, result.message
    assert {d.primitive for d in result.decisions if d.decision == "saved"} == {"sin"}

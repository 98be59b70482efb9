"""Every policy entry of the advice equals what JAX's own `saved_residuals` lists for the same
function, inputs and policy: the site's `policy=` rewritten to the candidate, in a fresh module."""

from __future__ import annotations

import ast
import collections
import itertools
import math
import sys
import types
from pathlib import Path

import pytest

from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import (
    ADVISOR_FIXTURES,
    jax_kind,
    line_of,
    skip_unless_agent_runs_this_jax,
    skip_where_agent_lacks_imports,
)

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("equinox")

try:
    from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined, unused-ignore]
except ImportError:
    from jax._src.ad_checkpoint import saved_residuals

_fresh = itertools.count()

# fixture file -> the module attribute the example's positional arguments go to (None: an entry)
CASES = {
    "mlp.py": "block",
    "scan_stack.py": None,
    "linen_block.py": None,
    "nnx_block.py": None,
    "eqx_block.py": None,
    "llama_block.py": None,
}


def _with_policy(path: Path, line: int, policy: str) -> types.ModuleType:
    """The fixture module with the `policy=` value at ``line`` replaced by ``policy``."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    keyword = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.keyword) and n.arg == "policy" and n.value.lineno == line
    )
    lines = text.splitlines(keepends=True)
    value = keyword.value
    assert value.lineno == value.end_lineno
    row = lines[line - 1]
    lines[line - 1] = row[: value.col_offset] + policy + row[value.end_col_offset :]
    name = f"_advise_reference_{next(_fresh)}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    exec(compile("".join(lines), str(path), "exec"), module.__dict__)
    return module


def _reference(path: Path, line: int, policy: str, callable_name: str | None):
    module = _with_policy(path, line, policy)
    example = module.example()
    if callable_name is None:
        fn, args, kwargs = example["fn"], tuple(example["args"]), example.get("kwargs") or {}
    else:
        fn, args, kwargs = getattr(module, callable_name), tuple(example), {}
    return saved_residuals(fn, *args, **kwargs)


def _host(aval) -> bool:
    return "host" in str(getattr(aval, "memory_space", "")).lower()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_policy_keeps_what_jax_lists(service, name):
    path = ADVISOR_FIXTURES / name
    skip_unless_agent_runs_this_jax()
    skip_where_agent_lacks_imports(path)
    line = line_of(path)
    advice = advise(
        service,
        path,
        line,
        example=f"{name}:example",
        root=ADVISOR_FIXTURES,
        options=TraceOptions(timeout=120),
    )
    assert advice.ok, advice.message
    assert len(advice.policies) >= 5
    assert sum(p.current for p in advice.policies) == 1
    for entry in advice.policies:
        assert entry.error is None, (entry.policy, entry.error)
        expected = _reference(path, line, entry.policy, CASES[name])
        ours = collections.Counter((r.shape, r.dtype, r.memory, r.kind) for r in entry.residuals)
        theirs = collections.Counter(
            (tuple(a.shape), str(a.dtype), "host" if _host(a) else "device", jax_kind(d)) for a, d in expected
        )
        assert ours == theirs, entry.policy
        total = sum(math.prod(a.shape) * a.dtype.itemsize for a, _ in expected)
        assert entry.device_bytes + entry.host_bytes == total, entry.policy
        assert entry.host_bytes == sum(
            math.prod(a.shape) * a.dtype.itemsize for a, _ in expected if _host(a)
        ), entry.policy
        for residual, (_, description) in zip(entry.residuals, expected):  # both in JAX's order
            if description.startswith("named '"):
                assert residual.name == description.split("'")[1], entry.policy
            elif residual.name is not None:  # JAX describes the scan or jitted call that returns it
                assert description.startswith("output of "), (entry.policy, description)
        # every residual says why it is kept, and what reads it, on this JAX (test_reasons.py)
        assert all(r.reason is not None and r.used_by is not None for r in entry.residuals), entry.policy
        assert all(r.reason == "argument" for r in entry.residuals if r.kind == "argument"), entry.policy
        assert all(r.reason == "offloaded" for r in entry.residuals if r.memory == "host"), entry.policy


@pytest.mark.parametrize("root", [ADVISOR_FIXTURES, ADVISOR_FIXTURES.parents[2]], ids=["fixtures", "jax-lsp"])
def test_residuals_point_at_the_users_lines(service, root):
    """Also when the project is jax-lsp itself: the agent's own frames are never the user's."""
    path = ADVISOR_FIXTURES / "mlp.py"
    advice = advise(service, path, line_of(path), example=f"{path}:example", root=root)
    everything = next(p for p in advice.policies if p.policy.endswith("everything_saveable"))
    lines = {(r.name, r.line) for r in everything.residuals if r.kind == "computed"}
    assert ("h", line_of(path, '"h")')) in lines
    assert ("y", line_of(path, '"y")')) in lines
    assert all(r.path == str(path) for r in everything.residuals if r.kind == "computed")
    assert all(r.path is None and r.line is None for r in everything.residuals if r.kind == "argument")


def test_a_scan_reports_stacked_residuals_with_its_iterations(service):
    path = ADVISOR_FIXTURES / "scan_stack.py"
    advice = advise(service, path, line_of(path), example="scan_stack.py:example", root=ADVISOR_FIXTURES)
    current = advice.current
    assert current is not None and current.policy == "save_matmuls"
    stacked = [r for r in current.residuals if r.iterations is not None]
    assert stacked and all(r.iterations == 6 and r.shape[0] == 6 for r in stacked)
    assert all(r.line == line_of(path, "lax.scan(") for r in stacked)


def test_offloaded_residuals_are_host_memory_on_the_line_that_made_them(service):
    path = ADVISOR_FIXTURES / "mlp.py"
    advice = advise(service, path, line_of(path), example="mlp.py:example", root=ADVISOR_FIXTURES)
    offload = next((p for p in advice.policies if "save_and_offload_only_these_names" in p.policy), None)
    if offload is None:
        pytest.skip("the device has no pinned_host memory")
    host = [r for r in offload.residuals if r.memory == "host"]
    assert {r.line for r in host} == {line_of(path, '"h")'), line_of(path, '"y")')}
    assert offload.host_bytes == sum(r.bytes for r in host) > 0


def test_literals_are_listed_as_jax_lists_them(service):
    """The bf16 constants a model's top level multiplies by (`x * 0.5`, `x * jnp.bfloat16(2.0)`)
    are residuals "from a literal" to JAX; a plain replay of the forward jaxpr loses them."""
    path = ADVISOR_FIXTURES / "llama_block.py"
    skip_unless_agent_runs_this_jax()
    skip_where_agent_lacks_imports(path)
    line = line_of(path)
    advice = advise(service, path, line, example="llama_block.py:example", root=ADVISOR_FIXTURES)
    assert advice.ok, advice.message
    expected = _reference(path, line, advice.current.policy, None)
    assert [str(a.dtype) for a, d in expected if d == "from a literal"] == ["bfloat16", "bfloat16"]
    literals = [r for r in advice.current.residuals if r.kind == "literal"]
    assert [(r.shape, r.dtype, r.description) for r in literals] == [((), "bfloat16", "from a literal")] * 2
    # held whatever the policy: with the arguments, not in what the policy keeps
    assert advice.current.argument_bytes == sum(
        r.bytes for r in advice.current.residuals if r.kind != "computed"
    )

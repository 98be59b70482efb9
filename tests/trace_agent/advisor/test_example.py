"""A failing example, a shape mismatch, an import error...: a clear message anchored on the
example's or the user's line, never a traceback or an internal error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.request import advise
from tests.agent import AGENT_FACTS, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

MODEL = """
import jax
import jax.numpy as jnp
{extra}

def mlp(x, w):
    h = jnp.tanh(x @ w)
    return jnp.sum(h)


block = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)


def good():
    return jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((8, 8), jnp.float32)


def mismatched():
    return jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((3, 8), jnp.float32)


def failing():
    sizes = {{"d": 8}}
    return jax.ShapeDtypeStruct((4, sizes["d_model"]), jnp.float32)


def elsewhere():
    return {{"fn": lambda x: jnp.sum(x), "args": (jax.ShapeDtypeStruct((4,), jnp.float32),)}}
"""


def _model(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MODEL.format(extra=extra)).lstrip(), encoding="utf-8")
    return path


def _advise(service, path, example, **options):
    return advise(service, path, line_of(path), example=example, root=path.parent, **options)


def _no_traceback(advice):
    assert "Traceback" not in advice.message
    assert "Internal error" not in advice.message


def test_a_failing_example_is_anchored_on_its_line(service, tmp_path):
    path = _model(tmp_path)
    advice = _advise(service, path, "model.py:failing")
    assert advice.status == "example_error"
    assert "KeyError" in advice.message and "model.py:failing" in advice.message
    assert (advice.error_path, advice.error_line) == (str(path), line_of(path, 'sizes["d_model"]'))
    _no_traceback(advice)


def test_a_shape_mismatch_is_anchored_on_the_users_line(service, tmp_path):
    path = _model(tmp_path)
    advice = _advise(service, path, "model.py:mismatched")
    assert advice.status == "trace_error"
    assert "dot_general" in advice.message or "contracting" in advice.message
    assert (advice.error_path, advice.error_line) == (str(path), line_of(path, "x @ w"))
    _no_traceback(advice)


def test_an_import_error_is_anchored_on_the_import(service, tmp_path):
    path = _model(tmp_path, "import no_such_package_here")
    advice = _advise(service, path, "model.py:good")
    assert advice.status == "import_error"
    assert "no_such_package_here" in advice.message
    assert advice.error_line == line_of(path, "import no_such_package_here")
    _no_traceback(advice)


def test_an_example_that_never_reaches_the_site(service, tmp_path):
    path = _model(tmp_path)
    advice = _advise(service, path, "model.py:elsewhere")
    assert advice.status == "not_reached"
    assert advice.error_line == line_of(path)
    _no_traceback(advice)


def test_no_example_says_how_to_give_one(service, tmp_path):
    path = _model(tmp_path)
    advice = _advise(service, path, None)
    assert advice.status == "no_example"
    assert "--example" in advice.message and "jax-lsp: example=" in advice.message


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("model.py:nothing", "no function 'nothing'"),
        ("missing.py:good", "does not exist"),
        ("no_such_module:good", "not found"),
        ("model.py", "MODULE:FUNCTION"),
    ],
)
def test_an_example_that_cannot_be_found(service, tmp_path, spec, needle):
    path = _model(tmp_path)
    advice = _advise(service, path, spec)
    assert advice.status == "example_error"
    assert needle in advice.message
    _no_traceback(advice)


def test_a_line_without_a_site(service, tmp_path):
    path = _model(tmp_path)
    advice = advise(service, path, 1, example="model.py:good", root=tmp_path)
    assert advice.status == "not_found"
    _no_traceback(advice)


def test_a_policy_that_jax_rejects_is_an_entry_with_its_error(service, tmp_path):
    path = _model(tmp_path, "\n\ndef broken(prim, *_, **__):\n    return None\n")
    text = path.read_text().replace("policy=jax.checkpoint_policies.dots_saveable", "policy=broken")
    path.write_text(text)
    advice = _advise(service, path, "model.py:good")
    assert advice.ok
    current = advice.current
    assert current is not None and current.policy == "broken"
    # JAX's TypeError about the remat policy, or (older JAX) its bare assert
    rejected = AGENT_FACTS.invalid_return_error.split(": ", 1)[-1][:48]
    assert current.error is not None and rejected in current.error
    assert all(p.error is None for p in advice.policies if not p.current)
    entry = next(p for p in advice.to_contract(tmp_path)["policies"] if p["current"])
    numbers = ("device_bytes", "host_bytes", "argument_bytes", "computed_bytes", "recompute_flops")
    assert [entry[key] for key in numbers] == [None] * 5  # not 0: a script would read 0 as the best
    assert advice.suggest(2**40) is not None and not advice.suggest(2**40).current
    table = advice_table(advice, tmp_path).splitlines()
    [below] = [line for line in table if line.startswith("  broken: ")]
    assert rejected in below and len(below) <= 110
    assert table.index("Rejected by JAX:") == table.index(below) - 1


def test_a_module_from_an_example_module(service, tmp_path):
    path = _model(tmp_path)
    (tmp_path / "examples.py").write_text(
        "import jax\nimport jax.numpy as jnp\nimport model\n\n\ndef make():\n    return model.good()\n",
        encoding="utf-8",
    )
    advice = _advise(service, path, "examples:make")
    assert advice.ok, advice.message
    assert advice.example == "examples:make"


def test_the_new_remat_is_said_to_be_unsupported(tmp_path, monkeypatch):
    from jax_lsp.trace import TraceService

    monkeypatch.setenv("JAX_REMAT3", "1")
    path = _model(tmp_path)
    service = TraceService()
    try:
        advice = _advise(service, path, "model.py:good")
    finally:
        service.shutdown()
    assert advice.status == "unsupported"
    assert "jax_remat3" in advice.message


def test_an_example_in_a_package_by_its_dotted_name(service, tmp_path):
    path = _model(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "examples.py").write_text("import model\n\n\ndef make():\n    return model.good()\n")
    advice = _advise(service, path, "pkg.examples:make")
    assert advice.ok, advice.message


def test_positional_arguments_for_a_checkpoint_made_inside_a_function(service, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def forward(x):\n"
        "    return jax.checkpoint(jnp.sin, policy=jax.checkpoint_policies.dots_saveable)(x)\n\n\n"
        "def example():\n    return (jax.ShapeDtypeStruct((4,), jnp.float32),)\n"
    )
    advice = _advise(service, path, "model.py:example")
    assert advice.status == "example_error"
    assert '{"fn": entry' in advice.message and advice.error_line == line_of(path)

"""JAX118: decisions that are always true (Saveable, Recompute, Offloadable) combined as bools."""

from __future__ import annotations

import pytest

from tests.rules.site_rules import anchored_text, findings, grad_of_f

HEADER = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import Recompute, Saveable, checkpoint_name

cp = jax.checkpoint_policies
offload = cp.offload_dot_with_no_batch_dims("device", "pinned_host")
save_g = cp.save_only_these_names("g")


def sines(prim, *avals, **params):
    return Saveable if prim.name == "sin" else Recompute


def block(x):
    h = checkpoint_name(jnp.sin(x), "h")
    g = checkpoint_name(jnp.sin(h), "g")
    return jnp.sin(g) @ x

"""


def _code(body: str) -> str:
    return f"{HEADER}\ndef policy(prim, *a, **k):\n    {body}\n\n\nf = jax.checkpoint(block, policy=policy)\n"


@pytest.mark.parametrize(
    "body, reported",
    [
        ("return offload(prim, *a, **k) or save_g(prim, *a, **k)", "offload(prim, *a, **k)"),
        (
            'return cp.offload_dot_with_no_batch_dims("device", "pinned_host")(prim, *a, **k) or save_g(prim, *a, **k)',
            'cp.offload_dot_with_no_batch_dims("device", "pinned_host")(prim, *a, **k)',
        ),
        ("return any([sines(prim, *a, **k), save_g(prim, *a, **k)])", "sines(prim, *a, **k)"),
        (
            "decision = sines(prim, *a, **k) or save_g(prim, *a, **k)\n    return decision",
            "sines(prim, *a, **k)",
        ),
        ("return Recompute or save_g(prim, *a, **k)", "Recompute"),
    ],
    ids=["offload-name", "offload-inline", "any", "assigned", "constant"],
)
def test_a_true_decision_before_the_last_operand_is_found(body, reported, tmp_path):
    code = _code(body)
    [finding] = findings(code, tmp_path, "JAX118")
    assert anchored_text(code, finding) == reported
    grad_of_f(code)  # runs: the mistake is silent


def test_any_over_a_true_decision_saves_everything():
    """`any([...])` over `sines(...)` is True for every primitive: even the `cos` of sin's derivative is saved."""
    import io
    from contextlib import redirect_stdout

    import jax.numpy as jnp
    from jax.ad_checkpoint import print_saved_residuals

    def saved(body: str) -> str:
        namespace = grad_of_f(_code(body))
        printed = io.StringIO()
        with redirect_stdout(printed):
            print_saved_residuals(namespace["f"], jnp.ones((4, 4)))
        return printed.getvalue()

    assert "output of cos" in saved("return any([sines(prim, *a, **k), save_g(prim, *a, **k)])")
    assert "output of cos" not in saved("return save_g(prim, *a, **k)")


def test_a_policy_of_another_module_is_followed(tmp_path):
    (tmp_path / "policies.py").write_text(HEADER)
    code = (
        "import jax\nfrom policies import block, save_g, sines\n\n\n"
        "def policy(prim, *a, **k):\n    return sines(prim, *a, **k) or save_g(prim, *a, **k)\n\n\n"
        "f = jax.checkpoint(block, policy=policy)\n"
    )
    [finding] = findings(code, tmp_path, "JAX118", name="model.py")
    assert "`Saveable` or `Recompute`" in finding.message


@pytest.mark.parametrize(
    "body",
    [
        "return save_g(prim, *a, **k) or cp.dots_saveable(prim, *a, **k)",
        "return prim.name == 'sin' or sines(prim, *a, **k)",  # the decision is last: it decides
        "return save_g(prim, *a, **k) or offload(prim, *a, **k)",
        "d = sines(prim, *a, **k)\n    return save_g(prim, *a, **k) if d is Recompute else d",
        "return any([save_g(prim, *a, **k), prim.name == 'cos'])",
        "return unknown(prim) or save_g(prim, *a, **k)",
    ],
    ids=["bools", "decision-last", "offload-last", "explicit", "any-of-bools", "unknown"],
)
def test_bools_and_explicit_choices_are_not_reported(body, tmp_path):
    code = _code(body).replace("def policy", "unknown = load()\n\n\ndef policy")
    assert findings(code, tmp_path, "JAX118") == []

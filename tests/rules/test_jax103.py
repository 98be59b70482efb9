"""JAX103: a policy returns a value that is not a bool, Saveable, Recompute or Offloadable (a number,
or a policy instead of its decision)."""

from __future__ import annotations

import pytest

from tests.rules.site_rules import anchored_text, findings, fixed, grad_of_f


@pytest.mark.parametrize(
    "returned, expected_fix",
    [
        ("cp.nothing_saveable", "False"),
        ("cp.everything_saveable", "True"),
        ("cp.dots_saveable", "cp.dots_saveable(p, *shapes, **kw)"),
        (
            "jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims",
            "jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims(p, *shapes, **kw)",
        ),
        ('cp.save_only_these_names("inner")', 'cp.save_only_these_names("inner")(p, *shapes, **kw)'),
        ("helper", "helper(p, *shapes, **kw)"),
    ],
)
def test_a_returned_policy_is_found_and_the_fix_delegates_with_the_policy_own_names(
    returned, expected_fix, tmp_path
):
    code = f"""
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    cp = jax.checkpoint_policies


    def helper(prim, *avals, **params):
        return prim.name == "sin"


    def policy(p, *shapes, **kw):
        return {returned}


    f = jax.checkpoint(lambda x: jnp.sin(checkpoint_name(jnp.sin(x), "inner")) @ x, policy=policy)
    """
    [finding] = findings(code, tmp_path, "JAX103")
    assert anchored_text(code, finding) == returned
    assert "instead of a decision" in finding.message
    [fix] = finding.fixes
    assert fix.safe
    repaired = fixed(code, [finding])
    assert f"return {expected_fix}\n" in repaired
    with pytest.raises(TypeError, match="Value returned by a remat policy should be a bool"):
        grad_of_f(code)
    grad_of_f(repaired)
    assert findings(repaired, tmp_path, "JAX103") == []


def test_a_lambda_returning_a_policy_and_a_policy_with_bound_arguments(tmp_path):
    code = """
    import functools

    import jax
    import jax.numpy as jnp

    cp = jax.checkpoint_policies


    def chooser(save_dots, prim, *avals, **params):
        return cp.dots_saveable if save_dots else cp.nothing_saveable


    g = jax.checkpoint(lambda x: jnp.sin(x) @ x, policy=lambda prim, *a, **k: cp.dots_saveable)
    h = jax.checkpoint(lambda x: jnp.sin(x) @ x, policy=functools.partial(chooser, True))
    f = lambda x: g(x) + h(x)
    """
    found = findings(code, tmp_path, "JAX103")
    assert sorted(anchored_text(code, f) for f in found) == [
        "cp.dots_saveable",
        "cp.dots_saveable",
        "cp.nothing_saveable",
    ]
    repaired = fixed(code, found)
    assert "return cp.dots_saveable(prim, *avals, **params) if save_dots else False\n" in repaired
    assert "lambda prim, *a, **k: cp.dots_saveable(prim, *a, **k))" in repaired
    with pytest.raises(TypeError, match="Value returned by a remat policy should be a bool"):
        grad_of_f(code)
    grad_of_f(repaired)


def test_no_fix_when_the_signature_cannot_pass_the_arguments_on(tmp_path):
    code = """
    import jax

    def policy(prim, *avals):
        return jax.checkpoint_policies.dots_saveable

    f = jax.checkpoint(lambda x: x, policy=policy)
    """
    [finding] = findings(code, tmp_path, "JAX103")
    assert finding.fixes == ()
    assert "return its decision" in finding.message


def test_delegating_and_returning_decisions_is_silent(tmp_path):
    code = """
    import jax

    cp = jax.checkpoint_policies

    def make():
        return cp.dots_saveable

    def policy(prim, *avals, **params):
        return cp.dots_saveable(prim, *avals, **params) or prim.name == "sin"

    f = jax.checkpoint(lambda x: x, policy=policy)
    g = jax.checkpoint(lambda x: x, policy=make())
    """
    assert findings(code, tmp_path, "JAX103") == []


def test_int_valued_boolean_operation_is_reported_at_the_operand_it_returns(tmp_path):
    # Found by the crash hunt: `0 or 0` is an int, and the fix for a returned 0 or 1 read its
    # `.value` as if it were the constant itself (AttributeError: 'BoolOp' object ...). The
    # operands of `or` that can be the result are the values now: only the last `0` can be.
    code = """
    import jax

    def policy(prim, *avals, **params):
        if avals:
            return 0 or 0
        return 1


    f = jax.checkpoint(abs, policy=policy)
    """
    found = findings(code, tmp_path, "JAX103")
    assert [(anchored_text(code, f), [fix.title for fix in f.fixes]) for f in found] == [
        ("0", ["Return `False`"]),
        ("1", ["Return `True`"]),
    ]


def test_an_operand_that_cannot_be_the_result_is_not_reported(tmp_path):
    # `np.any(...) and Saveable or Recompute`: a false `np.any` ends the `and`, and the `or` then
    # moves on to `Recompute`, so the NumPy value is never what the policy returns.
    code = """
    import jax
    import numpy as np
    from jax.ad_checkpoint import Recompute, Saveable

    def policy(prim, *avals, **params):
        return np.any([a.ndim > 1 for a in avals]) and Saveable or Recompute


    f = jax.checkpoint(abs, policy=policy)
    """
    assert findings(code, tmp_path, "JAX103") == []
    grad_of_f(code.replace("abs", "jax.numpy.sin"))


# Follows the policy factories of libraries where JAX is optional and imported through a helper
# that returns the module, or None where the import fails (`jax = _get_jax()`, as zenith's JAX
# backend writes it): a placeholder policy where JAX is absent, and a policy per case elsewhere,
# each defined under the same name in its branch.
LAZY_FACTORY = """
import jax.numpy as jnp


def _get_jax():
    try:
        import jax
    except ImportError:
        return None
    return jax


def make_policy(kind):
    jax = _get_jax()
    if jax is None:

        def policy(prim, *args, **params):
            return None

        return policy
    if kind == "recompute":

        def policy(prim, *args, **params):
            return jax.checkpoint_policies.nothing_saveable

        return policy
    return jax.checkpoint_policies.dots_saveable


def f(x):
    jax = _get_jax()
    return jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), policy=make_policy("recompute"))(x)
"""


def test_a_lazy_jax_factory_is_followed_into_its_branches_but_the_one_without_jax(tmp_path):
    assert findings(LAZY_FACTORY, tmp_path, "JAX101") == []  # the branch where JAX is None
    [finding] = findings(LAZY_FACTORY, tmp_path, "JAX103")
    assert anchored_text(LAZY_FACTORY, finding) == "jax.checkpoint_policies.nothing_saveable"
    repaired = fixed(LAZY_FACTORY, [finding])
    assert "            return False\n" in repaired
    with pytest.raises(TypeError, match="Value returned by a remat policy should be a bool"):
        grad_of_f(LAZY_FACTORY)
    grad_of_f(repaired)
    assert findings(repaired, tmp_path, "JAX103") == []


@pytest.mark.parametrize(
    "guard, reported",
    [
        ("if jax is None:", False),
        ("if not jax:", False),
        ("if jax is not None:\n        return prim is jax.lax.cos_p\n    else:", False),
        ("if jax is not None and prim is jax.lax.cos_p:\n        return True\n    else:", True),
        ("if jax is not None:", True),  # JAX is there: the policy returns None to JAX
        ("if prim is None:", True),
    ],
)
def test_a_policy_branch_where_a_failed_import_left_jax_none_is_not_reported(guard, reported, tmp_path):
    code = f"""
try:
    import jax
except ImportError:
    jax = None


def policy(prim, *args, **params):
    {guard}
        return None
    return prim is jax.lax.sin_p


f = jax.checkpoint(lambda x: jax.numpy.sin(x), policy=policy)
"""
    assert bool(findings(code, tmp_path, "JAX101")) is reported

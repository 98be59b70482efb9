"""JAX103: a policy returns a value that is not a bool, Saveable, Recompute or Offloadable."""

from __future__ import annotations

from tests.rules.site_rules import anchored_text, findings


def test_int_valued_boolean_operation_is_reported_without_the_constant_fix(tmp_path):
    # Found by the crash hunt: `0 or 0` is an int, and the fix for a returned 0 or 1 read its
    # `.value` as if it were the constant itself (AttributeError: 'BoolOp' object ...).
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
        ("0 or 0", []),
        ("1", ["Return `True`"]),
    ]

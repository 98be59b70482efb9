"""JAX109: jax.checkpoint without the function to wrap, or with the policy positional."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tests.rules.site_rules import findings, fixed, grad_of_f

BODY = """
@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)
def f(x):
    return jnp.sin(jnp.sin(x))
"""


@pytest.mark.parametrize(
    "header, decorator",
    [
        ("import functools\nimport jax\nimport jax.numpy as jnp\n", "functools.partial"),
        ("import functools as ft\nimport jax\nimport jax.numpy as jnp\n", "ft.partial"),
        ("from functools import partial as bind\nimport jax\nimport jax.numpy as jnp\n", "bind"),
    ],
)
def test_existing_functools_imports_are_reused(header, decorator, tmp_path):
    code = header + BODY
    found = findings(code, tmp_path, "JAX109")
    assert [len(fix.edits) for f in found for fix in f.fixes] == [1]
    repaired = fixed(code, found)
    assert f"@{decorator}(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)\n" in repaired
    grad_of_f(repaired)


@pytest.mark.parametrize(
    "header, expected",
    [
        ("import jax\nimport jax.numpy as jnp\n", "import functools\nimport jax\n"),
        (
            "#!/usr/bin/env python\n# Licensed under the Apache License.\nimport jax\nimport jax.numpy as jnp\n",
            "#!/usr/bin/env python\n# Licensed under the Apache License.\nimport functools\nimport jax\n",
        ),
        ('"""Doc."""\nimport jax\nimport jax.numpy as jnp\n', '"""Doc."""\nimport functools\nimport jax\n'),
        (
            '"""Doc."""\nfrom __future__ import annotations\nimport jax; import jax.numpy as jnp\n',
            "from __future__ import annotations\nimport functools\nimport jax;",
        ),
    ],
)
def test_import_functools_is_added_after_docstring_and_future_imports(header, expected, tmp_path):
    code = header + BODY
    repaired = fixed(code, findings(code, tmp_path, "JAX109"))
    assert expected in repaired
    grad_of_f(repaired)


def test_multi_line_call_keeps_its_arguments(tmp_path):
    code = """
    import jax
    import jax.numpy as jnp


    @jax.remat(
        prevent_cse=False,  # inside a scan
        policy=jax.checkpoint_policies.dots_saveable,
    )
    def f(x):
        return jnp.sin(jnp.sin(x))
    """
    [finding] = findings(code, tmp_path, "JAX109")
    assert (finding.span.start.line + 1, finding.span.end.line + 1) == (6, 9)
    repaired = fixed(code, [finding])
    assert (
        "@functools.partial(jax.remat, prevent_cse=False,  # inside a scan\n"
        "    policy=jax.checkpoint_policies.dots_saveable)\n"
    ) in repaired
    grad_of_f(repaired)


def test_assigned_decorator_factory(tmp_path):
    code = """
    import jax
    import jax.numpy as jnp
    from jax import checkpoint as ckpt

    wrap = ckpt(policy=jax.checkpoint_policies.dots_saveable)
    f = wrap(lambda x: jnp.sin(jnp.sin(x)))
    """
    found = findings(code, tmp_path, "JAX109")
    assert [f.span.start.line + 1 for f in found] == [6]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'fun'"):
        grad_of_f(code)
    grad_of_f(fixed(code, found))


def test_positional_policy_with_more_arguments_has_no_fix(tmp_path):
    code = """
    import jax

    f = jax.checkpoint(abs, jax.checkpoint_policies.dots_saveable, True)
    """
    [finding] = findings(code, tmp_path, "JAX109")
    assert finding.fixes == ()


@pytest.mark.parametrize(
    "call, expected",
    [
        ("jax.checkpoint(abs, (p_ := p))", "jax.checkpoint(abs, policy=(p_ := p))"),
        ("jax.checkpoint((abs), ((p)))", "jax.checkpoint((abs), policy=((p)))"),
        ("jax.checkpoint(abs, (  # one, (\n    p))", "jax.checkpoint(abs, policy=(  # one, (\n    p))"),
        ("jax.checkpoint((abs), p)", "jax.checkpoint((abs), policy=p)"),
    ],
)
def test_parenthesized_positional_policy_gets_the_keyword_before_its_parentheses(call, expected, tmp_path):
    # Found by the crash hunt: the fix wrote `(policy=p_ := p)`, a syntax error.
    code = f"import jax\n\np = jax.checkpoint_policies.dots_saveable\nf = {call}\n"
    repaired = fixed(code, findings(code, tmp_path, "JAX109"))
    assert f"f = {expected}\n" in repaired
    ast.parse(repaired)


def test_function_given_partial_starred_nnx_eqx_and_noqa_are_silent(tmp_path):
    code = """
    import functools

    import equinox as eqx
    import jax
    from flax import nnx

    p = jax.checkpoint_policies.dots_saveable
    a = jax.checkpoint(abs, policy=p)
    b = jax.checkpoint(fun=abs, policy=p)
    c = functools.partial(jax.checkpoint, policy=p)
    d = jax.checkpoint(abs, *[p])
    e = nnx.remat(policy=p)
    g = eqx.filter_checkpoint(policy=p)
    h = jax.checkpoint(policy=p)  # noqa: JAX109
    """
    assert findings(textwrap.dedent(code), tmp_path, "JAX109") == []

"""Shared by the JAX105/106/107/109 tests: analyse a snippet, apply a rule's fixes, run under JAX."""

from __future__ import annotations

import textwrap

from jax_lsp.core import Finding, Settings, apply_edits
from jax_lsp.engine import analyze_text


def findings(code: str, tmp_path, rule: str, name: str = "m.py") -> list[Finding]:
    return analyze_text(textwrap.dedent(code), str(tmp_path / name), Settings(select=(rule,)))


def fixed(code: str, found: list[Finding]) -> str:
    return apply_edits(textwrap.dedent(code), [e for f in found for fix in f.fixes for e in fix.edits])


def anchored_text(code: str, finding: Finding) -> str:
    """The text a single-line finding is anchored on."""
    start, end = finding.span.start, finding.span.end
    assert start.line == end.line
    return textwrap.dedent(code).splitlines()[start.line][start.column : end.column]


def grad_of_f(code: str) -> dict:
    """Exec the module and differentiate its `f`, where JAX calls the policy."""
    import jax
    import jax.numpy as jnp

    namespace: dict = {"__name__": "snippet"}
    exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
    jax.grad(lambda x: jnp.sum(namespace["f"](x)))(jnp.ones((4, 4)))
    return namespace

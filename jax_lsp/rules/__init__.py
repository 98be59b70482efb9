"""The JAX1xx rules: one module per rule, each with its docs and VALID/INVALID examples."""

from __future__ import annotations

from jax_lsp.rules.base import Example, PolicyContext, Rule, SiteContext
from jax_lsp.rules.jax101_returns_none import ReturnsNone

ALL_RULES: list[Rule] = [
    ReturnsNone(),
]

_BY_CODE = {rule.code: rule for rule in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return _BY_CODE.get(code.upper())


__all__ = ["ALL_RULES", "Example", "PolicyContext", "Rule", "SiteContext", "get_rule"]

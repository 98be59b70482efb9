"""The JAX1xx rules: one module per rule, each with its docs and VALID/INVALID examples.

The registry of codes (`jax_lsp.core.codes.CODES`) is the one list of rules: each rule code
there names its module, `jax_lsp.rules.<code>_<name>` (`jax101_policy_returns_none`), which holds
one `Rule` subclass with that code. Nothing else lists them: the README's table, the docs pages
and the examples are generated from the registry and the modules (`python -m
jax_lsp.rules.generate`), and the tests hold them to it."""

from __future__ import annotations

import importlib

from jax_lsp.core.codes import CODES, Family
from jax_lsp.rules.base import Example, ModuleContext, PolicyContext, Project, Rule, SiteContext


def module_name(code: str, name: str) -> str:
    """`jax_lsp.rules.jax101_policy_returns_none` for JAX101, policy-returns-none."""
    return f"jax_lsp.rules.{code.lower()}_{name.replace('-', '_')}"


def _load_rules() -> list[Rule]:
    rules = []
    for code in CODES.values():
        if code.family is not Family.RULE:
            continue
        module = importlib.import_module(module_name(code.code, code.name))
        classes = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
        ]
        if len(classes) != 1 or classes[0].code != code.code:
            raise TypeError(f"{module.__name__} must define one Rule subclass with code {code.code}")
        rules.append(classes[0]())
    return rules


ALL_RULES: list[Rule] = _load_rules()

_BY_CODE = {rule.code: rule for rule in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return _BY_CODE.get(code.upper())


__all__ = [
    "ALL_RULES",
    "Example",
    "ModuleContext",
    "PolicyContext",
    "Project",
    "Rule",
    "SiteContext",
    "get_rule",
]

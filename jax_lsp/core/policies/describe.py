"""Hover text: what the policy under a position returns on each path."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.return_paths import return_paths
from jax_lsp.core.binding.scopes import FunctionNode
from jax_lsp.core.binding.values import Kind, classify
from jax_lsp.core.findings import Position, Span
from jax_lsp.core.jax_api import POLICY_FACTORIES, READY_MADE_POLICIES
from jax_lsp.core.policies.resolve import BuiltinPolicy, LiteralValue, PolicyFunction, ResolvedPolicy


@dataclass(frozen=True)
class ReturnDescription:
    line: int  # 0-based
    value: str
    verdict: str


@dataclass(frozen=True)
class PolicyDescription:
    name: str
    span: Span  # the range hovered
    path: str | None = None
    returns: tuple[ReturnDescription, ...] = ()
    builtin: str | None = None

    def markdown(self) -> str:
        if self.builtin is not None:
            return f"**`jax.checkpoint_policies.{self.name}`** (remat policy)\n\n{self.builtin}"
        where = f" in `{os.path.basename(self.path)}`" if self.path else ""
        lines = [f"**Remat policy `{self.name}`**{where}: what it returns on each path", ""]
        for item in self.returns:
            lines.append(f"- line {item.line + 1}: `{item.value}` — {item.verdict}")
        return "\n".join(lines)


def _verdict(module: Module, node: FunctionNode, value: ast.expr | None) -> str:
    if value is None:
        return "None: JAX rejects it"
    kind = classify(module, value, module.function_scope(node))
    verdicts = {
        Kind.BOOL: "a bool (True saves, False recomputes)",
        Kind.SAVEABLE: "Saveable: saved",
        Kind.RECOMPUTE: "Recompute: recomputed",
        Kind.OFFLOADABLE: "Offloadable: moved to another memory",
        Kind.UNKNOWN: "not known statically",
    }
    return verdicts.get(kind, f"{kind.value}: JAX rejects it")


def describe_function(function: PolicyFunction, span: Span) -> PolicyDescription:
    module, node = function.module, function.node
    paths = return_paths(node)
    returns = [
        ReturnDescription(
            module.source.span(anchor).start.line,
            module.source.segment(value) if value is not None else "return",
            _verdict(module, node, value),
        )
        for anchor, value in paths.values()
    ]
    if paths.falls_off_end and not isinstance(node, ast.Lambda):  # a lambda returns its expression
        last = node.body[-1]
        end_line = last.end_lineno or last.lineno
        returns.append(ReturnDescription(end_line - 1, "(end of body)", "None: JAX rejects it"))
    name = node.name if not isinstance(node, ast.Lambda) else "lambda"
    return PolicyDescription(name, span, module.path, tuple(returns))


def builtin_description(member: str) -> str:
    """What a member of `jax.checkpoint_policies` saves, from JAX's API catalogue."""
    if member in READY_MADE_POLICIES:
        return READY_MADE_POLICIES[member].does
    if member in POLICY_FACTORIES:
        return "factory: " + POLICY_FACTORIES[member].does
    return ""


def describe_target(target: PolicyFunction | BuiltinPolicy, span: Span) -> PolicyDescription:
    if isinstance(target, BuiltinPolicy):
        return PolicyDescription(target.member, span, builtin=builtin_description(target.member))
    return describe_function(target, span)


def _contains(span: Span, position: Position) -> bool:
    return span.start <= position <= span.end


def _innermost_name(module: Module, value: ast.expr, position: Position) -> ast.expr:
    best = value
    for node in ast.walk(value):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Lambda)) and _contains(
            module.source.span(node), position
        ):
            if module.source.span(node).start >= module.source.span(best).start:
                best = node
    return best


def _names(target: PolicyFunction | BuiltinPolicy, hovered: ast.expr) -> bool:
    if isinstance(target, BuiltinPolicy):
        return target.expr is hovered or (
            isinstance(hovered, ast.Attribute) and hovered.attr == target.member
        )
    if isinstance(hovered, ast.Lambda):
        return target.node is hovered
    name = hovered.id if isinstance(hovered, ast.Name) else getattr(hovered, "attr", None)
    return getattr(target.node, "name", None) == name


def describe_at(
    module: Module,
    targets_here: list[tuple[ast.expr, list[ResolvedPolicy]]],
    functions: list[PolicyFunction],
    position: Position,
) -> PolicyDescription | None:
    """`targets_here`: each site value of this module with its resolved targets;
    `functions`: the policy functions defined in this module (reached from anywhere)."""
    source = module.source
    for value, targets in targets_here:
        if not _contains(source.span(value), position):
            continue
        hovered = _innermost_name(module, value, position)
        for target in targets:
            if isinstance(target, LiteralValue):
                continue  # nothing to describe: JAX111 says what is wrong with it
            if _names(target, hovered):
                return describe_target(target, source.span(hovered))
    for function in functions:
        node = function.node
        span = source.span(node) if isinstance(node, ast.Lambda) else source.name_span(node)
        if _contains(span, position):
            return describe_function(function, span)
    return None

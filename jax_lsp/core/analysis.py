"""Running the rules over modules: policy bodies, sites and module-wide checks."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable

from jax_lsp.core.config import Settings
from jax_lsp.core.model import Finding
from jax_lsp.core.module import Module
from jax_lsp.core.paths import return_paths
from jax_lsp.core.resolve import PolicyFunction, Target, resolve_site
from jax_lsp.core.sites import Site, find_sites

NOQA_COMMENT = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def noqa_codes(line: str) -> set[str] | None:
    """None: no noqa; empty set: a bare `# noqa`; else the codes it names."""
    match = NOQA_COMMENT.search(line)
    if not match:
        return None
    codes = match.group("codes")
    return set(re.split(r"[,\s]+", codes.upper().strip())) if codes else set()


def _suppressed(module: Module, finding: Finding) -> bool:
    codes = noqa_codes(module.source.line_text(finding.span.start.line))
    return codes is not None and (not codes or finding.code in codes)


def resolved_sites(module: Module) -> list[tuple[Site, list[Target]]]:
    return [(site, resolve_site(site)) for site in find_sites(module)]


def check_module(
    module: Module,
    sites: list[tuple[Site, list[Target]]],
    foreign_policies: Iterable[PolicyFunction],
    settings: Settings,
) -> list[Finding]:
    """Every finding anchored in `module`.

    `sites` are this module's own resolved sites; `foreign_policies` the policy
    functions defined here that sites in other modules reach."""
    from jax_lsp.rules import ALL_RULES, PolicyContext, SiteContext

    rules = [rule for rule in ALL_RULES if settings.enabled(rule.code)]
    findings: list[Finding] = list(module.source.problems)

    policies: dict[tuple, PolicyContext] = {}
    local = [t for _, targets in sites for t in targets if isinstance(t, PolicyFunction)]
    for function in [*local, *foreign_policies]:
        if function.module is not module:
            continue
        context = policies.get(function.key)
        if context is None:
            context = policies[function.key] = PolicyContext(function, return_paths(function.node), False)
        context.in_save_from_both |= function.in_save_from_both
        if function.reached_from not in context.reached_from:
            context.reached_from.append(function.reached_from)

    for rule in rules:
        for context in policies.values():
            related = tuple(context.reached_from)
            findings.extend(replace(f, related=related) for f in rule.check_policy(context))
        for site, targets in sites:
            findings.extend(rule.check_site(SiteContext(site, targets)))
        findings.extend(rule.check_module(module))

    result = []
    seen = set()
    for finding in findings:
        if finding.code.startswith("JAX1") and _suppressed(module, finding):
            continue
        severity = settings.severity_of(finding.code, finding.severity)
        finding = replace(finding, severity=severity) if severity != finding.severity else finding
        identity = (finding.code, finding.span, finding.message)
        if identity not in seen and (settings.enabled(finding.code) or finding.code.startswith("JAX0")):
            seen.add(identity)
            result.append(finding)
    return sorted(result, key=lambda f: f.sort_key)

"""Running the rules over modules: policy bodies, sites and module-wide checks."""

from __future__ import annotations

from collections.abc import Iterable

from jax_lsp.core.binding.guards import paths_with_jax
from jax_lsp.core.binding.module import Module
from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Finding, InternalError
from jax_lsp.core.guard import guarded
from jax_lsp.core.policies.resolve import (
    PolicyFunction,
    ResolvedPolicy,
    resolve_site,
    table_members,
    unselected_entries,
)
from jax_lsp.core.policies.sites import Site, find_sites
from jax_lsp.core.policies.tables import TableChoice, choices_note
from jax_lsp.engine.selection import admitted
from jax_lsp.rules import ALL_RULES, ModuleContext, PolicyContext, Project, SiteContext


def could_give_findings(site: Site) -> bool:
    """Whether a call could give findings as a site, whatever checkpoint it is: it passes no
    function (JAX109), or its policy leads somewhere (a definition, a member of
    `jax.checkpoint_policies`, a literal, a policy table), which the rules read. One whose policy
    leads nowhere the analysis can follow (a parameter, an attribute) gives none: no rule has
    anything to read, whether or not the call is a checkpoint."""
    return site.missing_function or bool(resolve_site(site)) or bool(table_members(site))


def resolved_sites(
    module: Module, errors: list[InternalError], findings_only: bool = False
) -> list[tuple[Site, list[ResolvedPolicy]]]:
    """Each site with the definitions its policy reaches; a site that cannot be resolved
    (an analysis bug) keeps no targets and adds an InternalError. `findings_only`: a callee
    only jedi could name is not asked about where the call could give no finding (a check that
    reports findings, not one whose sites are traced, hovered or advised on)."""
    path = module.path

    def worth_naming(site: Site) -> bool:
        line = site.call.lineno - 1
        return guarded(lambda: could_give_findings(site), True, errors, path, line, "resolving the policy")

    sites: list[Site] = guarded(
        lambda: find_sites(module, worth_naming if findings_only else None),
        [],
        errors,
        path,
        0,
        "finding the policy sites",
    )
    return [
        (
            site,
            guarded(
                lambda: resolve_site(site), [], errors, path, site.call.lineno - 1, "resolving the policy"
            ),
        )
        for site in sites
    ]


def _one_per_place(found: list[Finding], targets: list[ResolvedPolicy], here: str) -> list[Finding]:
    """A rule's findings at one site, with the findings that table entries chosen by a run-time
    key give at one place (the site, when the table is in another file) merged into one that
    names every such key. A finding of a chosen entry ends with that entry's note."""
    choices = list(dict.fromkeys(t.chosen_by for t in targets if t.chosen_by is not None))
    if len(choices) < 2:
        return found
    merged: dict[tuple[str, object], tuple[Finding, list[TableChoice]]] = {}
    result: list[Finding] = []
    for finding in found:
        choice = next((c for c in choices if finding.message.endswith(c.note(here))), None)
        if choice is None:
            result.append(finding)
            continue
        place = (finding.code, finding.span)
        if place not in merged:
            merged[place] = (finding.replace(message=finding.message[: -len(choice.note(here))]), [])
        if choice not in merged[place][1]:
            merged[place][1].append(choice)
    for first, chosen in merged.values():
        # The first entry's fix would mend one key of several: offered only for a lone key.
        fixes = first.fixes if len(chosen) == 1 else ()
        result.append(first.replace(message=first.message + choices_note(chosen, here), fixes=fixes))
    return result


def _unselected_members(
    module: Module, sites: list[tuple[Site, list[ResolvedPolicy]]], errors: list[InternalError]
) -> list[tuple[Site, list[ResolvedPolicy]]]:
    """Each site with the members of this module's policy tables that its constant keys leave
    unselected (those of a table in another module are left to that module's own sites)."""
    result = []
    for site, _ in sites:
        none: list[ResolvedPolicy] = []
        members = guarded(
            lambda: unselected_entries(site),
            none,
            errors,
            module.path,
            site.call.lineno - 1,
            "finding the policy table's other members",
        )
        here = [t for t in members if t.chosen_by is not None and t.chosen_by.path == module.path]
        if here:
            result.append((site, here))
    return result


def reached_elsewhere(
    sites: list[tuple[Site, list[ResolvedPolicy]]], errors: list[InternalError]
) -> list[tuple[Site, list[ResolvedPolicy]]]:
    """Each site with what it reaches outside its own module: the policy functions it resolves
    to, and the members of other modules' policy tables that it looks up, however its key is
    given (those written in the table itself: a finding about one goes there)."""
    result = []
    for site, targets in sites:
        here = site.module.path
        reached: list[ResolvedPolicy] = [
            t for t in targets if isinstance(t, PolicyFunction) and t.module.path != here
        ]
        if any(t.module.path != here for t in targets):  # it may look up a table elsewhere
            none: list[ResolvedPolicy] = []
            members = guarded(
                lambda: table_members(site),
                none,
                errors,
                here,
                site.call.lineno - 1,
                "finding the policy table's members",
            )
            reached += [
                t
                for t in members
                if t.module.path != here
                and t not in reached
                and (
                    isinstance(t, PolicyFunction)
                    or t.chosen_by is not None
                    and t.chosen_by.path == t.module.path
                )
            ]
        if reached:
            result.append((site, reached))
    return result


def _at_member(finding: Finding, members: list[ResolvedPolicy], findings: list[Finding]) -> bool:
    """A finding about an unselected table member: kept where it lies in the member (not on
    the site) and that place has no finding of the rule yet."""
    inside = any(
        t.chosen_by is not None and t.chosen_by.entry.start <= finding.span.start <= t.chosen_by.entry.end
        for t in members
    )
    return inside and not any(f.code == finding.code and f.span == finding.span for f in findings)


def _policy_contexts(
    module: Module, functions: list[PolicyFunction], errors: list[InternalError], project: Project
) -> dict[tuple, PolicyContext]:
    """One `PolicyContext` per policy function of `module` among `functions`, with every site
    and table entry that reaches it (a function whose returns cannot be found has none)."""
    policies: dict[tuple, PolicyContext] = {}
    for function in functions:
        if function.module is not module:
            continue
        context = policies.get(function.key)
        if context is None:
            paths = guarded(
                lambda: paths_with_jax(module, function.node),
                None,
                errors,
                module.path,
                function.node.lineno - 1,
                "finding the policy's returns",
            )
            if paths is None:
                continue
            context = policies[function.key] = PolicyContext(function, paths, False, project)
        context.in_save_from_both |= function.in_save_from_both
        if function.reached_from not in context.reached_from:
            context.reached_from.append(function.reached_from)
        if function.chosen_by is not None and function.chosen_by not in context.chosen_by:
            context.chosen_by.append(function.chosen_by)
    return policies


def check_module(
    module: Module,
    sites: list[tuple[Site, list[ResolvedPolicy]]],
    foreign: Iterable[tuple[Site, list[ResolvedPolicy]]],
    settings: Settings,
    errors: list[InternalError],
    project: Project,
) -> list[Finding]:
    """Every finding anchored in `module`.

    `sites` are this module's own resolved sites; `foreign` the sites of other modules, each
    with what it reaches here (`reached_elsewhere`): policy functions, and members of this
    module's policy tables, checked at the member. A rule that fails on one policy or site
    loses only that, and adds an InternalError to `errors`."""
    rules = [rule for rule in ALL_RULES if settings.enabled(rule.code)]
    findings: list[Finding] = []

    unselected = _unselected_members(module, sites, errors)
    foreign_policies: list[PolicyFunction] = []
    for site, targets in foreign:
        foreign_policies += [t for t in targets if isinstance(t, PolicyFunction)]
        members: list[ResolvedPolicy] = [
            t for t in targets if not isinstance(t, PolicyFunction) and t.module is module
        ]
        if members:  # the site as seen from here: no policy value of its own in this module
            here = site.replace(module=module, value=None, positional_policy=False, missing_function=False)
            unselected.append((here, members))
    local = [t for _, targets in [*sites, *unselected] for t in targets if isinstance(t, PolicyFunction)]
    policies = _policy_contexts(module, [*local, *foreign_policies], errors, project)

    def run(check, line: int, what: str) -> list[Finding]:
        return guarded(lambda: list(check()), [], errors, module.path, line, f"{rule.code} on {what}")

    # Table entries of this module that lookups with an unknown key may choose.
    entries = dict.fromkeys(
        t.chosen_by
        for _, targets in sites
        for t in targets
        if t.chosen_by and t.chosen_by.path == module.path
    )

    for rule in rules:
        for context in policies.values():
            related = tuple(context.reached_from)
            line = context.node.lineno - 1
            found = run(lambda: rule.check_policy(context), line, "a policy")
            note = choices_note(context.chosen_by, module.path)
            findings.extend(f.replace(related=related, message=f.message + note) for f in found)
        for site, targets in sites:
            found = run(
                lambda: rule.check_site(SiteContext(site, targets, project)), site.call.lineno - 1, "a site"
            )
            findings.extend(_one_per_place(found, targets, module.path))
        for site, members in unselected:
            chosen = members[0].chosen_by
            line = (
                site.call.lineno - 1 if site.value is not None or chosen is None else chosen.entry.start.line
            )
            found = run(lambda: rule.check_site(SiteContext(site, members, project)), line, "a table")
            findings.extend(f for f in found if _at_member(f, members, findings))
        for finding in run(lambda: rule.check_module(ModuleContext(module, project)), 0, "the module"):
            note = choices_note(
                [c for c in entries if c.entry.start <= finding.span.start <= c.entry.end], module.path
            )
            findings.append(finding.replace(message=finding.message + note) if note else finding)

    # The file's problems last: following a name may have parsed a deferred definition.
    source = module.source
    result = admitted([*source.problems, *findings], settings, lambda _, line: source.line_text(line))
    return sorted(result, key=lambda f: f.sort_key)

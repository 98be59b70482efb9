"""The names the site's policy lists that change nothing, each with the reason, decided by tracing.

A listed name changes nothing when the policy without it keeps the same residuals (shape, dtype,
memory) and recomputes the same FLOPs. Why, from the forward trace: no ``checkpoint_name`` of it
runs inside the marked checkpoint (``not_produced``: tagged outside it, or nowhere); it runs
there but the backward pass never reads it, as ``save_only_these_names(name)`` alone keeps no
value of that name (``not_needed``); or the rest of the policy keeps the same residuals without
it (``kept_otherwise``).

Under the new remat (``jax_remat3``) the advisor traces no candidate, but one reason is still
decided, by JAX's own ``saved_residuals`` of the example with the site's checkpoints given each
policy: ``new_remat``, a listed name that changes nothing because the new remat ignores the
whole policy (in JAX 0.10 and 0.11 it ignores every callable policy, ``save_from_both_policies``
included). The policy keeps what ``nothing_saveable`` keeps, the policy without the name keeps
the same, and ``save_only_these_names(name)`` alone keeps a value of that name.
"""

from __future__ import annotations

import ast

import jax

from .candidates import Candidate, same_policy
from .jaxpr import name_places, substitute

POLICIES = jax.checkpoint_policies


def _closure(policy):
    code = getattr(policy, "__code__", None)
    cells = getattr(policy, "__closure__", None) or ()
    return dict(zip(code.co_freevars, (c.cell_contents for c in cells))) if code is not None else {}


def _factory(policy):
    """The factory of ``jax.checkpoint_policies`` that made ``policy``, by its class or qualname."""
    name = type(policy).__name__
    if name in ("SaveOnlyTheseNames", "SaveAnyNamesButThese"):
        return name
    return getattr(policy, "__qualname__", "").split(".<locals>", 1)[0]


def listed_names(policy):
    """(name, role, the policy without that name) for each name ``policy`` lists; role is
    ``saved``, ``offloaded`` or ``excluded``. Ready-made name policies and their
    ``save_from_both_policies`` combinations only; anything else lists no name."""
    factory, cells = _factory(policy), _closure(policy)
    if factory == "SaveOnlyTheseNames" or factory == "save_only_these_names":
        names = (
            policy.saveable_names if factory == "SaveOnlyTheseNames" else cells["names_which_can_be_saved"]
        )
        for name in sorted(names):
            yield name, "saved", POLICIES.save_only_these_names(*(n for n in names if n != name))
    elif factory == "SaveAnyNamesButThese" or factory == "save_any_names_but_these":
        names = policy.names if factory == "SaveAnyNamesButThese" else cells["names_not_to_save"]
        for name in sorted(names):
            yield name, "excluded", POLICIES.save_any_names_but_these(*(n for n in names if n != name))
    elif factory == "save_and_offload_only_these_names":
        lists = {
            "saved": cells["names_which_can_be_saved"],
            "offloaded": cells["names_which_can_be_offloaded"],
        }
        for role, names in lists.items():
            for name in sorted(names):
                kept = {r: [n for n in ns if not (r == role and n == name)] for r, ns in lists.items()}
                yield (
                    name,
                    role,
                    POLICIES.save_and_offload_only_these_names(
                        names_which_can_be_saved=kept["saved"],
                        names_which_can_be_offloaded=kept["offloaded"],
                        offload_src=cells["offload_src"],
                        offload_dst=cells["offload_dst"],
                    ),
                )
    elif factory == "save_from_both_policies":
        first, second = cells["policy_1"], cells["policy_2"]
        for name, role, without in listed_names(first):
            yield name, role, POLICIES.save_from_both_policies(without, second)
        for name, role, without in listed_names(second):
            yield name, role, POLICIES.save_from_both_policies(first, without)


def _signature(entry):
    """What "the same residuals" compares: each residual's shape, dtype and memory, in any order."""
    return sorted((tuple(r["shape"]), r["dtype"], r["memory"]) for r in entry["residuals"])


def _unchanged(entry, other):
    return _signature(entry) == _signature(other) and entry["recompute_flops"] == other["recompute_flops"]


def _without_text(site, name):
    """The site's ``policy=`` value as written, with its one string literal ``name`` (and the
    comma after or before it, and its line where nothing else is on it) removed; None where
    ``name`` is not written there exactly once."""
    text, value = site.text, site.value
    found = [
        (parent, node)
        for parent in ast.walk(value)
        for node in (
            parent.args
            if isinstance(parent, ast.Call)
            else parent.elts
            if isinstance(parent, (ast.List, ast.Tuple, ast.Set))
            else ()
        )
        if isinstance(node, ast.Constant) and node.value == name
    ]
    if len(found) != 1 or value.end_lineno is None:
        return None
    parent, node = found[0]
    lines = text.splitlines(keepends=True)

    def offset(line, column):  # ast columns are UTF-8 byte offsets
        return sum(len(row) for row in lines[: line - 1]) + len(lines[line - 1].encode()[:column].decode())

    start, end = offset(value.lineno, value.col_offset), offset(value.end_lineno, value.end_col_offset)
    cut_start, cut_end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
    after = text[cut_end:end]
    stripped = after.lstrip()
    if stripped.startswith(","):
        cut_end += len(after) - len(stripped) + 1
        cut_end += len(text[cut_end:end]) - len(text[cut_end:end].lstrip(" "))
    else:
        before = text[start:cut_start].rstrip()
        if before.endswith(","):
            cut_start = start + len(before) - 1
    line_start = text.rfind("\n", start, cut_start) + 1
    line_end = text.find("\n", cut_end, end)
    if (
        line_start > start
        and line_end >= 0
        and not (text[line_start:cut_start] + text[cut_end:line_end]).strip()
    ):
        cut_start, cut_end = line_start, line_end + 1  # the name alone on its line: the line goes
    return text[start:cut_start] + text[cut_end:end]


def no_effect(site, current, entries, forward, frames, run):
    """The ``no_effect`` entries of the ``current`` candidate (its answer entry is in ``entries``,
    by candidate) in the `Forward` ``forward``. ``run(candidate)`` answers a candidate's entry;
    candidates already in ``entries`` are not traced again."""
    value = current.value if current.value is not None else site_policy(site)
    if value is None or any(not same_policy(m.value, value) for m in site.markers):
        return []
    mine = entries[current]
    if mine.get("error") is not None:
        return []
    places = name_places(forward.jaxpr)

    def entry_of(policy, text):
        known = next((e for c, e in entries.items() if same_policy(c.value, policy)), None)
        return known if known is not None else run(Candidate(text, policy))

    found = []
    for name, role, without in listed_names(value):
        if not _unchanged(mine, entry_of(without, "without")):
            continue
        inside, outside = places.get(name, ((), ()))
        if not inside:
            reason = "not_produced"
        else:
            alone = entry_of(POLICIES.save_only_these_names(name), "alone")
            if alone.get("error") is not None:
                continue  # cannot tell whether the backward pass reads it
            reason = "kept_otherwise" if any(r["name"] == name for r in alone["residuals"]) else "not_needed"
        text = _without_text(site, name)
        if text is not None and not _checked(text, site, mine, entry_of):
            text = None
        outside_lines = [{"path": p, "line": n} for p, n in (frames.line_of(s) for s in outside) if p]
        found.append(_entry(name, role, reason, outside_lines if reason == "not_produced" else (), text))
    return found


def site_policy(site):
    """The policy the site's checkpoints were given (the first marker's value; None for JAX's
    default)."""
    return site.markers[0].value if site.markers else None


def _entry(name, role, reason, tagged_outside=(), without=None):
    return {
        "name": name,
        "role": role,
        "reason": reason,
        "tagged_outside": list(tagged_outside),
        "without": without,
    }


def ignored_by_new_remat(site, forward, leaves):
    """Under ``jax_remat3``: the ``no_effect`` entries (reason ``new_remat``) of the names the
    site's policy lists that the new remat ignores, each proven by ``saved_residuals``."""
    from jax._src.ad_checkpoint import saved_residuals  # private: only the print is public

    value = site_policy(site)
    if value is None or any(not same_policy(m.value, value) for m in site.markers):
        return []

    def kept(policy):
        jaxpr = substitute(forward.jaxpr, lambda marker: policy, {})
        return saved_residuals(forward.replay(jaxpr), *leaves)

    def signature(residuals):  # shape, dtype and memory of each, in any order
        return sorted(str(aval) for aval, _ in residuals)

    mine = signature(kept(value))
    if mine != signature(kept(POLICIES.nothing_saveable)):
        return []  # the new remat honours the policy, or part of it
    found = []
    for name, role, without in listed_names(value):
        if signature(kept(without)) != mine:
            continue
        alone = kept(POLICIES.save_only_these_names(name))
        if any(description.startswith(f"named '{name}'") for _, description in alone):
            found.append(_entry(name, role, "new_remat"))
    return found


def _checked(text, site, mine, entry_of):
    """Whether the policy ``text`` evaluates, in the site's module, to one that keeps what the
    current policy keeps."""
    namespace = dict(site.namespace)
    namespace.setdefault("jax", jax)
    try:
        policy = eval(compile(text, "<policy>", "eval"), namespace)
        return _unchanged(mine, entry_of(policy, text))
    except Exception:
        return False

"""The values a written policy decides on, grouped as a name-based policy can name them: by their
`checkpoint_name` tag, and where a value has none, by the expression that made it (which the
written policy's edit then tags), and the tags that name them.

Only values a policy decides on are grouped: those the ready-made policies keep because the
policy said so (`reason` ``policy``, ``named`` or ``offloaded``). What JAX keeps whatever the
policy (arguments, a checkpoint's inputs and outputs) is no choice, and a value made in a file
that is not the user's (an installed library's) cannot be tagged there: a name-based policy
recomputes it.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jax_lsp.core.tags.adding import (
    TaggedFile,
    ValuePlace,
    add_tags,
    named_already,
    suggested_name,
    tag_node,
    unique_name,
)
from jax_lsp.trace.advisor.write.requests import Overlay

# The ready-made policies whose residuals show every value a policy may keep: everything a step
# needs, the matmuls' outputs (which everything_saveable keeps as what follows them), without
# their batch dimensions.
FINDERS = tuple(
    f"jax.checkpoint_policies.{name}"
    for name in ("everything_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable")
)
DECIDED = ("policy", "named", "offloaded")  # a residual's reasons that are the policy's decision
_TAGGED = re.compile(r"""checkpoint_name\s*\([^()]*?,\s*(?:name\s*=\s*)?['"](\w+)['"]""")


@dataclass(frozen=True)
class ValueGroup:
    """The values one name of a written policy decides on: an existing tag's (``place`` None), or
    those made by one expression of the user's code, which a tag of ``name`` is added to."""

    name: str
    path: str | None = None  # the file of the expression to tag
    place: ValuePlace | None = None

    @property
    def added(self) -> bool:
        """Whether the written policy's edit adds this group's tag."""
        return self.place is not None


@dataclass
class TagPlan:
    """The groups of a site's values and the files their added tags edit (their texts as read)."""

    groups: list[ValueGroup]
    texts: dict[str, str] = field(default_factory=dict)  # path -> the file's text before the edit

    def tagged(self, names: Iterable[str]) -> dict[str, TaggedFile]:
        """Each file with the tags of ``names`` added (only the added groups' names edit files)."""
        wanted = set(names)
        places: dict[str, dict[ValuePlace, str]] = {}
        for group in self.groups:
            if group.added and group.name in wanted and group.path is not None and group.place is not None:
                places.setdefault(group.path, {})[group.place] = group.name
        return {path: add_tags(path, self.texts[path], named) for path, named in places.items()}

    def overlay(self, names: Iterable[str], site_path: str, site_line: int) -> Overlay | None:
        """The files as the tags of ``names`` leave them, for a request about the site at
        ``site_line`` of ``site_path``: every file a tag of the plan edits, as it is where none of
        ``names`` does (the same files given to every request of a search, so that the agent's
        warm modules hold none of them); None where the plan edits no file."""
        tagged = self.tagged(names)
        files = dict.fromkeys(g.path for g in self.groups if g.added and g.path is not None)
        if not files:
            return None
        site = tagged.get(site_path)
        line = site.line_after(site_line) if site is not None else site_line
        return Overlay(
            {path: tagged[path].text if path in tagged else self.texts[path] for path in files}, line
        )


def plan_tags(answer: Mapping[str, Any], root: str, taken: Iterable[str] = ()) -> TagPlan:
    """The groups of the values the agent's ``answer`` (to advising `FINDERS`) shows a policy
    deciding on, in order of first appearance, and the names of the tags to add: the name the
    expression's value is assigned to where it is free (not ``taken``, nor tagged in its file),
    else with its line. Where the user tunes the site from a call of their own (a site in a
    library: the answer's ``user_call``), no file of the library holding it (``library``) is
    tagged: it is not the user's. A package of the project without such a call is the user's."""
    library = (
        answer.get("library") if answer.get("user_call") and isinstance(answer.get("library"), str) else None
    )
    plan = TagPlan([])
    names: set[str] = set(taken)
    places: dict[tuple[str, ValuePlace], None] = {}
    for policy in answer.get("policies") or ():
        for residual in policy.get("residuals") or () if isinstance(policy, dict) else ():
            if residual.get("kind") != "computed" or residual.get("reason") not in DECIDED:
                continue
            name = residual.get("name")
            if isinstance(name, str):
                if name not in names:
                    names.add(name)
                    plan.groups.append(ValueGroup(name))
                continue
            made = residual.get("made_at") if isinstance(residual.get("made_at"), dict) else residual
            place = _place(made.get("span"))
            path = made.get("path")
            if place is not None and isinstance(path, str) and _editable(path, root, library):
                places.setdefault((os.path.realpath(path), place), None)
    trees: dict[str, ast.Module | None] = {}
    for path, place in places:
        if path not in trees:
            trees[path] = _read(plan, path, names)
        tree = trees[path]
        node = tag_node(tree, place) if tree is not None else None
        if tree is None or node is None:
            continue
        existing = named_already(tree, node)
        if existing is not None:  # the value already has a tag: the group is its name's
            if existing not in {g.name for g in plan.groups}:
                plan.groups.append(ValueGroup(existing))
            continue
        name = unique_name(suggested_name(tree, node), place.line, names)
        try:
            add_tags(path, plan.texts[path], {place: name})
        except SyntaxError:  # a wrap the edit gets wrong here: the value stays untagged
            continue
        names.add(name)
        plan.groups.append(ValueGroup(name, path, place))
    return plan


def _place(span: Any) -> ValuePlace | None:
    if isinstance(span, list) and len(span) == 4 and all(isinstance(n, int) for n in span):
        return ValuePlace(*span)
    return None


def _editable(path: str, root: str, library: str | None) -> bool:
    """A Python file of the project (not of an installed package, nor of the site's library): the
    user's code."""
    real = os.path.realpath(path)
    installed = os.sep + "site-packages" + os.sep in real or os.sep + "dist-packages" + os.sep in real
    if library is not None and (real + os.sep).startswith(os.path.realpath(library) + os.sep):
        return False
    return real.endswith(".py") and not installed and real.startswith(os.path.realpath(root) + os.sep)


def _read(plan: TagPlan, path: str, names: set[str]) -> ast.Module | None:
    """The parsed file (its text kept in ``plan``), its tags' names added to ``names``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    plan.texts[path] = text
    names.update(_TAGGED.findall(text))
    return tree

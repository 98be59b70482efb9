"""The candidate policies: those asked for, or the ready-made ones and the names the code tags."""

from __future__ import annotations

import types

import jax

from .example import short_error

READY_MADE = (
    "nothing_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
)
POLICIES = "jax.checkpoint_policies."
MAX_SINGLE_NAMES = 6  # one save_only_these_names candidate per name, up to this many names


class Candidate:
    """A policy to advise: its text, its value, whether it is the site's own, and the key that
    selects it where the site's policy is chosen by a key."""

    def __init__(self, text, value, current=False, select=None):
        self.text = text
        self.value = value
        self.current = current
        self.select = select


def _quote(names):
    return ", ".join(repr(n) for n in names)


def default_candidates(names, memories):
    texts = [POLICIES + name for name in READY_MADE]
    if names:
        texts.append(f"{POLICIES}save_only_these_names({_quote(names)})")
        if 1 < len(names) <= MAX_SINGLE_NAMES:
            texts += [f"{POLICIES}save_only_these_names({name!r})" for name in names]
    if "pinned_host" in memories:
        if names:
            texts.append(
                f"{POLICIES}save_and_offload_only_these_names(names_which_can_be_saved=[], "
                f"names_which_can_be_offloaded=[{_quote(names)}], offload_src='device', "
                "offload_dst='pinned_host')"
            )
        texts.append(f"{POLICIES}offload_dot_with_no_batch_dims('device', 'pinned_host')")
    return texts


def expand(text):
    """``dots_saveable`` or ``save_only_these_names('h')`` as ``jax.checkpoint_policies.…``."""
    text = text.strip()
    head = text.split("(", 1)[0].strip()
    if head.isidentifier() and hasattr(jax.checkpoint_policies, head):
        return POLICIES + text
    return text


def same_policy(a, b):
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, types.FunctionType):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def ready_made(policy):
    """Whether ``policy`` is JAX's own: a function or object of JAX's code (``jax.checkpoint_policies``
    and its factories' results) holding no policy but JAX's own. Those are pure: their answers
    depend on the question only."""
    is_function = isinstance(policy, types.FunctionType)
    owner = policy if is_function else type(policy)
    if (getattr(owner, "__module__", None) or "").split(".", 1)[0] != "jax":
        return False
    if is_function:
        held = []
        for cell in policy.__closure__ or ():
            try:
                held.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
    else:
        held = list(getattr(policy, "__dict__", {}).values())
    return all(ready_made(value) for value in held if callable(value))


def build_candidates(site, requested, names, memories, selector=None):
    """The candidates (the site's own first unless among them) and the texts that did not evaluate.
    With a ``selector``, each candidate a key selects carries it, and by default every policy a
    key selects is a candidate."""
    current = [m.value for m in site.markers]
    texts = [expand(t) for t in requested] if requested else default_candidates(names, memories)
    namespace = dict(site.namespace)
    namespace.setdefault("jax", jax)
    candidates, errors = [], []
    seen = set()

    def add(text):
        seen.add(text)
        try:
            value = eval(compile(text, "<policy>", "eval"), namespace)
        except Exception as exc:
            errors.append({"policy": text, "message": short_error(exc)})
            return
        is_current = bool(current) and all(same_policy(value, c) for c in current)
        select = selector.key_of(value, text) if selector is not None else None
        candidates.append(Candidate(text, value, is_current, select))

    for text in texts:
        if text not in seen:
            add(text)
    if selector is not None and not requested:  # what the keys select beyond the defaults
        for key, value in selector.table.items():
            if not any(same_policy(value, c.value) for c in candidates):
                add(selector.entry_text(key))
    if not any(c.current for c in candidates):
        select = selector.current if selector is not None else None
        candidates.insert(0, Candidate(site.expression() or "None", None, True, select))
    return candidates, errors

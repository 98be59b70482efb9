"""The edit that gives a site its written policy, in the form the site takes it:

- a ``policy=`` value: replaced by the policy;
- a checkpoint without a policy (``nn.remat(Block)``, ``jax.checkpoint(f)``): ``policy=`` passed as
  the checkpoint function takes it (`default_sites.policy_edits`);
- a site in a library whose user's call passes the policy itself (Flax's ``nn.remat(Block,
  policy=...)`` in the user's file for the ``jax.remat`` inside Flax): that value replaced;
- haliax's ``Stacked`` (its ``gradient_checkpointing`` makes the policy of the library's
  ``filter_checkpoint``): the config value that makes exactly the written policy,
  ``ScanCheckpointPolicy(save_carries=..., save_inputs=..., save_block_internals=[...],
  offload_block_internals=[...])``;
- a site whose policy a preset name chooses (``POLICIES[cfg.remat]``): none, and why (a written
  policy is no preset, and the key is never replaced by a hard-coded policy).
"""

from __future__ import annotations

from jax_lsp.core.findings import Edit, Position, Span
from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.sites import DEFAULT, advise_anchors, default_policy_edits, importing_jax
from jax_lsp.trace.advisor.user_call import UserCall

HALIAX_KEYWORD = "gradient_checkpointing"
HALIAX_CALLEES = (".Stacked.init", ".Stacked", ".BlockSeq.init", ".BlockSeq")
CARRY, INPUT = "__carry", "__input"  # the ends of the names haliax tags a scan's carry and inputs with


def site_edits(
    workspace: Workspace,
    advice: Advice,
    column: int | None,
    kept: list[str],
    offloaded: list[str],
    policy: str,
) -> tuple[list[Edit], str | None]:
    """The edits that give the site of ``advice`` (its file, its 1-based line, the 0-based
    ``column`` the request named) the written ``policy`` (keeping ``kept`` and offloading
    ``offloaded``), and None; or no edit and why."""
    call = advice.user_call
    if call is not None:
        edits, why = _user_call_edits(call, kept, offloaded, policy)
        return importing_jax(workspace, edits, policy), why
    if advice.selector is not None:
        return [], (
            f"a preset name chooses this site's policy ({advice.selector.expression}) and a written policy "
            "is none of the presets: add it to what that key chooses from, or write it at the site"
        )
    line = advice.line - 1
    anchors = [a for a in advise_anchors(workspace, advice.path) if a.span.start.line == line]
    anchor = next((a for a in anchors if column is None or a.span.start.column == column), None)
    if anchor is None:
        return [], f"the site is no longer at {advice.path}:{advice.line}: advise again"
    if anchor.kind == DEFAULT:
        passed = default_policy_edits(workspace, advice.path, anchor.span.start, policy)
        return (passed, None) if passed else ([], "the checkpoint changed since it was advised: advise again")
    return importing_jax(workspace, [Edit(advice.path, anchor.span, policy)], policy), None


def _user_call_edits(
    call: UserCall, kept: list[str], offloaded: list[str], policy: str
) -> tuple[list[Edit], str | None]:
    span = Span(Position(call.line - 1, call.column), Position(call.end_line - 1, call.end_column))
    if call.carries_policy:
        return [Edit(call.path, span, policy)], None
    value = _haliax_policy(call, kept, offloaded)
    if value is None:
        return [], (
            f"the library makes this site's policy from {call.written} in {call.callee}(...): no value "
            "of it is known to make a written policy"
        )
    return [Edit(call.path, span, value)], None


def _haliax_policy(call: UserCall, kept: list[str], offloaded: list[str]) -> str | None:
    """haliax's ``ScanCheckpointPolicy`` that makes the policy keeping ``kept`` and offloading
    ``offloaded`` (its ``_to_jax_policy``: the scan's carry and inputs by their own switches, the
    block's names by lists), spelt through the module the user's call names; None for another
    library's call."""
    ending = next((e for e in HALIAX_CALLEES if call.callee.endswith(e)), None)
    module = call.callee.removesuffix(ending) if ending is not None else ""
    if call.keyword != HALIAX_KEYWORD or not module.replace(".", "").isidentifier():
        return None  # `Stacked.init` imported bare: no module to spell the policy's class through

    def switch(end: str) -> str:
        if any(n.endswith(end) for n in offloaded):
            return '"offload"'
        return "True" if any(n.endswith(end) for n in kept) else "False"

    internals = [n for n in kept if not n.endswith((CARRY, INPUT))]
    moved = [n for n in offloaded if not n.endswith((CARRY, INPUT))]
    fields = [f"save_carries={switch(CARRY)}", f"save_inputs={switch(INPUT)}"]
    fields.append(f"save_block_internals={internals!r}")
    if moved:
        fields.append(f"offload_block_internals={moved!r}")
    return f"{module}.ScanCheckpointPolicy({', '.join(fields)})"

"""The JAX1xx rules: one module per rule, each with its docs and VALID/INVALID examples."""

from __future__ import annotations

from jax_lsp.rules.base import Example, PolicyContext, Rule, SiteContext
from jax_lsp.rules.jax101_returns_none import ReturnsNone
from jax_lsp.rules.jax102_offloadable_class import OffloadableClass
from jax_lsp.rules.jax103_invalid_return_type import InvalidReturnType
from jax_lsp.rules.jax104_prim_compared_with_string import PrimComparedWithString
from jax_lsp.rules.jax105_offload_memory_kind import OffloadMemoryKind
from jax_lsp.rules.jax106_ready_made_called import ReadyMadeCalled
from jax_lsp.rules.jax107_factory_uncalled import FactoryUncalled
from jax_lsp.rules.jax108_policy_signature import PolicySignature
from jax_lsp.rules.jax109_checkpoint_without_function import CheckpointWithoutFunction
from jax_lsp.rules.jax110_save_from_both_non_bool import SaveFromBothNonBool
from jax_lsp.rules.jax111_policy_not_callable import PolicyNotCallable
from jax_lsp.rules.jax112_checkpoint_name_not_tagged import CheckpointNameNotTagged

ALL_RULES: list[Rule] = [
    ReturnsNone(),
    OffloadableClass(),
    InvalidReturnType(),
    PrimComparedWithString(),
    OffloadMemoryKind(),
    ReadyMadeCalled(),
    FactoryUncalled(),
    PolicySignature(),
    CheckpointWithoutFunction(),
    SaveFromBothNonBool(),
    PolicyNotCallable(),
    CheckpointNameNotTagged(),
]

_BY_CODE = {rule.code: rule for rule in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return _BY_CODE.get(code.upper())


__all__ = ["ALL_RULES", "Example", "PolicyContext", "Rule", "SiteContext", "get_rule"]

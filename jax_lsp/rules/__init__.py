"""The JAX1xx rules: one module per rule, each with its docs and VALID/INVALID examples."""

from __future__ import annotations

from jax_lsp.rules.base import Example, ModuleContext, PolicyContext, Rule, SiteContext
from jax_lsp.rules.jax101_policy_returns_none import PolicyReturnsNone
from jax_lsp.rules.jax102_policy_returns_offloadable_class import PolicyReturnsOffloadableClass
from jax_lsp.rules.jax103_policy_returns_invalid_type import PolicyReturnsInvalidType
from jax_lsp.rules.jax104_primitive_compared_with_string import PrimitiveComparedWithString
from jax_lsp.rules.jax105_offload_memory_kind_invalid import OffloadMemoryKindInvalid
from jax_lsp.rules.jax106_ready_made_policy_called import ReadyMadePolicyCalled
from jax_lsp.rules.jax107_policy_factory_uncalled import PolicyFactoryUncalled
from jax_lsp.rules.jax108_policy_signature_incompatible import PolicySignatureIncompatible
from jax_lsp.rules.jax109_checkpoint_without_function import CheckpointWithoutFunction
from jax_lsp.rules.jax110_save_from_both_non_bool import SaveFromBothNonBool
from jax_lsp.rules.jax111_policy_not_callable import PolicyNotCallable
from jax_lsp.rules.jax112_checkpoint_name_not_tagged import CheckpointNameNotTagged

ALL_RULES: list[Rule] = [
    PolicyReturnsNone(),
    PolicyReturnsOffloadableClass(),
    PolicyReturnsInvalidType(),
    PrimitiveComparedWithString(),
    OffloadMemoryKindInvalid(),
    ReadyMadePolicyCalled(),
    PolicyFactoryUncalled(),
    PolicySignatureIncompatible(),
    CheckpointWithoutFunction(),
    SaveFromBothNonBool(),
    PolicyNotCallable(),
    CheckpointNameNotTagged(),
]

_BY_CODE = {rule.code: rule for rule in ALL_RULES}


def get_rule(code: str) -> Rule | None:
    return _BY_CODE.get(code.upper())


__all__ = ["ALL_RULES", "Example", "ModuleContext", "PolicyContext", "Rule", "SiteContext", "get_rule"]

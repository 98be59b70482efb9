"""The JAX facts that rules' examples stand on (jax_lsp/core/jax_facts.json).

An example proven under a JAX release that lacks the fact cannot behave as it says there: the
tests mark it as an expected failure, strict (the run fails once it holds again), naming the fact
and the release, until the rules learn the release they check for (issue 18, part 1).

A premise is a fact, which examples stand on it, and whether the release has it. Run proofs
(tests/rules/test_examples.py: the module is executed and `jax.grad` taken, eagerly) stand on all
of them; traces (tests/trace/test_examples.py: abstract grad and jit(grad), located by line, not
by JAX's words) only on those marked `traced`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jax_lsp.core.jax_facts import JaxFacts
from jax_lsp.core.packages import imported_packages, search_path


class Premise:
    def __init__(
        self,
        fact: str,
        applies: Callable[[str, str, Any, str], bool],
        holds: Callable[[JaxFacts, Any], bool],
        traced: bool = False,
    ) -> None:
        self.fact = fact
        self.applies = applies  # (rule code, kind "INVALID"/"VALID"/"fixed", example, text run)
        self.holds = holds
        self.traced = traced


# What offloads a value: an Offloadable decision (or its class, aliased), the dot offloading factory, or a names policy
# with a name to offload (an empty list offloads nothing).
_OFFLOADS = re.compile(
    r"Offloadable|offload_dot_with_no_batch_dims\(|names_which_can_be_offloaded=\[\s*\S*[\"'\w]"
)


def _error(example: Any) -> str:
    return getattr(example, "error", None) or ""


PREMISES = (
    # A silent offload to a kind JAX maps to device memory: only where JAX maps kinds itself.
    Premise(
        "host_memory_kinds",
        lambda code, kind, example, text: code == "JAX105" and kind == "INVALID" and example.misbehaves,
        lambda facts, example: facts.host_memory_kinds is not None,
        traced=True,
    ),
    # save_from_both_policies refusing a member's Saveable/Recompute/Offloadable.
    Premise(
        "save_from_both_non_bool",
        lambda code, kind, example, text: code == "JAX110" and kind == "INVALID",
        lambda facts, example: facts.save_from_both_non_bool_error is not None,
        traced=True,
    ),
    # JAX's TypeError for a value a policy may not return (older JAX: a bare assert).
    Premise(
        "invalid_return_error",
        lambda code, kind, example, text: (
            kind == "INVALID" and "Value returned by a remat" in _error(example)
        ),
        lambda facts, example: _error(example) in facts.invalid_return_error,
    ),
    # A factory passed uncalled: JAX calls it with the policy's keyword arguments.
    Premise(
        "policies.uncalled_error",
        lambda code, kind, example, text: kind == "INVALID" and code == "JAX107" and bool(_error(example)),
        lambda facts, example: any(
            _error(example) in (m.uncalled_error or "") for m in facts.policies.values()
        ),
    ),
    # A policy without **params: it fails only where JAX passes keyword arguments.
    Premise(
        "policy_keyword_params",
        lambda code, kind, example, text: (
            code == "JAX108" and kind == "INVALID" and "unexpected keyword argument" in _error(example)
        ),
        lambda facts, example: bool(facts.policy_keyword_params),
    ),
    # JAX's new remat: a flag to turn on (0.10.2 and newer)...
    Premise(
        "remat3",
        lambda code, kind, example, text: "jax_remat3" in text,
        lambda facts, example: facts.remat3 is not None,
    ),
    # ...under which a callable policy, and save_from_both_policies, are ignored (0.10.2 to 0.11).
    Premise(
        "remat3.ignored",
        lambda code, kind, example, text: code == "JAX115" and kind == "INVALID",
        lambda facts, example: (
            facts.remat3 is not None and {"callable", "save_from_both_policies"} <= facts.remat3.ignored
        ),
    ),
    # Offloading at all under a plain (eager) grad: for a module that must run (an INVALID one
    # with an `error` fails before any offload).
    Premise(
        "offload_under_grad",
        lambda code, kind, example, text: (
            _OFFLOADS.search(text) is not None and (kind != "INVALID" or not _error(example))
        ),
        lambda facts, example: facts.offload_under_grad_error is None,
    ),
)


def missing_premise(
    code: str, kind: str, example: Any, text: str, facts: JaxFacts, traced: bool = False
) -> str | None:
    """Why rule `code`'s `kind` example (running `text`) cannot hold under `facts`' release;
    None when it can."""
    for premise in PREMISES:
        if traced and not premise.traced:
            continue
        if premise.applies(code, kind, example, text) and not premise.holds(facts, example):
            return f"jax {facts.version} lacks the fact this example stands on ({premise.fact})"
    return None


def not_installed(text: str, interpreter: str | None) -> list[str]:
    """The packages `text` imports that `interpreter` (None: this Python) lacks (flax, equinox...
    in a venv that holds only a JAX release)."""
    folders = search_path(interpreter)
    return sorted(
        name
        for name in imported_packages(text.encode())
        if not any((f / name).is_dir() or (f / f"{name}.py").is_file() for f in folders)
    )

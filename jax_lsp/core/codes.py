"""Every code jax-lsp reports: its family, rule name, default severity, summary and doc page.

The one list of codes. A rule of `jax_lsp.rules` takes its name, severity and summary from
here by its code; the engine, the server, the trace and the output formats ask this registry
which family a code is of and where its doc page is, never the code's spelling.
"""

from __future__ import annotations

import enum

from jax_lsp.core.findings import Severity
from jax_lsp.core.record import Record

PROJECT_URL = "https://github.com/jax-lsp/jax-lsp"


class Family(enum.Enum):
    FILE = "file"  # the file could not be read or parsed; reported whatever is selected
    RULE = "rule"  # a static rule of jax_lsp.rules: selectable, and a noqa comment silences it
    TRACE = "trace"  # found by running the policy under JAX, not by a static rule


class Code(Record):
    __slots__ = ("code", "name", "family", "severity", "summary")
    code: str
    name: str
    family: Family
    severity: Severity
    summary: str

    def __init__(self, code: str, name: str, family: Family, severity: Severity, summary: str) -> None:
        self._assign(code, name, family, severity, summary)

    @property
    def doc_path(self) -> str:
        """The doc page, relative to the repository root."""
        return f"docs/rules/{self.code}.md"

    @property
    def doc_url(self) -> str:
        return f"{PROJECT_URL}/blob/main/{self.doc_path}"


SYNTAX_ERROR = "JAX001"
DECODE_ERROR = "JAX002"
UNPREDICTED = "JAX190"  # a failure under JAX that no static rule predicted
NO_EFFECT = "JAX191"  # a name the site's policy lists changes nothing, as the advisor traced it

_ERROR, _WARNING = Severity.ERROR, Severity.WARNING
_RULE = Family.RULE

CODES: dict[str, Code] = {
    entry.code: entry
    for entry in (
        Code(SYNTAX_ERROR, "syntax-error", Family.FILE, _ERROR, "The file has a syntax error"),
        Code(
            DECODE_ERROR,
            "unreadable-file",
            Family.FILE,
            _ERROR,
            "The file is not text in its encoding, holds NUL bytes, or is not a valid notebook",
        ),
        Code("JAX101", "policy-returns-none", _RULE, _ERROR, "A remat policy returns None on some path"),
        Code(
            "JAX102",
            "policy-returns-offloadable-class",
            _RULE,
            _ERROR,
            "A remat policy returns the class Offloadable instead of an instance",
        ),
        Code(
            "JAX103",
            "policy-returns-invalid-type",
            _RULE,
            _ERROR,
            "A remat policy returns a value that is not a bool, Saveable, Recompute or Offloadable",
        ),
        Code(
            "JAX104",
            "primitive-compared-with-string",
            _RULE,
            _WARNING,
            "The primitive is compared with a string, which is never equal",
        ),
        Code(
            "JAX105",
            "offload-memory-kind-invalid",
            _RULE,
            _WARNING,
            "An offloading policy names a memory kind or keyword that JAX does not offload with",
        ),
        Code(
            "JAX106",
            "ready-made-policy-called",
            _RULE,
            _ERROR,
            "A ready-made policy of jax.checkpoint_policies is called instead of passed",
        ),
        Code(
            "JAX107",
            "policy-factory-uncalled",
            _RULE,
            _ERROR,
            "A policy factory of jax.checkpoint_policies is passed without being called",
        ),
        Code(
            "JAX108",
            "policy-signature-incompatible",
            _RULE,
            _ERROR,
            "A remat policy cannot be called as policy(prim, *avals, **params)",
        ),
        Code(
            "JAX109",
            "checkpoint-without-function",
            _RULE,
            _ERROR,
            "jax.checkpoint used as a decorator factory, or given the policy positionally",
        ),
        Code(
            "JAX110",
            "save-from-both-non-bool",
            _RULE,
            _ERROR,
            "A policy combined with save_from_both_policies returns something other than a bool",
        ),
        Code(
            "JAX111",
            "policy-not-callable",
            _RULE,
            _ERROR,
            "A literal (a policy's name as a string, `True`, a number) is passed as the policy",
        ),
        Code(
            "JAX112",
            "checkpoint-name-not-tagged",
            _RULE,
            _WARNING,
            "A policy names a checkpoint name that no checkpoint_name tag in reach carries",
        ),
        Code(
            "JAX113",
            "policy-member-missing",
            _RULE,
            _ERROR,
            "A member of jax.checkpoint_policies that the installed JAX does not have",
        ),
        Code(
            "JAX114",
            "excluded-names-still-saved",
            _RULE,
            _WARNING,
            "save_anything_except_these_names saves everything, its names included, in the installed JAX",
        ),
        Code(
            "JAX115",
            "policy-ignored-by-new-remat",
            _RULE,
            _WARNING,
            "Under JAX's new remat (jax_remat3), a policy written as a function is ignored and "
            "everything is recomputed",
        ),
        Code(
            "JAX116",
            "names-passed-as-one-container",
            _RULE,
            _WARNING,
            "A tuple or list of checkpoint names is given as one name to a factory of names",
        ),
        Code(
            "JAX117",
            "static-argnums-out-of-range",
            _RULE,
            _ERROR,
            "static_argnums of a checkpoint points past the positional parameters of its function",
        ),
        Code(
            "JAX118",
            "decisions-combined-with-or",
            _RULE,
            _WARNING,
            "Policy decisions that are always true (Saveable, Recompute, Offloadable) combined with or/and",
        ),
        Code(
            "JAX119",
            "traced-flag-in-control-flow",
            _RULE,
            _ERROR,
            "A checkpointed function's parameter that JAX traces decides Python control flow",
        ),
        Code(
            UNPREDICTED,
            "unpredicted-trace-failure",
            Family.TRACE,
            _ERROR,
            "Running the policy under JAX failed, or showed a silent mistake, where no rule predicted it",
        ),
        Code(
            NO_EFFECT,
            "policy-name-without-effect",
            Family.TRACE,
            _WARNING,
            "A name the policy saves or offloads changes nothing it keeps, as the advisor traced it",
        ),
    )
}


def lookup(code: str) -> Code | None:
    return CODES.get(code.upper())


def family_of(code: str) -> Family | None:
    entry = lookup(code)
    return entry.family if entry is not None else None


def doc_url(code: str) -> str | None:
    entry = lookup(code)
    return entry.doc_url if entry is not None else None

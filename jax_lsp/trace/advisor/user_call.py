"""The user's call that chooses the policy of a checkpoint site in a library (the agent's
`user_call`): where the user tunes the site, as the advice shows it and edits it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jax_lsp.trace.advisor.policy_advice import PolicyAdvice


@dataclass(frozen=True)
class UserCall:
    """``hnn.Stacked.init(..., gradient_checkpointing="recompute")`` in the user's file, for
    haliax's ``filter_checkpoint(callable, policy=policy)``."""

    path: str
    line: int  # 1-based: the keyword's value
    column: int  # 0-based code points
    end_line: int
    end_column: int
    keyword: str  # e.g. "gradient_checkpointing"
    text: str  # the value as written, e.g. '"recompute"'
    callee: str  # the called function as written, e.g. "hnn.Stacked.init"
    carries_policy: bool  # the value is the site's policy itself: a candidate can replace it

    @property
    def written(self) -> str:
        return f"{self.keyword}={self.text}"

    def still_in(self, lines: Sequence[str]) -> bool:
        """Whether ``lines`` (of the call's file) still hold the value where it was advised."""
        block = list(lines[self.line - 1 : self.end_line])
        if len(block) != self.end_line - self.line + 1:
            return False
        block[-1] = block[-1][: self.end_column]
        block[0] = block[0][self.column :]
        return "\n".join(block) == self.text

    def to_json(self, path: str | None, suggested: PolicyAdvice | None) -> dict[str, Any]:
        """The contract's ``user_call``: its ``path`` as the contract shows paths, where the value
        is (``line``, ``column`` to ``end_line``, ``end_column``: `read_user_call` reads it back),
        and the edit of it that gives the ``suggested`` policy (`new_text`)."""
        new_text = self.new_text(suggested) if suggested is not None else None
        edit = None
        if new_text is not None:
            start = {"line": self.line, "column": self.column}
            end = {"line": self.end_line, "column": self.end_column}
            edit = {"path": path, "start": start, "end": end, "new_text": new_text}
        return {
            "path": path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "keyword": self.keyword,
            "text": self.text,
            "callee": self.callee,
            "carries_policy": self.carries_policy,
            "edit": edit,
        }

    def key_of(self, suggested: PolicyAdvice) -> str | int | None:
        """The key to give the call's keyword for ``suggested``, where the site chooses its policy
        by a key the keyword sets (``Config(remat_policy=...)`` for ``POLICIES[self.config.remat_policy]``)."""
        select = suggested.select
        return select.key if select is not None and select.name == self.keyword else None

    def new_text(self, suggested: PolicyAdvice) -> str | None:
        """The value that gives the site the ``suggested`` policy: the policy itself, or the key
        that selects it; None where the library makes the policy from the value otherwise (no
        value of it is known to give the policy)."""
        key = self.key_of(suggested)
        if key is not None:
            return key_literal(key, self.text)
        return suggested.policy if self.carries_policy else None

    def suggestion(self, suggested: PolicyAdvice, where: str) -> tuple[str, str]:
        """What to do for ``suggested`` and where, as `report.suggestion` says it."""
        key = self.key_of(suggested)
        if key is not None:
            return f"set {self.keyword} to {key!r}", where
        if self.carries_policy:
            return f"{self.keyword}={suggested.policy}", where
        return (
            f"policy={suggested.policy}",
            f"the library makes this site's policy from {self.written} in {self.callee}(...) at "
            f"{where}: give it the value that makes {suggested.policy}",
        )


def key_literal(key: str | int, like: str) -> str:
    """``key`` as a literal, quoted as the literal ``like`` is where it can be."""
    if isinstance(key, str) and like.startswith('"') and not {'"', "\\"} & set(key):
        return f'"{key}"'
    return repr(key)


def read_user_call(raw: Any) -> UserCall | None:
    """The agent's ``user_call``; None when absent or malformed."""
    if not isinstance(raw, dict):
        return None
    numbers = [raw.get(key) for key in ("line", "column", "end_line", "end_column")]
    texts = [raw.get(key) for key in ("path", "keyword", "text", "callee")]
    ints = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool)]
    strings = [t for t in texts if isinstance(t, str)]
    if len(ints) != len(numbers) or len(strings) != len(texts):
        return None
    line, column, end_line, end_column = ints
    path, keyword, text, callee = strings
    return UserCall(
        path, line, column, end_line, end_column, keyword, text, callee, raw.get("carries_policy") is True
    )

"""The values the analysis core hands to its renderers (CLI, LSP, trace).

Positions are 0-based lines and 0-based columns counted in Unicode code points
(Python ``str`` indices into the line). Renderers convert: the CLI adds 1, the
LSP layer converts to the negotiated encoding (UTF-8/16/32).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class StrEnum(str, enum.Enum):
    """An enum whose members are their string values too (`Severity.ERROR == "error"`), so JSON
    and LSP payloads and the code that reads them see the same strings as before (Python 3.10
    has no enum.StrEnum)."""

    def __str__(self) -> str:
        return str.__str__(self)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"  # the trace's notes of what a policy decided; no finding has it


@dataclass(frozen=True, order=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True, order=True)
class Span:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, column: int, end_line: int, end_column: int) -> Span:
        return cls(Position(line, column), Position(end_line, end_column))


@dataclass(frozen=True)
class Edit:
    """Replace the text in ``span`` of ``path`` with ``new_text``."""

    path: str
    span: Span
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    safe: bool
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    severity: Severity
    message: str
    span: Span
    fixes: tuple[Fix, ...] = ()
    # For a finding in a policy body: where that policy reaches JAX (path, span of the
    # `policy=` value), so editors can show "used as a policy at model.py:12".
    related: tuple[tuple[str, Span], ...] = field(default=(), compare=False)

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.span.start, self.code)

    def applicable_fix(self, unsafe: bool = False) -> Fix | None:
        """The fix that fixing applies: the first safe one, or the first of any kind with `unsafe`."""
        return next((fix for fix in self.fixes if fix.safe or unsafe), None)


@dataclass(frozen=True)
class InternalError:
    """A bug of jax-lsp met while analysing one site or policy; the rest of the file was checked."""

    path: str
    line: int  # 0-based line of the site or policy being analysed
    stage: str  # what was being done: "JAX101 on the policy `p`", "resolving the site"
    error: str  # "TypeError: ..."

    def __str__(self) -> str:
        return f"{self.path}:{self.line + 1}: internal error ({self.stage}): {self.error}"

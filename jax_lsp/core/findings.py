"""The values the analysis core hands to its renderers (CLI, LSP, trace).

Positions are 0-based lines and 0-based columns counted in Unicode code points
(Python ``str`` indices into the line). Renderers convert: the CLI adds 1, the
LSP layer converts to the negotiated encoding (UTF-8/16/32).
"""

from __future__ import annotations

import enum

from jax_lsp.core.record import OrderedRecord, Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # a check imports no typing (start-up time): the protocols are mypy's


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


class Position(OrderedRecord):
    __slots__ = ("line", "column")
    line: int
    column: int

    def __init__(self, line: int, column: int) -> None:
        self._assign(line, column)


class Located(Protocol):
    """A node that `ast.parse` gave a place: a statement, expression, argument, keyword..."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


class Span(OrderedRecord):
    __slots__ = ("start", "end")
    start: Position
    end: Position

    def __init__(self, start: Position, end: Position) -> None:
        self._assign(start, end)

    @classmethod
    def of(cls, line: int, column: int, end_line: int, end_column: int) -> Span:
        return cls(Position(line, column), Position(end_line, end_column))


class Edit(Record):
    """Replace the text in ``span`` of ``path`` with ``new_text``."""

    __slots__ = ("path", "span", "new_text")
    path: str
    span: Span
    new_text: str

    def __init__(self, path: str, span: Span, new_text: str) -> None:
        self._assign(path, span, new_text)


class Fix(Record):
    __slots__ = ("title", "safe", "edits")
    title: str
    safe: bool
    edits: tuple[Edit, ...]

    def __init__(self, title: str, safe: bool, edits: tuple[Edit, ...]) -> None:
        self._assign(title, safe, edits)


class Finding(Record):
    __slots__ = ("path", "code", "severity", "message", "span", "fixes", "related")
    uncompared = ("related",)
    path: str
    code: str
    severity: Severity
    message: str
    span: Span
    fixes: tuple[Fix, ...]
    # For a finding in a policy body: where that policy reaches JAX (path, span of the
    # `policy=` value), so editors can show "used as a policy at model.py:12".
    related: tuple[tuple[str, Span], ...]

    def __init__(
        self,
        path: str,
        code: str,
        severity: Severity,
        message: str,
        span: Span,
        fixes: tuple[Fix, ...] = (),
        related: tuple[tuple[str, Span], ...] = (),
    ) -> None:
        self._assign(path, code, severity, message, span, fixes, related)

    @property
    def sort_key(self) -> tuple[str, Position, str]:
        return (self.path, self.span.start, self.code)

    def applicable_fix(self, unsafe: bool = False) -> Fix | None:
        """The fix that fixing applies: the first safe one, or the first of any kind with `unsafe`."""
        return next((fix for fix in self.fixes if fix.safe or unsafe), None)


class InternalError(Record):
    """A bug of jax-lsp met while analysing one site or policy; the rest of the file was checked."""

    __slots__ = ("path", "line", "stage", "error")
    path: str
    line: int  # 0-based line of the site or policy being analysed
    stage: str  # what was being done: "JAX101 on the policy `p`", "resolving the site"
    error: str  # "TypeError: ..."

    def __init__(self, path: str, line: int, stage: str, error: str) -> None:
        self._assign(path, line, stage, error)

    def __str__(self) -> str:
        return f"{self.path}:{self.line + 1}: internal error ({self.stage}): {self.error}"

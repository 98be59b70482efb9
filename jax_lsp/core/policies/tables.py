"""Policy tables: a name bound once to a dict (`{...}` or `dict(...)`) that code indexes to
choose a policy, `POLICIES[name]` or `POLICIES.get(name, default)`."""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, dotted
from jax_lsp.core.findings import Span
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard


class TableChoice(Record):
    """The entry of a table that a lookup with a key unknown statically may choose."""

    __slots__ = ("table", "key", "path", "entry")
    table: str  # the table's name where it is looked up, e.g. "POLICIES"
    key: str  # the key as written, e.g. "'save_only_these_names'"
    path: str  # the module holding the table
    entry: Span  # the entry's value

    def __init__(self, table: str, key: str, path: str, entry: Span) -> None:
        self._assign(table, key, path, entry)

    def note(self, here: str) -> str:
        """Appended to a finding in the file `here`: which lookup chooses the entry."""
        return f" (chosen by the key {self.key} of `{self.table}`{self.where(here)})"

    def where(self, here: str) -> str:
        """Where the entry is, seen from the file `here`: nothing when it is there."""
        return "" if here == self.path else f" in {os.path.basename(self.path)}:{self.entry.start.line + 1}"


def choices_note(choices: Sequence[TableChoice], here: str) -> str:
    """Appended to one finding that several keys lead to, in the file `here`: the first key's
    note (the message speaks of its entry), then every other key with the same mistake."""
    if not choices:
        return ""
    first, *others = choices
    if not others:
        return first.note(here)
    also = ", ".join(f"{c.key} of `{c.table}`{c.where(here)}" for c in others)
    keys = "key" if len(others) == 1 else "keys"
    return f" (chosen by the key {first.key} of `{first.table}`{first.where(here)}; the same mistake under the {keys} {also})"


class Table(Record):
    __slots__ = ("module", "scope", "name", "entries")
    module: Module
    scope: Scope  # where the table is written
    name: str
    entries: tuple[tuple[object, ast.expr], ...]  # (key value, value expression)

    def __init__(
        self, module: Module, scope: Scope, name: str, entries: tuple[tuple[object, ast.expr], ...]
    ) -> None:
        self._assign(module, scope, name, entries)

    def entry(self, key: object) -> ast.expr | None:
        for name, value in self.entries:
            if name == key:
                return value
        return None

    def choice(self, key: object, value: ast.expr) -> TableChoice:
        return TableChoice(self.name, repr(key), self.module.path, self.module.source.span(value))


def find_table(module: Module, expr: ast.expr, scope: Scope) -> Table | None:
    """The table a name (or dotted name) refers to: bound once to a dict literal or `dict(...)`."""
    if dotted(expr) is None:
        return None
    found = module.definition(expr, scope)
    if found is None:
        return None
    table_module, table, owner = found
    name = ".".join(dotted(expr) or [])
    if isinstance(table, ast.Dict):
        entries = tuple(
            (key.value, value)
            for key, value in zip(table.keys, table.values)
            if isinstance(key, ast.Constant)
        )
        return Table(table_module, owner, name, entries)
    if _is_builtin_dict(table, owner):
        return Table(table_module, owner, name, tuple((k.arg, k.value) for k in table.keywords if k.arg))
    return None


def _is_builtin_dict(expr: ast.AST, scope: Scope) -> TypeGuard[ast.Call]:
    """`dict(...)`, with `dict` not rebound."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "dict"
        and scope.lookup("dict")[0] is None
    )


def lookup(expr: ast.expr) -> tuple[ast.expr, ast.expr, ast.expr | None] | None:
    """(table expression, key expression, default) of `T[key]` or `T.get(key[, default])`."""
    if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, ast.Slice):
        return expr.value, expr.slice, None
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and 1 <= len(expr.args) <= 2
        and not expr.keywords
    ):
        return expr.func.value, expr.args[0], expr.args[1] if len(expr.args) == 2 else None
    return None

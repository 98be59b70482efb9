"""Adding `checkpoint_name` tags to a module: the edits that name the values a written policy
keeps (docs/advise.md, "A policy written for a budget").

A value is given by the place of the expression that made it, as Python's ``co_positions``
(and `ast`) give it: 1-based lines, columns in UTF-8 bytes. The edit wraps exactly that
expression, ``h = jnp.tanh(x @ w)`` becoming ``h = checkpoint_name(jnp.tanh(x @ w), "h")``, and
imports ``checkpoint_name`` once where the module does not already: nothing else of the file
changes. An expression inside another tagged one is wrapped inside it (one edit for both).
A place that is no expression (an augmented assignment's ``q /= c``), or an expression that
cannot stand as an argument (a target, a starred or keyword argument, a slice), is not tagged.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Mapping

from jax_lsp.core.findings import Edit, Position, Span
from jax_lsp.core.record import OrderedRecord, Record
from jax_lsp.core.tags.tags import TAG_FUNCTION
from jax_lsp.core.text.edits import apply_edits

IMPORT = f"from jax.ad_checkpoint import {TAG_FUNCTION}"
ALIAS = f"jax_{TAG_FUNCTION}"  # where the module binds `checkpoint_name` to something else
_NOT_VALUES = (ast.Starred, ast.Slice, ast.GeneratorExp, ast.FormattedValue, ast.JoinedStr)
_OPERATORS = {ast.MatMult: "matmul", ast.Mult: "mul", ast.Add: "add", ast.Sub: "sub", ast.Div: "div"}


class ValuePlace(OrderedRecord):
    """Where an expression is: 1-based lines, 0-based columns in UTF-8 bytes (`ast`'s)."""

    __slots__ = ("line", "column", "end_line", "end_column")
    line: int
    column: int
    end_line: int
    end_column: int

    def __init__(self, line: int, column: int, end_line: int, end_column: int) -> None:
        self._assign(line, column, end_line, end_column)


class TaggedFile(Record):
    """One file's tags: the edits, the text they make, and where the import line went."""

    __slots__ = ("path", "edits", "text", "names", "import_line")
    path: str
    edits: tuple[Edit, ...]
    text: str  # the file as the edits leave it
    names: dict[ValuePlace, str]  # the places tagged, each with its name
    import_line: int | None  # the 0-based line the import went before (from it on, lines move down)

    def __init__(
        self,
        path: str,
        edits: tuple[Edit, ...],
        text: str,
        names: dict[ValuePlace, str],
        import_line: int | None,
    ) -> None:
        self._assign(path, edits, text, names, import_line)

    def line_after(self, line: int) -> int:
        """The 1-based ``line`` of the file before the edits, in the edited text."""
        return line + 1 if self.import_line is not None and line - 1 >= self.import_line else line


def tag_node(tree: ast.AST, place: ValuePlace) -> ast.expr | None:
    """The expression at exactly ``place`` that a tag can wrap, the outermost of several; None
    where there is none."""
    parents = _parents(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.expr)
            and (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
            == (place.line, place.column, place.end_line, place.end_column)
            and _wrappable(node, parents)
        ):
            return node
    return None


def _wrappable(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, _NOT_VALUES) or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
        return False
    parent = parents.get(node)
    if isinstance(parent, (ast.FormattedValue, ast.JoinedStr, ast.comprehension)):
        return False
    if isinstance(parent, ast.AugAssign) or isinstance(parent, ast.keyword) and parent.arg is None:
        return False
    return not any(node is d for d in getattr(parent, "decorator_list", ()))


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def suggested_name(tree: ast.AST, node: ast.expr) -> str:
    """A name for the value of ``node``: the name it is assigned to (``h`` in ``h = ...``, ``k``
    in ``q, k = f(x), g(x)``); else what makes it (``einsum`` for ``jnp.einsum(...)``, ``matmul``
    for ``x @ w``), after the name the expression around it is assigned to (``h_matmul`` in
    ``h = jnp.tanh(x @ w)``)."""
    parents = _parents(tree)
    assigned = _assigned_name(node, parents)
    if assigned is not None:
        return assigned
    made = _maker(node)
    outer = parents.get(node)
    while isinstance(outer, ast.expr):
        if (around := _assigned_name(outer, parents)) is not None:
            return f"{around}_{made}"
        outer = parents.get(outer)
    return made


def _assigned_name(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> str | None:
    """The name ``node``'s value is assigned to, where it is the whole of what is assigned."""
    parent = parents.get(node)
    if isinstance(parent, ast.Tuple) and isinstance(assign := parents.get(parent), ast.Assign):
        targets = assign.targets[0] if len(assign.targets) == 1 else None
        if isinstance(targets, ast.Tuple) and len(targets.elts) == len(parent.elts):
            target = targets.elts[parent.elts.index(node)]
            return target.id if isinstance(target, ast.Name) else None
    if (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return parent.targets[0].id
    if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)) and isinstance(parent.target, ast.Name):
        return parent.target.id
    return None


def _maker(node: ast.expr) -> str:
    """What makes ``node``'s value: the function called, the operator, the attribute read."""
    if isinstance(node, ast.Call):
        callee = node.func.func if isinstance(node.func, ast.Call) else node.func  # `nn.Dense(4)(x)`
        if isinstance(callee, ast.Attribute):
            return callee.attr
        if isinstance(callee, ast.Name):
            return callee.id
    if isinstance(node, ast.BinOp):
        return _OPERATORS.get(type(node.op), "value")
    if isinstance(node, ast.Attribute):
        return node.attr
    return "value"


def named_already(tree: ast.AST, node: ast.expr) -> str | None:
    """The name a ``checkpoint_name(node, NAME)`` around ``node`` already gives it, else None."""
    parent = _parents(tree).get(node)
    if not isinstance(parent, ast.Call) or not parent.args or parent.args[0] is not node:
        return None
    callee = parent.func
    called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
    name = (
        parent.args[1]
        if len(parent.args) > 1
        else next((k.value for k in parent.keywords if k.arg == "name"), None)
    )
    if called == TAG_FUNCTION and isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value
    return None


def unique_name(wanted: str, line: int, taken: set[str]) -> str:
    """``wanted``, or ``wanted_LINE`` (then ``wanted_LINE_2``...) where it is taken."""
    name = re.sub(r"\W", "_", wanted) or "value"
    if name not in taken:
        return name
    name = f"{name}_{line}"
    candidate, count = name, 1
    while candidate in taken:
        count += 1
        candidate = f"{name}_{count}"
    return candidate


def add_tags(path: str, text: str, names: Mapping[ValuePlace, str]) -> TaggedFile:
    """The edits of the file ``path`` (its ``text``) that tag the expression at each place of
    ``names`` with its name, and import ``checkpoint_name`` where needed. A place with no
    expression a tag can wrap (`tag_node`) is left out of the result's ``names``. Raises
    SyntaxError where the edited text would not parse."""
    tree = ast.parse(text)
    nodes = {place: node for place in names if (node := tag_node(tree, place)) is not None}
    if not nodes:
        return TaggedFile(path, (), text, {}, None)
    lines = text.splitlines(keepends=True)
    offsets = _line_offsets(lines)
    function, import_edit, import_line = _tag_function(tree, path, lines)
    quote = _quote_of(text)

    def offset(line: int, byte_column: int) -> int:
        row = lines[line - 1] if line - 1 < len(lines) else ""
        return offsets[line - 1] + len(row.encode("utf-8")[:byte_column].decode("utf-8", "replace"))

    spans = {
        place: (offset(node.lineno, node.col_offset), offset(node.end_lineno or 0, node.end_col_offset or 0))
        for place, node in nodes.items()
    }
    edits = [] if import_edit is None else [import_edit]
    for outer, members in _clusters(spans):
        start, end = spans[outer]
        inserts = []
        for place in members:
            low, high = spans[place]
            opening = f"{function}(" + ("(" if _bare_tuple(nodes[place], text[low:high]) else "")
            closing = (")" if _bare_tuple(nodes[place], text[low:high]) else "") + f", {quote(names[place])})"
            inserts += [(low, 1, -high, opening), (high, 0, -low, closing)]
        pieces, cursor = [], start
        for at, _, _, insert in sorted(inserts):
            pieces += [text[cursor:at], insert]
            cursor = at
        pieces.append(text[cursor:end])
        edits.append(Edit(path, Span(_position(offsets, start), _position(offsets, end)), "".join(pieces)))
    new_text = apply_edits(text, edits)
    ast.parse(new_text)  # a SyntaxError here is a wrap this module gets wrong: never offered
    return TaggedFile(path, tuple(edits), new_text, {p: names[p] for p in nodes}, import_line)


def _quote_of(text: str) -> Callable[[str], str]:
    """How the module quotes its strings: ``"name"`` where most of its string literals start with a
    double quote, else ``'name'``."""
    double = single = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                body = token.string.lstrip("rRbBuUfF")
                double += body.startswith('"')
                single += body.startswith("'")
    except (tokenize.TokenError, SyntaxError):
        pass
    return (lambda name: f'"{name}"') if double > single else repr


def _bare_tuple(node: ast.expr, written: str) -> bool:
    """A tuple written without its parentheses (``f(x), g(x)``): wrapped, it needs them."""
    return isinstance(node, ast.Tuple) and not written.startswith("(")


def _clusters(spans: Mapping[ValuePlace, tuple[int, int]]) -> Iterable[tuple[ValuePlace, list[ValuePlace]]]:
    """Each outermost place with the places inside it (itself included)."""
    ordered = sorted(spans, key=lambda p: (spans[p][0], -spans[p][1]))
    outer: ValuePlace | None = None
    members: list[ValuePlace] = []
    for place in ordered:
        if outer is not None and spans[place][1] <= spans[outer][1]:
            members.append(place)
            continue
        if outer is not None:
            yield outer, members
        outer, members = place, [place]
    if outer is not None:
        yield outer, members


def _line_offsets(lines: list[str]) -> list[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def _position(offsets: list[int], offset: int) -> Position:
    line = max(i for i, start in enumerate(offsets) if start <= offset)
    line = min(line, len(offsets) - 2) if len(offsets) > 1 else 0
    return Position(line, offset - offsets[line])


def _tag_function(tree: ast.Module, path: str, lines: list[str]) -> tuple[str, Edit | None, int | None]:
    """How the module calls `checkpoint_name` (its own import's name, else one to import), the
    edit that imports it (None where the module does), and the 0-based line it goes before."""
    bound_otherwise = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in (
            "jax.ad_checkpoint",
            "jax._src.ad_checkpoint",
        ):
            for alias in node.names:
                if alias.name == TAG_FUNCTION and node.col_offset == 0:
                    return alias.asname or TAG_FUNCTION, None, None
        if _binds(node, TAG_FUNCTION):
            bound_otherwise = True
    function = ALIAS if bound_otherwise else TAG_FUNCTION
    statement = IMPORT if function == TAG_FUNCTION else f"{IMPORT} as {ALIAS}"
    line = _import_line(tree)
    return function, Edit(path, Span(Position(line, 0), Position(line, 0)), statement + "\n"), line


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) or isinstance(node, ast.arg):
        return (node.id if isinstance(node, ast.Name) else node.arg) == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.partition(".")[0]) == name for a in node.names)
    return False


def _import_line(tree: ast.Module) -> int:
    """The 0-based line a new import goes before: after the module's leading imports (past its
    docstring and ``from __future__`` imports), else at the top of its statements."""
    body = tree.body
    after = 0
    for index, statement in enumerate(body):
        docstring = (
            index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        )
        if docstring or isinstance(statement, (ast.Import, ast.ImportFrom)):
            after = statement.end_lineno or statement.lineno
            continue
        if isinstance(statement, ast.If) and _guards_imports(statement):
            continue  # `if TYPE_CHECKING:` among the imports
        break
    return after


def _guards_imports(statement: ast.If) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in [*statement.body, *statement.orelse])

"""Where a tag's name comes from, when it is not written in the `checkpoint_name` call.

`checkpoint_name(x, name)` inside `def tag(x, name)` tags what the callers of `tag` pass;
`checkpoint_name(x, config.residual_name)` tags what code assigns to `residual_name` (as a
keyword argument, an attribute, a default). Both are followed by name, through the files the
index gives, a few steps deep. What cannot be followed (a value computed at run time, a
function passed around instead of called, a name assigned nowhere in sight) is a wildcard:
any name may be tagged there, so no name is reported against it.
"""

from __future__ import annotations

import ast
import bisect
import enum
import itertools
import re
from collections.abc import Callable, Iterable

from jax_lsp.core.binding.scopes import FunctionNode, iter_parameters, string_constant
from jax_lsp.core.tags.tags import Place, Tag
from jax_lsp.core.text.chunks import LazyStatements, holds_line
from jax_lsp.core.text.decoding import decode, split_lines
from jax_lsp.core.text.source import SourceModule, parse_bytes

MAX_STEPS = 6  # parameters and attributes followed, one into the other
MAX_FILES = 64  # a word found in more files than this is too common to follow
MAX_SHAPES = 16

Functions = tuple[FunctionNode, ...]
# What one evaluation has followed already: ("parameter", path, line, name) or ("word", word).
Seen = set[tuple[str | int, ...]]
# A piece of a joined string: a string's text, or an expression whose values are followed.
Part = str | ast.expr
# Leaves that bind and call nothing: Tables does not walk into them.
_SILENT = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]")
_BRACES = re.compile(r"\{[^{}]*\}")


class FileFacts:
    """One file's path, source, and what it says about names, word by word: a word's tables
    come from the statements whose lines hold it, and only those are walked (and parsed, when
    `source.tree` leaves them out: a file parsed as far as its sites need, or not at all)."""

    def __init__(self, path: str, source: SourceModule):
        self.path = path
        self.source = source
        # The statements known now: a module that parses more of itself later keeps these nodes,
        # and the flow compares enclosing functions by identity.
        self._statements = list(source.tree.body)
        self._gaps: list[LazyStatements] | None = None
        self._tables: dict[str, Tables] = {}
        self._line_starts: list[int] | None = None  # the offset of each line in the text
        self._non_ascii: list[int] = []  # the lines with a non-ASCII character

    @classmethod
    def unparsed(cls, path: str, data: bytes) -> FileFacts:
        """A file no module was loaded for: its statements are parsed as words ask for them, or
        all at once when its text cannot be cut at its top-level lines (a string or bracket that
        one of them leaves open, a NUL byte, an undecodable byte)."""
        text, encoding, problem = decode(data)
        lines = split_lines(text)
        whole = LazyStatements(0, len(lines), lines)
        if problem or "\0" in text or not whole.cut_at_statements():
            return cls(path, parse_bytes(data, path))
        facts = cls(path, SourceModule(path, text, ast.Module(body=[], type_ignores=[]), encoding=encoding))
        facts._gaps = [whole]
        return facts

    def tables(self, word: str) -> Tables:
        """What the statements holding `word` say (entries under other words may be missing)."""
        if word not in self._tables:
            lines = self._lines_with(word)
            self._tables[word] = Tables.of(self._statements_at(lines), lines) if lines else Tables()
        return self._tables[word]

    def _lines_with(self, word: str) -> list[int]:
        """The 1-based lines that may hold `word` as a name: those that hold its text, and those
        with a non-ASCII character (an identifier there is NFKC-normalized before it binds)."""
        lines = self.source.lines
        if self._line_starts is None:
            self._line_starts = list(itertools.accumulate((len(line) for line in lines), initial=0))
            ascii_text = self.source.text.isascii()
            self._non_ascii = (
                [] if ascii_text else [n for n, line in enumerate(lines, 1) if not line.isascii()]
            )
        found: list[int] = []
        text, at = self.source.text, self.source.text.find(word)
        while at >= 0:
            found.append(bisect.bisect_right(self._line_starts, at))  # 1-based: the line starts before
            at = text.find(word, self._line_starts[found[-1]])  # from the next line on
        return sorted({*found, *self._non_ascii}) if self._non_ascii else found

    def _statements_at(self, lines: list[int]) -> list[ast.stmt]:
        """The top-level statements that span one of `lines`, in line order."""
        found = [s for s in self._statements if holds_line(lines, _first_line(s), s.end_lineno or s.lineno)]
        for gap in self._gaps_of():
            if holds_line(lines, gap.start + 1, gap.end):
                found += gap.statements(self.source.path, lines)
        return sorted(found, key=_first_line) if len(found) > 1 else found

    def _gaps_of(self) -> list[LazyStatements]:
        if self._gaps is None:
            lines = self.source.lines
            covered = sorted((_first_line(s) - 1, s.end_lineno or s.lineno) for s in self._statements)
            self._gaps, at = [], 0
            for start, end in [*covered, (len(lines), len(lines))]:
                if start > at:
                    self._gaps.append(LazyStatements(at, start, lines[at:start]))
                at = max(at, end)
        return self._gaps


def _first_line(statement: ast.stmt) -> int:
    """A statement's first line, its decorators' included."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])


class Tables:
    """Calls by callee name, keyword arguments, assignments, loops and parameter defaults by
    name, and the names used otherwise than called."""

    __slots__ = ("calls", "keywords", "assigned", "unpacked", "loops", "defaults", "passed_around", "stored")

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[ast.Call, Functions, int]]] = {}  # offset: partial
        self.keywords: dict[str, list[tuple[ast.expr, Functions]]] = {}
        # word -> (value, functions); the value is the target itself when it is unpacked from
        # something that cannot be seen into (`a, b = make()`)
        self.assigned: dict[str, list[tuple[ast.expr, Functions]]] = {}
        self.unpacked: set[int] = set()
        self.loops: dict[str, list[tuple[ast.expr, Functions]]] = {}
        self.defaults: dict[str, list[tuple[ast.expr, Functions]]] = {}
        self.passed_around: set[str] = set()
        self.stored: dict[str, list[Functions]] = {}  # every binding, by any statement

    @classmethod
    def of(cls, statements: list[ast.stmt], lines: list[int]) -> Tables:
        """One walk of `statements`, leaving out the statements in them that span none of the
        1-based `lines` (a call is met before its callee, so the callee is known)."""
        tables = cls()
        callees: set[int] = set()
        stack: list[tuple[ast.AST, Functions]] = [(statement, ()) for statement in statements]
        while stack:
            node, functions = stack.pop()
            if isinstance(node, ast.stmt) and not holds_line(
                lines, _first_line(node), node.end_lineno or node.lineno
            ):
                continue
            if isinstance(node, ast.Call):
                tables._call(node, functions, callees)
            else:
                tables._binding(node, functions, callees)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                functions = (*functions, node)
            for name in node._fields:  # ast.iter_child_nodes, without the leaves that say nothing
                value = getattr(node, name, None)
                if isinstance(value, list):
                    stack.extend(
                        (item, functions)
                        for item in value
                        if isinstance(item, ast.AST) and not isinstance(item, _SILENT)
                    )
                elif isinstance(value, ast.AST) and not isinstance(value, _SILENT):
                    stack.append((value, functions))
        return tables

    def _call(self, call: ast.Call, functions: Functions, callees: set[int]) -> None:
        for keyword in call.keywords:
            if keyword.arg:
                self.keywords.setdefault(keyword.arg, []).append((keyword.value, functions))
        callee, offset = call.func, 0
        if _last_name(callee) == "partial" and call.args:  # functools.partial(tag, name="x")
            callee, offset = call.args[0], 1
        name = _last_name(callee)
        if name:
            callees.add(id(callee))
            self.calls.setdefault(name, []).append((call, functions, offset))

    def _binding(self, node: ast.AST, functions: Functions, callees: set[int]) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._assign(target, node.value, functions)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._assign(node.target, node.value, functions)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(
            node.target, ast.Name
        ):
            self.loops.setdefault(node.target.id, []).append((node.iter, functions))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for arg, default in _defaults(node.args):
                self.defaults.setdefault(arg.arg, []).append((default, functions))
        elif (
            isinstance(node, (ast.Name, ast.Attribute))
            and isinstance(node.ctx, ast.Load)
            and id(node) not in callees
        ):
            self.passed_around.add(node.id if isinstance(node, ast.Name) else node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            self.stored.setdefault(node.id, []).append(functions)

    def _assign(self, target: ast.expr, value: ast.expr, functions: Functions) -> None:
        if isinstance(target, (ast.Name, ast.Attribute)):
            word = target.id if isinstance(target, ast.Name) else target.attr
            self.assigned.setdefault(word, []).append((value, functions))
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = (
                value.elts
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                else None
            )
            for index, item in enumerate(target.elts):
                if values is not None:
                    self._assign(item, values[index], functions)
                elif isinstance(item, (ast.Name, ast.Attribute)):
                    self.unpacked.add(id(item))
                    self._assign(item, item, functions)


def written_tag(path: str, source: SourceModule, expr: ast.expr) -> Tag | None:
    """The tag of a name written as a string constant; None for any other expression."""
    name = string_constant(expr)
    return None if name is None else Tag(Place(path, source.span(expr)), name=name, text=repr(name))


def _last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


class NameFlow:
    """Follows tag names through the files `files_with(word)` finds (`facts(path)` reads one).

    Given `wanted` names, it stops following once each is the name of a tag found: the tags it
    answers are then some of those in reach, not all. Only names count, not shapes or wildcards:
    those can come of where following stopped (MAX_STEPS), which the order files are read in moves."""

    def __init__(
        self,
        facts: Callable[[str], FileFacts | None],
        files_with: Callable[[str], list[str] | None],
        wanted: Iterable[str] | None = None,
    ):
        self._facts = facts
        self._files_with = files_with
        self.words: set[str] = set()  # every word followed: a file that gains or loses one matters
        self.wanted: set[str] | None = None if wanted is None else set(wanted)  # those not carried yet
        self._joining = 0  # inside a joined string: the tags met are its parts, not tags in reach

    def tags(self, facts: FileFacts, expr: ast.expr, functions: Functions) -> list[Tag]:
        return self._evaluate(facts, expr, functions, 0, set())

    @property
    def enough(self) -> bool:
        """Whether every wanted name is the name of a tag found (never, when none are wanted)."""
        return self.wanted is not None and not self.wanted

    def found(self, tags: Iterable[Tag]) -> None:
        """`tags` are in reach: their names are wanted no more."""
        if self.wanted and not self._joining:
            self.wanted.difference_update(tag.name for tag in tags if tag.name is not None)

    # Expressions -------------------------------------------------------------------------------
    def _evaluate(
        self, facts: FileFacts, expr: ast.expr, functions: Functions, steps: int, seen: Seen
    ) -> list[Tag]:
        tags = self._evaluate_expression(facts, expr, functions, steps, seen)
        self.found(tags)
        return tags

    def _evaluate_expression(
        self, facts: FileFacts, expr: ast.expr, functions: Functions, steps: int, seen: Seen
    ) -> list[Tag]:
        if isinstance(expr, ast.Constant):
            written = written_tag(facts.path, facts.source, expr)
            return [written] if written is not None else []
        place = Place(facts.path, facts.source.span(expr))
        if isinstance(expr, ast.IfExp):
            return self._evaluate(facts, expr.body, functions, steps, seen) + self._evaluate(
                facts, expr.orelse, functions, steps, seen
            )
        parts = _parts(expr)
        if parts is not None:
            return self._joined(facts, expr, parts, functions, steps, seen)
        shape = _shape(expr)
        if shape is not None:
            text = facts.source.segment(expr)
            return [Tag(place, shape=shape, text=text) if shape.replace(".*", "") else Tag(place, text=text)]
        if steps >= MAX_STEPS:
            return [Tag(place, text=facts.source.segment(expr))]
        if isinstance(expr, ast.Name):
            return self._name(facts, expr, functions, steps, seen)
        if isinstance(expr, ast.Attribute):
            return self._word(expr.attr, place, steps, seen)
        if isinstance(expr, ast.Subscript):
            items = self._items(facts, expr.value, functions, steps, seen)
            if items is not None:
                return items
        return [Tag(place, text=facts.source.segment(expr))]

    def _joined(
        self,
        facts: FileFacts,
        expr: ast.expr,
        parts: list[Part],
        functions: Functions,
        steps: int,
        seen: Seen,
    ) -> list[Tag]:
        """`f"layer_{i}"`, `name + suffix`: each part's possible values, joined in every way."""
        # An alternative: the pieces so far, each (text, literal), and the one tag it came from.
        alternatives: list[tuple[tuple[tuple[str, bool], ...], Tag | None]] = [((), None)]
        for part in parts:
            if isinstance(part, str):
                options: list[tuple[tuple[str, bool], Tag | None]] = [((part, True), None)]
            else:
                tags = self._part(facts, part, functions, steps, seen)
                options = [
                    (
                        (t.name, True) if t.name is not None else (t.shape or ".*", False),
                        t if t.name else None,
                    )
                    for t in tags
                ] or [((".*", False), None)]  # a number, None, or nothing known: any text
            alternatives = [
                ((*pieces, piece), tag if source is None else source if tag is None else None)
                for pieces, source in alternatives
                for piece, tag in options
            ]
            if len(alternatives) > MAX_SHAPES:
                return [Tag(Place(facts.path, facts.source.span(expr)), text=facts.source.segment(expr))]
        text = facts.source.segment(expr)
        place = Place(facts.path, facts.source.span(expr))
        joined: list[Tag] = []
        for pieces, source in alternatives:
            if all(literal for _, literal in pieces):
                name = "".join(piece for piece, _ in pieces)
                exact_source = source if source is not None and source.name == name else None
                joined.append(exact_source or Tag(place, name=name, text=text))
            else:
                shape = "".join(re.escape(piece) if literal else piece for piece, literal in pieces)
                known = any(literal and piece for piece, literal in pieces)
                joined.append(Tag(place, shape=shape, text=text) if known else Tag(place, text=text))
        return joined

    def _part(
        self, facts: FileFacts, part: ast.expr, functions: Functions, steps: int, seen: Seen
    ) -> list[Tag]:
        """The values of a part of a joined string: no tags in reach, so they find no name."""
        if steps >= MAX_STEPS:
            return []
        self._joining += 1
        try:
            return self._evaluate(facts, part, functions, steps + 1, seen)
        finally:
            self._joining -= 1

    def _name(
        self, facts: FileFacts, expr: ast.Name, functions: Functions, steps: int, seen: Seen
    ) -> list[Tag]:
        place = Place(facts.path, facts.source.span(expr))
        word = expr.id
        for depth in range(len(functions) - 1, -1, -1):
            function = functions[depth]
            if any(arg.arg == word for arg in iter_parameters(function.args)):
                return self._parameter(facts, function, functions[:depth], word, place, steps, seen)
            local = self._local(facts, word, function, functions[: depth + 1], steps, seen)
            if local is not None:
                return local
        module_level = [(v, f) for v, f in facts.tables(word).assigned.get(word, []) if not f]
        loops = [(i, f) for i, f in facts.tables(word).loops.get(word, []) if not f]
        if module_level or loops:
            return self._values(facts, word, module_level, loops, steps, seen)
        return self._word(word, place, steps, seen)

    def _local(
        self,
        facts: FileFacts,
        word: str,
        function: FunctionNode,
        functions: Functions,
        steps: int,
        seen: Seen,
    ) -> list[Tag] | None:
        """The values `word` is bound to in `function` itself; None when it binds none."""
        assigned = [(v, f) for v, f in facts.tables(word).assigned.get(word, []) if f and f[-1] is function]
        loops = [(i, f) for i, f in facts.tables(word).loops.get(word, []) if f and f[-1] is function]
        if not assigned and not loops:
            if any(f and f[-1] is function for f in facts.tables(word).stored.get(word, [])):
                # Bound here some other way (`for i, x in ...`, `with ... as x`): not known.
                return [Tag(Place(facts.path, facts.source.span(function)), text=word)]
            return None
        return self._values(facts, word, assigned, loops, steps, seen)

    def _values(
        self,
        facts: FileFacts,
        word: str,
        assigned: list[tuple[ast.expr, Functions]],
        loops: list[tuple[ast.expr, Functions]],
        steps: int,
        seen: Seen,
    ) -> list[Tag]:
        tags: list[Tag] = []
        for value, functions in assigned:
            if id(value) in facts.tables(word).unpacked:
                tags.append(
                    Tag(Place(facts.path, facts.source.span(value)), text=facts.source.segment(value))
                )
            else:
                tags += self._evaluate(facts, value, functions, steps + 1, seen)
        for iterable, functions in loops:
            items = self._items(facts, iterable, functions, steps + 1, seen)
            tags += (
                items
                if items is not None
                else [
                    Tag(Place(facts.path, facts.source.span(iterable)), text=facts.source.segment(iterable))
                ]
            )
        return tags

    def _items(
        self, facts: FileFacts, expr: ast.expr, functions: Functions, steps: int, seen: Seen
    ) -> list[Tag] | None:
        """The names a container literal (or a name bound to one) holds; None if not one."""
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return [t for item in expr.elts for t in self._evaluate(facts, item, functions, steps, seen)]
        if isinstance(expr, ast.Name) and steps < MAX_STEPS:
            bound = [
                (v, f) for v, f in facts.tables(expr.id).assigned.get(expr.id, []) if f == functions[: len(f)]
            ]
            if bound and all(isinstance(v, (ast.List, ast.Tuple, ast.Set)) for v, _ in bound):
                return [t for v, f in bound for t in self._items(facts, v, f, steps + 1, seen) or []]
        return None

    # Following ---------------------------------------------------------------------------------
    def _parameter(
        self,
        facts: FileFacts,
        function: FunctionNode,
        outer: Functions,
        word: str,
        place: Place,
        steps: int,
        seen: Seen,
    ) -> list[Tag]:
        """What callers pass for `word`, a parameter of `function`, and its default."""
        if isinstance(function, ast.Lambda):
            return [Tag(place, text=word)]
        key = ("parameter", facts.path, function.lineno, word)
        if key in seen or self.enough:
            return []
        seen.add(key)
        via = f"the parameter `{word}` of `{function.name}()`"
        args = function.args
        if word in (getattr(args.vararg, "arg", None), getattr(args.kwarg, "arg", None)):
            return [Tag(place, text=word, via=via)]
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        index = positional.index(word) if word in positional else None
        method = bool(positional) and positional[0] in ("self", "cls")
        default = _default(args, word)
        tags = self._evaluate(facts, default, outer, steps + 1, seen) if default is not None else []
        files = self._files_with(function.name)
        self.words.add(function.name)
        # Callers that pass it through *args/**kwargs, or code that passes the function on, hide
        # what they give it; a keyword keeps its name on the way, so look for `word=` too.
        hidden = files is None
        called = False
        for path in files or ():
            if self.enough:
                break
            other = self._facts(path)
            if other is None:
                continue
            hidden = hidden or function.name in other.tables(function.name).passed_around
            for call, functions, offset in other.tables(function.name).calls.get(function.name, []):
                called = True
                value = _argument(call, word, index, offset, method and isinstance(call.func, ast.Attribute))
                if value is _UNKNOWN:
                    hidden = True
                elif value is not None:
                    tags += [_via(t, via) for t in self._evaluate(other, value, functions, steps + 1, seen)]
        if hidden or not called:
            return tags + [_via(t, via) for t in self._word(word, place, steps, seen)]
        return tags

    def _word(self, word: str, place: Place, steps: int, seen: Seen) -> list[Tag]:
        """What code assigns to `word` anywhere: `word=...` arguments and defaults, `x.word = ...`."""
        key = ("word", word)
        if key in seen or self.enough:
            return []
        seen.add(key)
        self.words.add(word)
        files = self._files_with(word)
        if files is None:
            return [Tag(place, text=word)]
        tags: list[Tag] = []
        found = False
        for path in files:
            if self.enough:
                break
            other = self._facts(path)
            if other is None:
                continue
            values = [*other.tables(word).keywords.get(word, []), *other.tables(word).defaults.get(word, [])]
            assigned = other.tables(word).assigned.get(word, [])
            loops = other.tables(word).loops.get(word, [])
            found = found or bool(values or assigned or loops)
            for value, functions in values:
                tags += self._evaluate(other, value, functions, steps + 1, seen)
            tags += self._values(other, word, assigned, loops, steps, seen)
        if found or self.enough:  # stopped early: what the files left unread assign is not known
            return tags
        return [Tag(place, text=word, via=f"nothing in sight assigns `{word}`")]


class _Unknown(enum.Enum):
    UNKNOWN = "passed through *args or **kwargs"


_UNKNOWN = _Unknown.UNKNOWN


def _defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with it."""
    positional = [*args.posonlyargs, *args.args]
    pairs = [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults),
        *zip(args.kwonlyargs, args.kw_defaults),
    ]
    return [(arg, default) for arg, default in pairs if default is not None]


def _default(args: ast.arguments, word: str) -> ast.expr | None:
    return next((default for arg, default in _defaults(args) if arg.arg == word), None)


def _argument(
    call: ast.Call, word: str, index: int | None, offset: int, bound_self: bool
) -> ast.expr | _Unknown | None:
    """The argument a call passes for a parameter; None when it passes none, _UNKNOWN when it
    could (through *args or **kwargs)."""
    for keyword in call.keywords:
        if keyword.arg == word:
            return keyword.value
    if index is not None:
        position = index + offset - (1 if bound_self else 0)
        args = call.args
        starred = next((i for i, a in enumerate(args) if isinstance(a, ast.Starred)), None)
        if starred is not None and starred <= position:
            return _UNKNOWN
        if 0 <= position < len(args):
            return args[position]
    if any(keyword.arg is None for keyword in call.keywords):
        return _UNKNOWN
    return None


def _via(tag: Tag, via: str) -> Tag:
    return tag if tag.via else Tag(tag.place, tag.name, tag.shape, tag.text, via)


def _parts(expr: ast.expr) -> list[Part] | None:
    """The parts of `f"layer_{i}"` or `a + "_" + b`: strings and expressions; None otherwise."""
    if isinstance(expr, ast.JoinedStr):
        return [
            _piece(value)
            if isinstance(value, ast.Constant)
            else value.value
            if isinstance(value, ast.FormattedValue) and value.format_spec is None and value.conversion == -1
            else ast.Constant(None)
            for value in expr.values
        ]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) and _stringy(expr):
        left = _parts(expr.left) if isinstance(expr.left, ast.BinOp) else None
        return [
            *(left or [_piece(expr.left)]),
            _piece(expr.right),
        ]
    return None


def _stringy(expr: ast.expr) -> bool:
    """A `+` chain that is not arithmetic: some operand is a string or a string expression."""
    while isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        if string_constant(expr.right) is not None or isinstance(expr.right, ast.JoinedStr):
            return True
        expr = expr.left
    return string_constant(expr) is not None or isinstance(expr, (ast.JoinedStr, ast.Name, ast.Attribute))


def _shape(expr: ast.expr) -> str | None:
    """A regular expression for `"%s_out" % x` or `"{}_out".format(x)`; None for anything else."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        template = string_constant(expr.left)
        if template is not None:
            return ".*".join(re.escape(p) for p in _PERCENT.split(template))
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        template = string_constant(expr.func.value)
        if template is not None:
            return ".*".join(re.escape(p) for p in _BRACES.split(template))
    return None


def _piece(expr: ast.expr) -> Part:
    text = string_constant(expr)
    return expr if text is None else text


def shapes_of(tags: Iterable[Tag]) -> list[Tag]:
    """At most MAX_SHAPES shapes, the rest dropped for a wildcard: matching is a loop over them."""
    tags = list(tags)
    shaped = [t for t in tags if t.shape is not None]
    if len(shaped) <= MAX_SHAPES:
        return tags
    return [t for t in tags if t.shape is None] + [Tag(shaped[0].place, text="(many shapes)")]

"""Checkpoint names: the values a model tags with `jax.ad_checkpoint.checkpoint_name(x, NAME)`
and the names a policy factory is given (`save_only_these_names("attn_out")`).

A tag whose name is not a plain string is a `Tag` with a shape (an f-string, a concatenation)
or with no name at all (a wildcard: any name may be tagged there). flow.py follows the
parameters and attributes a tag's name comes from.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from jax_lsp.core.binding.module import MAX_DEPTH, Module
from jax_lsp.core.binding.scopes import FunctionNode, Scope, dotted, string_constant
from jax_lsp.core.findings import Span
from jax_lsp.core.jax_api import policy_member
from jax_lsp.core.record import OrderedRecord, Record
from jax_lsp.core.text.chunks import holds_line
from jax_lsp.core.text.source import SourceModule
from jax_lsp.core.text.words import has_word

TAG_FUNCTIONS = {"jax.ad_checkpoint.checkpoint_name", "jax._src.ad_checkpoint.checkpoint_name"}
TAG_FUNCTION = "checkpoint_name"

# Factory -> the role of its positional names, or of each keyword that takes a list of names.
POSITIONAL_ROLES = {
    "save_only_these_names": "save",
    "save_any_names_but_these": "exclude",
    "save_anything_except_these_names": "exclude",
}
KEYWORD_ROLES = {
    "save_and_offload_only_these_names": {
        "names_which_can_be_saved": "save",
        "names_which_can_be_offloaded": "offload",
    },
}
NAME_FACTORIES = (*POSITIONAL_ROLES, *KEYWORD_ROLES)
# Bytes that a file naming a factory of names must hold (a cheap filter before parsing).
USE_MARKERS = (b"these_names", b"names_but_these")


# A call of a factory of names, and the strings written in it (as far as its first parenthesis).
_FACTORY_CALL = rb"(?:these_names|names_but_these)\w*\s*\(([^()]*)"
_STRING = rb"(['\"])([^'\"\\\r\n]+)\1"
# A factory of names written and not called there (JAX107's fix then lists every tag in reach).
_FACTORY_NAMED = re.compile(rb"\w*(?:these_names|names_but_these)\b")
_QUOTES = b"`'\""


def may_name_checkpoint_names(data: bytes) -> bool:
    """Whether a file's bytes may name checkpoint names: they mention a factory of names."""
    return any(marker in data for marker in USE_MARKERS)


def mentions_tag(data: bytes) -> bool:
    """Whether a file's bytes name `checkpoint_name` (as a whole word)."""
    return has_word(TAG_FUNCTION.encode(), data)


def quoted(name: str, data: bytes) -> bool:
    """Whether `data` holds `name` as a plain string literal's text."""
    return _quoted_bytes(name.encode("utf-8", "surrogatepass"), data)


def _quoted_bytes(text: bytes, data: bytes) -> bool:
    return b'"' + text + b'"' in data or b"'" + text + b"'" in data


def names_untagged_in(writing: list[bytes], tagging: Iterable[bytes]) -> bool:
    """A guess from bytes: whether one of `writing` writes, in a call of a factory of names, a
    string that no file of `tagging` mentioning `checkpoint_name` quotes (`tagging` is read only
    when one is written). The names index looks for a name first in the tags that write it so,
    then in all of the workspace's, and only then in the installed packages'; a wrong guess here
    costs time, never a finding."""
    written = {
        text
        for data in writing
        if may_name_checkpoint_names(data)
        for call in re.finditer(_FACTORY_CALL, data)
        for _, text in re.findall(_STRING, call.group(1))
    }
    if not written:
        return False
    tags = [data for data in tagging if mentions_tag(data)]
    return any(not any(_quoted_bytes(text, data) for data in tags) for text in written)


def factory_uncalled_in(writing: list[bytes]) -> bool:
    """A guess from bytes: whether one of `writing` names a factory of names without calling it
    there (`policies = dict(only=cp.save_only_these_names)`): JAX107's fix of such a site lists
    every tag in reach, the installed packages' too. A wrong guess costs time, never a finding."""
    return any(may_name_checkpoint_names(data) and _names_uncalled(data) for data in writing)


def _names_uncalled(data: bytes) -> bool:
    """Whether `data` names a factory of names neither called (`(` next), quoted (a docstring's
    ``save_only_these_names``, a preset's "save_anything_except_these_names"), imported, in a
    comment, nor where it is defined (JAX's own `ad_checkpoint.py` lists its factories)."""
    for match in _FACTORY_NAMED.finditer(data):
        start, end = match.span()
        if b"def " + match.group() + b"(" in data:
            continue
        following = data[end : end + 80].lstrip()[:1]
        if following == b"(" or (following and following in _QUOTES):
            continue
        if start and data[start - 1] in _QUOTES:
            continue
        line = data[data.rfind(b"\n", 0, start) + 1 : start]
        if b"#" in line or line.lstrip().startswith((b"from ", b"import ")):
            continue
        return True
    return False


class Place(OrderedRecord):
    __slots__ = ("path", "span")
    path: str
    span: Span

    def __init__(self, path: str, span: Span) -> None:
        self._assign(path, span)


class Tag(Record):
    """What one `checkpoint_name` call can name: a name, names of a shape, or (neither) any name."""

    __slots__ = ("place", "name", "shape", "text", "via")
    place: Place  # where the name is written: the string, or the expression that cannot be known
    name: str | None
    shape: str | None  # a regular expression, for `f"layer_{i}"`
    text: str  # the name as written, for messages: `f"layer_{i}"`
    via: str | None  # `the parameter name of tag()` when the name was followed there

    def __init__(
        self,
        place: Place,
        name: str | None = None,
        shape: str | None = None,
        text: str = "",
        via: str | None = None,
    ) -> None:
        self._assign(place, name, shape, text, via)

    @property
    def fixed_text(self) -> str:
        """The text every name of a shape holds (`layer_` for `layer_.*`)."""
        return re.sub(r"\\(.)", r"\1", (self.shape or "").replace(".*", ""))

    @property
    def is_wildcard(self) -> bool:
        return self.name is None and self.shape is None

    def carries(self, name: str) -> bool:
        if self.name is not None:
            return self.name == name
        return self.shape is None or re.fullmatch(self.shape, name) is not None


class NameUse(Record):
    """A name literal given to a policy factory."""

    __slots__ = ("name", "place", "role", "factory", "call")
    name: str
    place: Place  # the string literal
    role: str  # "save" | "offload" | "exclude"
    factory: str  # the member of jax.checkpoint_policies
    call: Place  # the factory call: where the policy is made

    def __init__(self, name: str, place: Place, role: str, factory: str, call: Place) -> None:
        self._assign(name, place, role, factory, call)


def enclosing_calls(
    tree: ast.AST, walked: Callable[[ast.stmt], bool]
) -> Iterator[tuple[ast.Call, tuple[FunctionNode, ...]]]:
    """Every call of a tree with the functions it sits in, outermost first, leaving out the
    statements (and all they hold) that `walked` says no to."""
    stack: list[tuple[ast.AST, tuple[FunctionNode, ...]]] = [(tree, ())]
    while stack:
        node, functions = stack.pop()
        if isinstance(node, ast.stmt) and not walked(node):
            continue
        if isinstance(node, ast.Call):
            yield node, functions
        inner = (
            (*functions, node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            else functions
        )
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def innermost_scope(module: Module, functions: tuple[FunctionNode, ...]) -> Scope:
    return module.function_scope(functions[-1]) if functions else module.scope


def tag_name_argument(call: ast.Call) -> ast.expr | None:
    """The NAME of `checkpoint_name(x, NAME)` / `checkpoint_name(x, name=NAME)`."""
    if len(call.args) >= 2:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg == "name"), None)


def callee_names(module: Module, wanted: Iterable[str]) -> set[str]:
    """The names a call of one of `wanted` can end with in `module`: the names themselves, and
    the module-level names bound to them (`import ... as cn`, `cn = adc.checkpoint_name`)."""
    names = set(wanted)
    for name, bindings in module.scope.bindings.items():
        for binding in bindings:
            target = binding.target or (
                ".".join(dotted(binding.node) or ()) if binding.kind == "assign" else ""
            )
            if target.rsplit(".", 1)[-1] in names:
                names.add(name)
    return names


def _last_name(expr: ast.expr) -> str | None:
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else None


def tag_calls(module: Module) -> Iterator[tuple[ast.Call, ast.expr, tuple[FunctionNode, ...]]]:
    """The `checkpoint_name` calls of a module: (call, name expression, enclosing functions).

    The module's recorded calls are enough: a line that calls it names `checkpoint_name` or an
    alias bound by a line that does, so the scope builder walked it."""
    candidates = callee_names(module, [TAG_FUNCTION])
    calls = module.calls
    if module.late_calls:  # walked after their turn: merged in the file's order
        calls = sorted(calls + module.late_calls, key=lambda item: (item[0].lineno, item[0].col_offset))
    for call, scope in calls:
        name = tag_name_argument(call)
        if (
            name is not None
            and _last_name(call.func) in candidates
            and module.qualname(call.func, scope) in TAG_FUNCTIONS
        ):
            yield call, name, _functions(scope)


def _functions(scope: Scope | None) -> tuple[FunctionNode, ...]:
    """The functions a scope sits in, outermost first (class bodies left out)."""
    found = []
    while scope is not None:
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found.append(scope.node)
        scope = scope.parent
    return tuple(reversed(found))


def name_uses(module: Module) -> list[NameUse]:
    """Every string literal given as a name to a factory of names in `module`, with the
    strings of names and containers those arguments are bound to (in any module)."""
    uses: list[NameUse] = []
    if not any(factory in module.source.text for factory in NAME_FACTORIES):
        return uses  # a call of one, or of an alias bound to one, names it
    candidates = callee_names(module, NAME_FACTORIES)
    for call, functions in enclosing_calls(module.source.tree, _mentioning(module.source, candidates)):
        if _last_name(call.func) not in candidates:
            continue
        scope = innermost_scope(module, functions)
        member = policy_member(module.qualname(call.func, scope))
        if member not in NAME_FACTORIES:
            continue
        made_at = Place(module.path, module.source.span(call))
        arguments: list[tuple[ast.expr, str]] = []
        if member in POSITIONAL_ROLES:
            arguments = [(argument, POSITIONAL_ROLES[member]) for argument in call.args]
        roles = KEYWORD_ROLES.get(member, {})
        arguments += [(k.value, roles[k.arg]) for k in call.keywords if k.arg in roles]
        for argument, role in arguments:
            for where, literal, name in string_literals(module, argument, scope):
                uses.append(
                    NameUse(name, Place(where.path, where.source.span(literal)), role, member, made_at)
                )
    return uses


def _mentioning(source: SourceModule, words: Iterable[str]) -> Callable[[ast.stmt], bool]:
    """Whether a statement's lines (its decorators' included) hold one of `words`."""
    # Found in the whole text, then numbered: a search of each line costs a call per line and word.
    text = source.text
    starts = list(itertools.accumulate(map(len, source.lines), initial=0))  # of each line, in `text`
    found: set[int] = set()
    for word in words:
        at = text.find(word)
        while at != -1:
            found.add(bisect.bisect_right(starts, at))
            at = text.find(word, at + 1)
    lines = sorted(found)

    def mentions(statement: ast.stmt) -> bool:
        first = min(node.lineno for node in [statement, *getattr(statement, "decorator_list", ())])
        return holds_line(lines, first, statement.end_lineno or statement.lineno)

    return mentions


def string_literals(
    module: Module, expr: ast.expr, scope: Scope, depth: int = 0
) -> Iterator[tuple[Module, ast.Constant, str]]:
    """The string constants (module, node, value) an argument holds: itself, the items of a list/tuple/set, `*NAMES`,
    `A + B`, and what a name bound once to one of those holds (in whichever module binds it)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(expr, ast.Constant) and (text := string_constant(expr)) is not None:
        yield module, expr, text
    elif isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        for item in expr.elts:
            yield from string_literals(module, item, scope, depth + 1)
    elif isinstance(expr, ast.Starred):
        yield from string_literals(module, expr.value, scope, depth + 1)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        yield from string_literals(module, expr.left, scope, depth + 1)
        yield from string_literals(module, expr.right, scope, depth + 1)
    elif isinstance(expr, (ast.Name, ast.Attribute)):
        found = module.definition(expr, scope)
        if found is not None and isinstance(found[1], ast.expr):
            yield from string_literals(found[0], found[1], found[2], depth + 1)

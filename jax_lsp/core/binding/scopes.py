"""Name bindings per scope, and the qualified name an expression refers to.

Only what can be known without running code: imports, `def`/`class`, and names
assigned exactly once. A name bound any other way (a parameter, a loop target,
several assignments) is unknown, and unknown values are never reported.
"""

from __future__ import annotations

import ast
import bisect
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence

from jax_lsp.core.findings import Located
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# What a name can be bound by: a statement, an expression, a parameter or an `except ... as`.
BoundNode = ast.stmt | ast.expr | ast.arg | ast.excepthandler
ScopeNode = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef


class Binding(Record):
    __slots__ = ("kind", "node", "target")
    kind: str  # "import" | "def" | "class" | "assign" | "param" | "with" | "other"
    node: BoundNode
    target: str  # import: the qualified name bound; assign: unused.

    def __init__(self, kind: str, node: BoundNode, target: str = "") -> None:
        self._assign(kind, node, target)


class Scope:
    __slots__ = ("node", "parent", "bindings")

    def __init__(
        self, node: ScopeNode, parent: Scope | None, bindings: dict[str, list[Binding]] | None = None
    ) -> None:
        self.node = node
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {} if bindings is None else bindings

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)

    def lookup(self, name: str) -> tuple[Binding | None, Scope | None]:
        """The single binding of `name` visible here; (None, scope) when it is ambiguous."""
        scope: Scope | None = self
        while scope is not None:
            found = scope.bindings.get(name)
            if found:
                return (found[0], scope) if _one_meaning(found) else (None, scope)
            scope = scope.parent
            # Class bodies are not visible from the functions nested in them.
            while scope is not None and isinstance(scope.node, ast.ClassDef) and scope is not self:
                scope = scope.parent
        return None, None


def _one_meaning(bindings: list[Binding]) -> bool:
    """One binding, or the same import repeated (`import jax` and `import jax.numpy` both bind jax)."""
    first = bindings[0]
    return len(bindings) == 1 or all(b.kind == "import" and b.target == first.target for b in bindings)


def resolve_relative(module_name: str, is_package: bool, level: int, target: str | None) -> str:
    parts = module_name.split(".") if module_name else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


class ScopeBuilder(ast.NodeVisitor):
    """One pass over a module: every scope with its bindings, and the scope of each node."""

    def __init__(
        self,
        module_name: str,
        is_package: bool,
        could_hold_site: Callable[[Located], bool] | None = None,
        mark_name: Callable[[str, Located], None] | None = None,
    ) -> None:
        self.module_name = module_name
        self.is_package = is_package
        # Function bodies that cannot hold a site are not walked now: their scope is built
        # on demand (build_function), when a policy or factory defined there is followed.
        self.could_hold_site = could_hold_site
        self.mark_name = mark_name
        self.deferred: dict[int, tuple[FunctionNode, Scope]] = {}
        self.scope_of: dict[int, Scope] = {}
        self.calls: list[tuple[ast.Call, Scope]] = []
        # Called before each statement of a class body, and with None after the last: the
        # module builds the methods it left unparsed in their turn (module.Module).
        self.before_class_statement: Callable[[ast.ClassDef, ast.stmt | None], None] | None = None

    # The scope being walked; set by build and build_function before anything is visited.
    current: Scope

    # A scope build walks every statement that could hold a site, so the walk itself is made
    # cheap: NodeVisitor.visit looks its method up by name at each node, and its generic_visit
    # and visit_Constant go through generic helpers. Here each node type's method is found once,
    # and the nodes that hold no call, scope or binding are not walked into.
    def visit(self, node: ast.AST) -> None:
        method = _METHODS.get(type(node))
        if method is None:
            method = _METHODS[type(node)] = _method_for(type(node))
        method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def build(self, tree: ast.Module) -> Scope:
        root = Scope(tree, None)
        self.scope_of[id(tree)] = root
        self.current = root
        for statement in tree.body:
            self.visit(statement)
        return root

    # Bindings --------------------------------------------------------------
    def _mark_aliases(self, statement: Located, names: list[str]) -> None:
        """Module-level names bound by a statement that mentions a marker become markers."""
        if (
            self.mark_name
            and self.could_hold_site is not None
            and self.current.parent is None
            and self.could_hold_site(statement)
        ):
            for name in names:
                self.mark_name(name, statement)

    def _mark_imported(self, aliases: list[ast.alias], bound: Callable[[ast.alias], str]) -> None:
        """An import's names that are written on a line holding a marker become markers
        (`checkpoint as ckpt`): the module's name holds none that a name could take, and most
        names of a long import are not the one beside a marker (`Tensor`, written above
        `save_only_these_names` in `from utils import (...)`)."""
        for alias in aliases:
            if alias.name != "*":
                self._mark_aliases(alias, [bound(alias)])

    def visit_Import(self, node: ast.Import) -> None:
        self._mark_imported(node.names, lambda a: a.asname or a.name.split(".")[0])
        for alias in node.names:
            if alias.asname:
                self.current.bind(alias.asname, Binding("import", node, alias.name))
            else:
                top = alias.name.split(".")[0]
                self.current.bind(top, Binding("import", node, top))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            module = resolve_relative(self.module_name, self.is_package, node.level, node.module)
        else:
            module = node.module or ""
        self._mark_imported(node.names, lambda a: a.asname or a.name)
        for alias in node.names:
            if alias.name == "*":
                continue
            target = f"{module}.{alias.name}" if module else alias.name
            self.current.bind(alias.asname or alias.name, Binding("import", node, target))

    def _visit_value(self, expr: ast.expr) -> None:
        """Walk an assigned or evaluated expression, unless its lines cannot hold a site.

        A skipped value still has its lambdas (the ones a name can be followed to) deferred."""
        if self.could_hold_site is None or self.could_hold_site(expr):
            self.visit(expr)
            return
        stack = [expr]
        while stack:
            value = stack.pop()
            if isinstance(value, ast.IfExp):
                stack += [value.body, value.orelse]
            elif isinstance(value, ast.Lambda):
                self.deferred[id(value)] = (value, self.current)

    def visit_Expr(self, node: ast.Expr) -> None:
        self._visit_value(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._visit_value(node.value)
        self._mark_aliases(node, [t.id for t in node.targets if isinstance(t, ast.Name)])
        for target in node.targets:
            if isinstance(target, ast.Name):
                kind = "assign" if len(node.targets) == 1 else "other"
                self.current.bind(target.id, Binding(kind, node.value))
            else:
                self._bind_other(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._visit_value(node.value)
        if isinstance(node.target, ast.Name):
            if node.value is not None:
                self.current.bind(node.target.id, Binding("assign", node.value))
        else:
            self._bind_other(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._visit_value(node.value)
        self._bind_other(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.current.bind(node.target.id, Binding("other", node))

    def _bind_other(self, target: ast.AST) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                self.current.bind(sub.id, Binding("other", sub))
            elif isinstance(sub, (ast.Attribute, ast.Subscript)):
                self.visit(sub)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._bind_other(node.target)
        self.visit(node.iter)
        for statement in node.body + node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if isinstance(item.optional_vars, ast.Name):  # its node: what the context manager is made of
                self.current.bind(item.optional_vars.id, Binding("with", item.context_expr))
            elif item.optional_vars is not None:
                self._bind_other(item.optional_vars)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncWith = visit_With

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.current.bind(node.name, Binding("other", node))
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self.current.bind(name, Binding("other", node))

    visit_Nonlocal = visit_Global

    # Scopes ----------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._visit_arguments_defaults(node.args)
        self.current.bind(node.name, Binding("def", node))
        self._enter_function(node, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_arguments_defaults(node.args)
        self._enter_function(node, function_body(node))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self.current.bind(node.name, Binding("class", node))
        outer = self.current
        self.current = Scope(node, outer)
        self.scope_of[id(node)] = self.current
        turn = self.before_class_statement
        for statement in node.body:
            if turn is not None:
                turn(node, statement)
            self.visit(statement)
        if turn is not None:
            turn(node, None)
        self.current = outer

    def _visit_arguments_defaults(self, args: ast.arguments) -> None:
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default)

    def build_function(self, node: FunctionNode, outer: Scope) -> Scope:
        """The scope of a function whose body was deferred (its calls are not recorded)."""
        self.current, self.could_hold_site, self.mark_name = outer, None, None
        self._enter_function(node, function_body(node))
        return self.scope_of[id(node)]

    def _enter_function(self, node: FunctionNode, body: Sequence[ast.AST]) -> None:
        outer = self.current
        if self.could_hold_site is not None and not self.could_hold_site(node):
            self.deferred[id(node)] = (node, outer)
            return
        scope = Scope(node, outer)
        self.scope_of[id(node)] = scope
        for arg in iter_parameters(node.args):
            scope.bind(arg.arg, Binding("param", arg))
        self.current = scope
        for item in body:
            self.visit(item)
        self.current = outer

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        # Comprehension targets are local to the comprehension; treat them as unknown.
        for generator in node.generators:
            self._bind_other(generator.target)
        self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, self.current))
        self.generic_visit(node)


# Nodes with nothing inside for the scope builder: no call, scope or binding.
_LEAVES = (
    ast.Constant,
    ast.Name,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.Pass,
)


_METHODS: dict[type, Callable[[ScopeBuilder, Any], None]] = {}


def _skip(builder: ScopeBuilder, node: ast.AST) -> None:
    pass


def _method_for(node_type: type) -> Callable[[ScopeBuilder, Any], None]:
    if issubclass(node_type, _LEAVES):
        return _skip
    method: Callable[[ScopeBuilder, Any], None] = getattr(
        ScopeBuilder, f"visit_{node_type.__name__}", ScopeBuilder.generic_visit
    )
    return method


def function_body(node: FunctionNode) -> list[ast.AST]:
    """The statements of a `def`; the one expression of a lambda."""
    return [node.body] if isinstance(node, ast.Lambda) else list(node.body)


def iter_parameters(args: ast.arguments) -> Iterator[ast.arg]:
    yield from args.posonlyargs
    yield from args.args
    if args.vararg:
        yield args.vararg
    yield from args.kwonlyargs
    if args.kwarg:
        yield args.kwarg


def dotted(expr: ast.AST) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return parts[::-1]
    return None


def string_constant(expr: ast.AST | None) -> str | None:
    """The text of a string constant (`"q"`); None for any other expression."""
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def walk_spanning(tree: ast.AST, lines: Collection[int]) -> Iterator[ast.AST]:
    """`ast.walk` that enters only the nodes whose lines (a def's or class's from its first
    decorator) span one of `lines`: what is around a few lines of a large tree, unvisited rest."""
    wanted = sorted(set(lines))
    todo: deque[ast.AST] = deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            if first is None:  # arguments, comprehensions: inside a node already entered
                todo.append(child)
                continue
            decorators = getattr(child, "decorator_list", None)
            if decorators:
                first = min(first, decorators[0].lineno)
            at = bisect.bisect_left(wanted, first)
            if at < len(wanted) and wanted[at] <= (getattr(child, "end_lineno", None) or first):
                todo.append(child)

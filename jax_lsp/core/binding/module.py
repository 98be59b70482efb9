"""A parsed module with its scopes, and qualified names of its expressions."""

from __future__ import annotations

import ast
import bisect
import enum
import functools
from collections.abc import Callable, Sequence

from jax_lsp.core.binding.return_paths import return_paths
from jax_lsp.core.binding.scopes import (
    Binding,
    BoundNode,
    FunctionNode,
    Scope,
    ScopeBuilder,
    dotted,
    resolve_relative,
)
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES
from jax_lsp.core.text.deferred import DeferredDefinition
from jax_lsp.core.text.source import SourceModule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jax_lsp.core.binding.loader import ModuleLoader

MAX_DEPTH = 12

# Where a name is defined: (module, node, scope of the binding). The node is a
# FunctionDef/Lambda/ClassDef, or the expression assigned to the name.
Definition = tuple["Module", BoundNode, Scope]


class _Unfollowed(enum.Enum):
    """What a star import binds is not known: it imports from outside the workspace, from a
    module that does not list its names plainly, or through too long a chain."""

    STAR_IMPORT = "a star import not followed"


UNFOLLOWED = _Unfollowed.STAR_IMPORT
# A module's star imports say of a name: who binds it (the module and its binding), none, or
# that they cannot tell.
StarImported = tuple["Module", Binding] | None | _Unfollowed


class _Line:
    """Lines [lineno, end_lineno] (1-based), asked as a node's would be."""

    def __init__(self, start: int, end: int) -> None:
        self.lineno, self.col_offset = start + 1, 0
        self.end_lineno: int | None = end
        self.end_col_offset: int | None = None


class _DeferredBindings(dict[str, list[Binding]]):
    """A scope's bindings (the module's, a class's), which parse a deferred definition when
    its name is asked."""

    def __init__(self, parse_deferred: Callable[[str], None], bindings: dict[str, list[Binding]]) -> None:
        super().__init__(bindings)
        self.parse_deferred = parse_deferred
        self.deferred: set[str] = set()

    def _parsed(self, name: object) -> None:
        if isinstance(name, str) and name in self.deferred:
            self.deferred.discard(name)
            self.parse_deferred(name)

    def get(self, name: str, default: Any = None) -> Any:
        self._parsed(name)
        return super().get(name, default)

    def __getitem__(self, name: str) -> list[Binding]:
        self._parsed(name)
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        self._parsed(name)
        return super().__contains__(name)


class Module:
    def __init__(
        self,
        source: SourceModule,
        name: str,
        is_package: bool,
        loader: ModuleLoader,
        deferred: Sequence[DeferredDefinition] = (),
    ):
        """`deferred`: top-level definitions left out of `source.tree` (source.parse_for_sites),
        parsed when their name is looked up."""
        self.source = source
        self.name = name
        self.loader = loader
        self.is_package = is_package
        builder = ScopeBuilder(name, is_package, source.could_hold_site, source.mark_name)
        # The bindings of the module and of each class that left definitions unparsed.
        self._deferred_bindings: list[tuple[ast.Module | ast.ClassDef, _DeferredBindings]] = []
        # Whether a definition that holds a tag waits for its name (walk_tags parses it), and
        # the calls walked in definitions parsed after their turn: the names index reads their
        # tags; the rules read `calls` alone, as the build left it.
        self.unwalked_tags = False
        self.late_calls: list[tuple[ast.Call, Scope]] = []
        if deferred:
            self.scope = self._build_with_deferred(builder, deferred)
        else:
            self.scope = builder.build(source.tree)
        self.scope_of = builder.scope_of
        self.calls = builder.calls
        self._deferred = builder.deferred
        self._lazy_imports: dict[int, str | None] = {}  # by id of a def: what it imports and returns

    def _build_with_deferred(self, builder: ScopeBuilder, deferred: Sequence[DeferredDefinition]) -> Scope:
        """Build as `builder.build` would over the whole file, each deferred definition (at the
        top level, or a method) taking its turn in line order: one whose lines hold a site line
        by then (a name marked by a statement above) is parsed and walked now; the others wait
        for their name. One that holds only tags waits too, unlike in a whole build
        (`unwalked_tags`): no site or checked call is among its calls.

        The tree and the source change only at the end: guard.deep runs a build again from
        the start when it runs out of stack."""
        tree = self.source.tree
        empty = ast.Module(body=[], type_ignores=[])
        scope = builder.build(empty)
        # Keyed by id: once `empty` is freed a definition parsed later may take its id, and
        # would be given the module's scope as its own.
        del builder.scope_of[id(empty)]
        scope.node = tree
        builder.scope_of[id(tree)] = scope
        self._waiting: dict[tuple[int, str], list[DeferredDefinition]] = {}  # (id(parent), name)
        self._deferred_bindings = []
        parsed_now: list[SourceModule] = []
        inserted_now: list[tuple[ast.Module | ast.ClassDef, list[ast.stmt]]] = []
        pending: dict[int | None, list[DeferredDefinition]] = {}  # by owner: None for the top level
        for definition in deferred:
            pending.setdefault(definition.owner, []).append(definition)

        def turns(parent: ast.Module | ast.ClassDef, statement: ast.stmt | None) -> None:
            """Before `statement` of `parent` (None: after the last), the definitions above it."""
            waiting = pending.get(parent.lineno if isinstance(parent, ast.ClassDef) else None)
            first_line = _first_line(statement) if statement is not None else None
            while waiting and (first_line is None or waiting[0].start < first_line):
                definition = waiting.pop(0)
                lines = _Line(definition.start, definition.end)
                if self.source.holds_site_line(lines):
                    parsed_now.append(definition.parse(self.path, self.loader.pythons))
                    inserted_now.append((parent, definition.statements(parsed_now[-1])))
                    for parsed in inserted_now[-1][1]:
                        builder.visit(parsed)
                else:
                    self.unwalked_tags = self.unwalked_tags or self.source.could_hold_site(lines)
                    self._wait_for_name(builder.current, parent, definition)

        builder.before_class_statement = lambda node, statement: (
            turns(node, statement) if builder.current.node is node else None
        )
        for statement in [*tree.body, None]:
            turns(tree, statement)
            if statement is not None:
                builder.visit(statement)
        builder.before_class_statement = None
        for parent, statements in inserted_now:
            _insert_into(parent, statements)
        for parsed_source in parsed_now:
            self._add_problems(parsed_source)
        return scope

    def _wait_for_name(
        self, scope: Scope, parent: ast.Module | ast.ClassDef, definition: DeferredDefinition
    ) -> None:
        bindings = scope.bindings
        if not isinstance(bindings, _DeferredBindings):
            bindings = scope.bindings = _DeferredBindings(
                functools.partial(self._parse_waiting, scope, parent), bindings
            )
            self._deferred_bindings.append((parent, bindings))
        bindings.deferred.add(definition.name)
        self._waiting.setdefault((id(parent), definition.name), []).append(definition)

    def _parse_waiting(self, scope: Scope, parent: ast.Module | ast.ClassDef, name: str) -> None:
        """Bind `name` in `scope` from the definitions waiting for it, as the builder would
        have. No site line was in their lines when their turn came: what holds a marker now
        (a tag) is walked for `late_calls`, not for the rules' `calls`."""
        builder = ScopeBuilder(self.name, self.is_package, self.source.could_hold_site)
        builder.current = scope
        for definition in self._waiting.pop((id(parent), name), []):
            parsed_source = definition.parse(self.path, self.loader.pythons)
            self._add_problems(parsed_source)
            statements = definition.statements(parsed_source)
            _insert_into(parent, statements)
            for statement in statements:
                builder.visit(statement)
        self.scope_of.update(builder.scope_of)
        self._deferred.update(builder.deferred)
        self.late_calls += builder.calls
        if name in scope.bindings:
            scope.bindings[name].sort(key=lambda binding: _first_line(binding.node))

    def _add_problems(self, parsed: SourceModule) -> None:
        """A deferred definition's syntax error, or its statements that need a newer Python."""
        self.source.problems += parsed.problems
        self.source.skipped += parsed.skipped

    def parse_deferred(self) -> None:
        """Parse every definition still waiting for its name, as a whole-file load would have:
        the module is then the same as one loaded whole (this object, so that what other modules
        resolved into it stays valid)."""
        for _, bindings in self._deferred_bindings:
            for name in sorted(bindings.deferred):
                bindings.get(name)

    def parse_deferred_naming(self, word: str, within: ast.Module | ast.ClassDef) -> bool:
        """Parse every definition still waiting for its name, inside `within` (the module: all
        of them; a class: its methods), whose text names `word`: a walk of `within` for the
        uses of a name or attribute then sees them all. Whether any was parsed."""
        parsed = False
        for parent, bindings in self._deferred_bindings:
            if within is parent or isinstance(within, ast.Module):
                for name in sorted(bindings.deferred):
                    if any(d.names(word) for d in self._waiting.get((id(parent), name), [])):
                        bindings.get(name)
                        parsed = True
        return parsed

    def walk_tags(self) -> None:
        """Parse every definition still waiting for its name that holds a tag: `calls` and
        `late_calls` then hold every call a whole build walks for its tags."""
        self.unwalked_tags = False
        for parent, bindings in self._deferred_bindings:
            for name in sorted(bindings.deferred):
                waiting = self._waiting.get((id(parent), name), [])
                if any(self.source.could_hold_site(_Line(d.start, d.end)) for d in waiting):
                    bindings.get(name)

    def parse_methods(self) -> None:
        """Parse every method still waiting for its name: each class of the tree is then whole,
        as what reads a class's lines from the tree (the names index) expects."""
        for parent, bindings in self._deferred_bindings:
            if isinstance(parent, ast.ClassDef):
                for name in sorted(bindings.deferred):
                    bindings.get(name)

    @property
    def path(self) -> str:
        return self.source.path

    def function_scope(self, node: FunctionNode) -> Scope:
        scope = self.scope_of.get(id(node))
        if scope is None:
            # Not walked yet: deferred by the builder, or inside a value it skipped (a lambda in
            # a module-level dict), whose enclosing scope is the module's.
            _, outer = self._deferred.get(id(node), (node, self.scope))
            builder = ScopeBuilder(self.name, self.is_package)
            scope = builder.build_function(node, outer)
            self.scope_of.update(builder.scope_of)
            self._deferred.pop(id(node), None)
        return scope

    # Qualified names -------------------------------------------------------
    def qualname(self, expr: ast.expr, scope: Scope, depth: int = 0) -> str | None:
        """The dotted name `expr` refers to, following imports and single assignments.

        Names defined in this module get `<module>.<name>`; names imported from a
        workspace module are followed into that module."""
        parts = dotted(expr)
        if depth > MAX_DEPTH:
            return None
        if parts is None:
            return self._through_lazy_import(expr, scope, depth)
        binding, owner = scope.lookup(parts[0])
        if binding is None and owner is None:
            star = self.star_imported(parts[0], depth)
            if not isinstance(star, tuple):
                return None
            module, binding = star
            base = module._binding_qualname(parts[0], binding, module.scope, depth + 1)
        elif binding is None or owner is None:
            return None
        else:
            base = self._binding_qualname(parts[0], binding, owner, depth)
        if base is None:
            return None
        return self.canonical(".".join([base, *parts[1:]]), depth)

    def _through_lazy_import(self, expr: ast.expr, scope: Scope, depth: int) -> str | None:
        """`_jax().checkpoint`, `_jax().numpy`, `_jax()`: the attributes of a call, with no
        arguments, of a lazy-import helper (`def _jax(): import jax; return jax`)."""
        attributes: list[str] = []
        while isinstance(expr, ast.Attribute):
            attributes.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Call) or expr.args or expr.keywords or dotted(expr.func) is None:
            return None
        base = self.lazy_import(expr.func, scope, depth + 1)
        if base is None:
            return None
        return self.canonical(".".join([base, *reversed(attributes)]), depth)

    def lazy_import(self, func: ast.expr, scope: Scope, depth: int = 0) -> str | None:
        """The module a module-level function imports in its body and returns wherever it
        returns something other than None (`def _jax(): import jax; return jax` gives `jax`, and
        so does a `_jax()` that returns None where the import fails), as libraries where JAX is
        optional write; None for any other function."""
        found = self.definition(func, scope, depth)
        if found is None:
            return None
        module, node, owner = found
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or owner is not module.scope:
            return None
        key = id(node)
        if key not in module._lazy_imports:
            module._lazy_imports[key] = module._returned_import(node)
        return module._lazy_imports[key]

    def _returned_import(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        if isinstance(node, ast.AsyncFunctionDef):
            return None  # calling it gives a coroutine, not the module
        body = self.function_scope(node)
        targets = set()
        for _, value in return_paths(node).values():
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue  # the module or None, where importing it failed
            if not isinstance(value, ast.Name):
                return None
            binding, owner = body.lookup(value.id)
            if binding is None or owner is not body or binding.kind != "import":
                return None
            targets.add(binding.target)
        return targets.pop() if len(targets) == 1 else None

    def _binding_qualname(self, name: str, binding: Binding, owner: Scope, depth: int) -> str | None:
        if binding.kind == "import":
            return binding.target
        if binding.kind == "assign" and isinstance(binding.node, ast.expr):
            return self.qualname(binding.node, owner, depth + 1)
        if binding.kind in ("def", "class") and owner is self.scope:
            return f"{self.name}.{name}" if self.name else name
        return None

    def canonical(self, qualname: str, depth: int = 0) -> str:
        """Follow `pkg.mod.name` through a workspace module that re-binds `name`."""
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = self.loader.module(".".join(parts[:split]), self)
            if module is None:
                continue
            if module is self and split == len(parts) - 1:
                return qualname
            binding, owner = module.scope.lookup(parts[split])
            if binding is None or owner is None or binding.kind in ("def", "class", "param", "other"):
                return qualname
            base = module._binding_qualname(parts[split], binding, owner, depth + 1)
            if base is None:
                return qualname
            return ".".join([base, *parts[split + 1 :]])
        return qualname

    def callee_qualname(self, call: ast.Call, scope: Scope) -> str | None:
        """The callee's qualified name; jedi is asked only when the file's imports cannot tell
        and the callee could still be a checkpoint function."""
        name = self.qualname(call.func, scope)
        if name is None and self._jedi_could_name(call.func, scope):
            name = self.loader.jedi_qualname(self, call.func)
        return name

    def _jedi_could_name(self, func: ast.expr, scope: Scope) -> bool:
        parts = dotted(func)
        if parts is None:
            return False
        binding, owner = scope.lookup(parts[0])
        if binding is None and owner is None:
            star = self.star_imported(parts[0])
            if not isinstance(star, tuple):  # none binds it: a builtin (`dict(policy=...)`) or undefined
                return star is UNFOLLOWED
            binding = star[1]
        # A function or class defined here is never a checkpoint function.
        if len(parts) == 1 and binding is not None and binding.kind in ("def", "class"):
            return False
        # Nor is the method of an object (`remat_p = core.Primitive("remat2")`, then
        # `remat_p.bind(..., policy=p)` in JAX's own sources; `worker: Container` or `with
        # make_container() as worker`, then `worker.exec(..., policy="once")`), unless named like
        # one: jedi would take seconds to say so.
        return not (
            len(parts) == 2
            and parts[1] not in CHECKPOINT_FUNCTION_NAMES
            and binding is not None
            and _is_an_object(binding)
        )

    # Star imports ------------------------------------------------------------
    @functools.cached_property
    def _star_sources(self) -> list[str]:
        """The modules this one imports `*` from at its top level, in order."""
        return [
            resolve_relative(self.name, self.is_package, s.level, s.module) if s.level else s.module or ""
            for s in self.source.tree.body
            if isinstance(s, ast.ImportFrom) and any(alias.name == "*" for alias in s.names)
        ]

    def star_imported(self, name: str, depth: int = 0) -> StarImported:
        """Where `name`, which no statement of this module binds, comes from: the last of its
        star imports that exports it (as Python runs them) is followed into the workspace."""
        if depth > MAX_DEPTH:
            return UNFOLLOWED
        for source in reversed(self._star_sources):
            found = self._exported_by(source, name, depth)
            if found is not None:
                return found
        return None

    def _exported_by(self, source: str, name: str, depth: int) -> StarImported:
        """What `from source import *` binds to `name` here."""
        module = self.loader.module(source, self)
        if module is None:
            return UNFOLLOWED  # outside the workspace: jedi may know
        listed = module.listed_names()
        if listed is UNFOLLOWED:
            return UNFOLLOWED
        exported = name in listed if listed is not None else not name.startswith("_")
        if not exported:
            return None
        binding, owner = module.scope.lookup(name)
        if binding is not None:
            return module, binding
        return UNFOLLOWED if owner is not None else module.star_imported(name, depth + 1)

    def listed_names(self) -> set[str] | None | _Unfollowed:
        """The names of `__all__`, where a list or tuple of strings gives it; None where there is
        none (every name not starting with `_` is exported)."""
        bindings = self.scope.bindings.get("__all__")
        if not bindings:
            return None
        value = bindings[0].node if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if not isinstance(value, (ast.List, ast.Tuple)):
            return UNFOLLOWED
        names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return set(names) if len(names) == len(value.elts) else UNFOLLOWED

    # Definitions -----------------------------------------------------------
    def definition(self, expr: ast.expr, scope: Scope, depth: int = 0) -> Definition | None:
        """(module, node, scope) that a Name/Attribute refers to, across modules; or None.

        node is a FunctionDef/Lambda/ClassDef or the assigned expression."""
        if isinstance(expr, ast.Name):
            binding, owner = scope.lookup(expr.id)
            return self._definition_of_binding(binding, owner, depth)
        if isinstance(expr, ast.Attribute) and depth <= MAX_DEPTH:
            found = self.class_attribute(expr, scope, depth)
            if found is not None:
                return found
        qualname = self.qualname(expr, scope) if dotted(expr) else None
        return self.definition_of_qualname(qualname, depth + 1) if qualname else None

    def class_attribute(self, expr: ast.Attribute, scope: Scope, depth: int) -> Definition | None:
        """`Cls.attr` where `Cls` is a class (here or imported) that binds `attr` once in its body."""
        owner = self.definition(expr.value, scope, depth + 1) if dotted(expr.value) else None
        if owner is None or not isinstance(owner[1], ast.ClassDef):
            return None
        module, node, _ = owner
        body = module.scope_of.get(id(node))
        if body is None:
            return None
        found = body.bindings.get(expr.attr)
        if not found or len(found) != 1:
            return None
        return module._definition_of_binding(found[0], body, depth + 1)

    def definition_of_qualname(self, qualname: str, depth: int = 0) -> Definition | None:
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = self.loader.module(".".join(parts[:split]), self)
            if module is None:
                continue
            if split != len(parts) - 1:
                return None  # an attribute of an object in that module: not followed
            binding, owner = module.scope.lookup(parts[split])
            return module._definition_of_binding(binding, owner, depth)
        return None

    def _definition_of_binding(
        self, binding: Binding | None, owner: Scope | None, depth: int
    ) -> Definition | None:
        if binding is None or owner is None or depth > MAX_DEPTH:
            return None
        if binding.kind in ("def", "class", "assign"):
            return self, binding.node, owner
        if binding.kind == "import":
            return self.definition_of_qualname(binding.target, depth + 1)
        return None


def _is_an_object(binding: Binding) -> bool:
    """Whether the name is bound to an object of a class: a call of a capitalized name, a
    parameter annotated with one, or what a `with` statement's context manager gives."""
    if binding.kind == "with":
        return True
    if binding.kind == "assign" and isinstance(binding.node, ast.Call):
        made_by = dotted(binding.node.func)
    elif (
        binding.kind == "param" and isinstance(binding.node, ast.arg) and binding.node.annotation is not None
    ):
        made_by = dotted(binding.node.annotation)
    else:
        return False
    return (made_by or ["_"])[-1][:1].isupper()


def _insert_into(parent: ast.Module | ast.ClassDef, statements: list[ast.stmt]) -> None:
    """Statements into the module or class, in line order; a class ends where its last
    statement does (as parsed whole)."""
    body = parent.body
    for statement in statements:
        body.insert(bisect.bisect_left([_first_line(s) for s in body], _first_line(statement)), statement)
    last = body[-1] if body else None
    if isinstance(parent, ast.ClassDef) and last is not None and last.end_lineno is not None:
        if (last.end_lineno, last.end_col_offset) > (parent.end_lineno, parent.end_col_offset):
            parent.end_lineno, parent.end_col_offset = last.end_lineno, last.end_col_offset


def _first_line(node: BoundNode) -> int:
    """The 0-based first line of a statement, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]) - 1

"""The parameters of a checkpointed function that some call of the checkpointed callable, in
the module that checkpoints it, can pass (JAX119: a parameter that keeps its default on every
road is not traced).

The roads followed from the checkpoint: a call of it; `functools.partial` of it (its arguments
count as passed); a transform that calls it with the arguments its result is given (`vmap`,
`jit`, `nn.scan`...: `jax_api.FORWARDING_TRANSFORMS`); a JAX loop that calls it with arguments
of its own (`lax.scan` passes two: `jax_api.LOOP_CALLS`); a name or `self.` attribute it is
bound to (every use of that name in the function, or the class, that binds it). For a Flax
`Module` class: the instances its calls make, and their calls, `apply` and `init` (whose first
argument is the variables or the random key). What leaves these roads (returned, stored, passed
to another function) is not followed: its callers are unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope
from jax_lsp.core.jax_api import FORWARDING_TRANSFORMS, LOOP_CALLS, PARTIAL
from jax_lsp.core.policies.checkpointed import Checkpointed, function_given

# A Module instance's methods that call `__call__` with the arguments after their first.
_APPLYING = ("apply", "init", "init_with_output")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_ROADS_FOLLOWED = 64  # how many values a checkpoint's roads may go through


def defaulted(wrapped: Checkpointed) -> set[str]:
    """The parameters of the checkpointed function that have a default."""
    args = wrapped.function.args
    positional = [*args.posonlyargs, *args.args]
    with_default = {p.arg for p in positional[len(positional) - len(args.defaults) :]}
    return with_default | {p.arg for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}


def passed_parameters(module: Module, wrapped: Checkpointed) -> set[str]:
    """The parameters of `wrapped.function` that some call of the checkpointed callable in
    `module` can pass, by position, keyword, `*args` or `**kwargs`."""
    # A definition left unparsed (core/text/deferred.py) holds no use of the names followed:
    # a name bound from a checkpoint's call marks the lines that use it (SourceModule.mark_name).
    return _Roads(module, wrapped).passed()


class _Roads:
    def __init__(self, module: Module, wrapped: Checkpointed) -> None:
        self.module = module
        self.wrapped = wrapped
        args = wrapped.function.args
        self.positional = [p.arg for p in [*args.posonlyargs, *args.args]]
        self.by_keyword = {*self.positional[len(args.posonlyargs) :], *(p.arg for p in args.kwonlyargs)}
        self.parents: dict[int, ast.AST] = {}
        self.found: set[str] = set()
        self.todo: list[tuple[ast.expr, str, int]] = []  # (value, kind, first positional index)
        self.seen: set[tuple[int, str, int]] = set()

    def passed(self) -> set[str]:
        tree = self.module.source.tree
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        kind = "class" if self.wrapped.of_class else "function"
        self._start(kind)
        followed = 0
        while (
            self.todo and followed < _ROADS_FOLLOWED and self.found != set(self.positional) | self.by_keyword
        ):
            value, kind, first = self.todo.pop()
            followed += 1
            self._follow(value, kind, first)
        return self.found

    def _push(self, value: ast.expr, kind: str, first: int) -> None:
        if (id(value), kind, first) not in self.seen:
            self.seen.add((id(value), kind, first))
            self.todo.append((value, kind, first))

    def _start(self, kind: str) -> None:
        """The checkpointed callable: the checkpoint's call, the call that applies a bare one
        (`partial(jax.checkpoint, ...)(f)`), or the function it decorates."""
        call = self.wrapped.call
        parent = self.parents.get(id(call))
        if function_given(self.module, call, self._scope_at(call)) is not None:
            self._push(call, kind, 0)
        elif isinstance(parent, ast.Call) and parent.func is call:
            self._push(parent, kind, 0)
        elif isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and call in parent.decorator_list:
            holder = self.parents.get(id(parent))
            if isinstance(holder, ast.ClassDef):  # a method: called as `self.name(...)`, self bound
                self._uses_of_attribute(parent.name, holder, kind, 1)
            else:
                self._uses_of_name(parent.name, holder, kind, 0)

    def _follow(self, value: ast.expr, kind: str, first: int) -> None:
        parent = self.parents.get(id(value))
        if isinstance(parent, ast.Call) and parent.func is value:
            if kind == "class":  # an instance: its `__call__` gets `self` first
                self._push(parent, "instance", 1)
            else:
                self._call(parent, first)
        elif isinstance(parent, ast.Call) and value in parent.args:
            self._handed_to(parent, parent.args.index(value), kind, first)
        elif isinstance(parent, ast.Attribute) and kind == "instance" and parent.attr in _APPLYING:
            call = self.parents.get(id(parent))
            if (
                isinstance(call, ast.Call)
                and call.func is parent
                and all(k.arg != "method" for k in call.keywords)
            ):
                self._call(call, 0)  # apply(variables, *args): the variables take `self`'s place
        elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is value:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            for target in targets:
                self._bound_to(target, kind, first)

    def _bound_to(self, target: ast.expr, kind: str, first: int) -> None:
        if isinstance(target, ast.Name):
            self._uses_of_name(target.id, self._enclosing(target), kind, first)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            holder = self._enclosing(target)
            while holder is not None and not isinstance(holder, (ast.ClassDef, ast.Module)):
                holder = self._enclosing(holder)
            self._uses_of_attribute(target.attr, holder, kind, first)

    def _handed_to(self, call: ast.Call, position: int, kind: str, first: int) -> None:
        scope = self._scope_at(call)
        qualname = self.module.qualname(call.func, scope)
        if qualname in PARTIAL and position == 0:
            bound = call.args[1:]
            if kind != "class":
                self._call(ast.Call(func=call.func, args=bound, keywords=call.keywords), first)
                first += len(bound)
            self._push(call, kind, first)
        elif qualname in FORWARDING_TRANSFORMS and position == 0:
            self._push(call, kind, first)
        elif (
            qualname in LOOP_CALLS and LOOP_CALLS[qualname].function_position == position and kind != "class"
        ):
            self._indices(range(first, first + LOOP_CALLS[qualname].passes))

    def _call(self, call: ast.Call, first: int) -> None:
        """What a call of the checkpointed function, its first argument at parameter `first`,
        can pass."""
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                self._indices(range(first + index, len(self.positional)))
                break
            self._indices([first + index])
        for keyword in call.keywords:
            if keyword.arg is None:
                self.found |= self.by_keyword
            elif keyword.arg in self.by_keyword:
                self.found.add(keyword.arg)

    def _indices(self, indices: range | list[int]) -> None:
        self.found.update(self.positional[i] for i in indices if 0 <= i < len(self.positional))

    def _uses_of_name(self, name: str, holder: ast.AST | None, kind: str, first: int) -> None:
        for node in _walk(holder):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                self._push(node, kind, first)

    def _uses_of_attribute(self, name: str, holder: ast.AST | None, kind: str, first: int) -> None:
        for node in _walk(holder):
            if isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load):
                self._push(node, kind, first)

    def _enclosing(self, node: ast.AST) -> ast.AST | None:
        """The innermost function, class or module around `node`."""
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, _SCOPES):
            parent = self.parents.get(id(parent))
        return parent

    def _scope_at(self, node: ast.AST) -> Scope:
        holder = self._enclosing(node)
        while isinstance(holder, ast.ClassDef):
            holder = self._enclosing(holder)
        if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return self.module.function_scope(holder)
        return self.module.scope


def _walk(holder: ast.AST | None) -> Iterator[ast.AST]:
    return ast.walk(holder) if holder is not None else iter(())

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

Through Flax's lifted `scan`, `vmap` and `jit` (`jax_api.LIFTED_TRANSFORMS`) an argument may
not arrive as it was passed: on a scanned or mapped axis it arrives sliced (traced, whatever the
checkpoint's `static_argnums` says), through a `jit` that does not make it static it arrives
traced, and `scan` and `vmap` drop keyword arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, string_constant
from jax_lsp.core.jax_api import (
    FORWARDING_TRANSFORMS,
    LIFTED_TRANSFORMS,
    LOOP_CALLS,
    PARTIAL,
    LiftedArguments,
)
from jax_lsp.core.policies.checkpointed import STATIC_ARGNUMS, Checkpointed, function_given, static_indices
from jax_lsp.core.record import Record

# A Module instance's methods that call `__call__` with the arguments after their first.
_APPLYING = ("apply", "init", "init_with_output")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_ROADS_FOLLOWED = 64  # how many values a checkpoint's roads may go through


# How an argument arrives at the checkpoint through a lifted transform.
_AS_IS, _SLICED, _TRACED = "as is", "sliced", "traced"


class Passed(Record):
    """What the calls of a checkpointed callable, in the module that checkpoints it, can pass each
    parameter of its function: as it is (a Python value reaches the checkpoint), sliced by a
    lifted `scan` or `vmap` (an array, traced on that road whatever `static_argnums` says), or
    traced by a lifted `jit` that does not make it static (with that `jit`'s call and the index
    its `static_argnums` would need, None for a keyword-only parameter)."""

    __slots__ = ("as_is", "sliced", "jitted")
    as_is: set[str]
    sliced: set[str]
    jitted: dict[str, tuple[ast.Call, int | None]]

    def __init__(
        self, as_is: set[str], sliced: set[str], jitted: dict[str, tuple[ast.Call, int | None]]
    ) -> None:
        self._assign(as_is, sliced, jitted)


class _Lift(Record):
    """A lifted transform a road goes through: its call, what it does with the arguments, and
    the index of the parameter that is the module (Flax's argument 0)."""

    __slots__ = ("call", "lifted", "base")
    call: ast.Call
    lifted: LiftedArguments
    base: int

    def __init__(self, call: ast.Call, lifted: LiftedArguments, base: int) -> None:
        self._assign(call, lifted, base)


_Lifts = tuple[_Lift, ...]


def defaulted(wrapped: Checkpointed) -> set[str]:
    """The parameters of the checkpointed function that have a default."""
    args = wrapped.function.args
    positional = [*args.posonlyargs, *args.args]
    with_default = {p.arg for p in positional[len(positional) - len(args.defaults) :]}
    return with_default | {p.arg for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}


def passed_parameters(module: Module, wrapped: Checkpointed) -> Passed:
    """The parameters of `wrapped.function` that some call of the checkpointed callable in
    `module` can pass, by position, keyword, `*args` or `**kwargs`, and how they arrive."""
    return _Roads(module, wrapped).passed()


class _Roads:
    def __init__(self, module: Module, wrapped: Checkpointed) -> None:
        self.module = module
        self.wrapped = wrapped
        args = wrapped.function.args
        self.positional = [p.arg for p in [*args.posonlyargs, *args.args]]
        self.by_keyword = {*self.positional[len(args.posonlyargs) :], *(p.arg for p in args.kwonlyargs)}
        self.parents: dict[int, ast.AST] = {}
        self.found = Passed(set(), set(), {})
        # (value, kind, first positional index, the lifted transforms on the way)
        self.todo: list[tuple[ast.expr, str, int, _Lifts]] = []
        self.seen: set[tuple[int, str, int, tuple[int, ...]]] = set()

    def passed(self) -> Passed:
        self._index_parents()
        kind = "class" if self.wrapped.of_class else "function"
        self._start(kind)
        followed = 0
        every = set(self.positional) | self.by_keyword
        while self.todo and followed < _ROADS_FOLLOWED and self.found.as_is != every:
            followed += 1
            self._follow(*self.todo.pop())
        return self.found

    def _push(self, value: ast.expr, kind: str, first: int, lifts: _Lifts = ()) -> None:
        key = (id(value), kind, first, tuple(id(lift.call) for lift in lifts))
        if key not in self.seen:
            self.seen.add(key)
            self.todo.append((value, kind, first, lifts))

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
                self._uses_of_attribute(parent.name, holder, kind, 1, ())
            else:
                self._uses_of_name(parent.name, holder, kind, 0, ())

    def _follow(self, value: ast.expr, kind: str, first: int, lifts: _Lifts) -> None:
        parent = self.parents.get(id(value))
        if isinstance(parent, ast.Call) and parent.func is value:
            if kind == "class":  # an instance: its `__call__` gets `self` first
                self._push(parent, "instance", 1, lifts)
            else:
                self._call(parent, first, lifts)
        elif isinstance(parent, ast.Call) and value in parent.args:
            self._handed_to(parent, parent.args.index(value), kind, first, lifts)
        elif isinstance(parent, ast.Attribute) and kind == "instance" and parent.attr in _APPLYING:
            call = self.parents.get(id(parent))
            if (
                isinstance(call, ast.Call)
                and call.func is parent
                and all(k.arg != "method" for k in call.keywords)
            ):
                self._call(call, 0, lifts)  # apply(variables, *args): the variables take `self`'s place
        elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is value:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            for target in targets:
                self._bound_to(target, kind, first, lifts)

    def _bound_to(self, target: ast.expr, kind: str, first: int, lifts: _Lifts) -> None:
        if isinstance(target, ast.Name):
            self._uses_of_name(target.id, self._enclosing(target), kind, first, lifts)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            holder = self._enclosing(target)
            while holder is not None and not isinstance(holder, (ast.ClassDef, ast.Module)):
                holder = self._enclosing(holder)
            self._uses_of_attribute(target.attr, holder, kind, first, lifts)

    def _handed_to(self, call: ast.Call, position: int, kind: str, first: int, lifts: _Lifts) -> None:
        scope = self._scope_at(call)
        qualname = self.module.qualname(call.func, scope)
        if qualname in PARTIAL and position == 0:
            bound = call.args[1:]
            if kind != "class":
                self._call(ast.Call(func=call.func, args=bound, keywords=call.keywords), first, lifts)
                first += len(bound)
            self._push(call, kind, first, lifts)
        elif qualname in FORWARDING_TRANSFORMS and position == 0:
            lifted = LIFTED_TRANSFORMS.get(qualname or "")
            if lifted is not None and all(k.arg != "methods" for k in call.keywords):
                lifts = (*lifts, _Lift(call, lifted, first))
            self._push(call, kind, first, lifts)
        elif (
            qualname in LOOP_CALLS and LOOP_CALLS[qualname].function_position == position and kind != "class"
        ):
            self._arrive(self.positional[first : first + LOOP_CALLS[qualname].passes], ())

    def _call(self, call: ast.Call, first: int, lifts: _Lifts) -> None:
        """What a call of the checkpointed function, its first argument at parameter `first`,
        can pass, through the lifted transforms `lifts`."""
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                self._arrive(self.positional[max(first + index, 0) :], lifts)
                break
            if 0 <= first + index < len(self.positional):
                self._arrive([self.positional[first + index]], lifts)
        if any(lift.lifted.drops_keywords for lift in lifts):
            return  # dropped by the transform: those parameters keep their defaults
        for keyword in call.keywords:
            if keyword.arg is None:
                self._arrive(self.by_keyword, lifts)
            elif keyword.arg in self.by_keyword:
                self._arrive([keyword.arg], lifts)

    def _arrive(self, names: Iterable[str], lifts: _Lifts) -> None:
        """Record how the arguments for the parameters `names` reach the checkpoint."""
        for name in names:
            index = self.positional.index(name) if name in self.positional else None
            arrivals = [(lift, _arrival(lift, name, index)) for lift in lifts]
            if any(how == _SLICED for _, how in arrivals):
                self.found.sliced.add(name)
                continue
            self.found.as_is.add(name)
            jitted = [lift for lift, how in arrivals if how == _TRACED]
            if jitted and name not in self.found.jitted:
                lift = jitted[0]
                self.found.jitted[name] = (lift.call, None if index is None else index - lift.base)

    def _index_parents(self, root: ast.AST | None = None) -> None:
        for parent in ast.walk(root or self.module.source.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent

    def _uses_of_name(self, name: str, holder: ast.AST | None, kind: str, first: int, lifts: _Lifts) -> None:
        for node in self._walk(holder, name):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                self._push(node, kind, first, lifts)

    def _uses_of_attribute(
        self, name: str, holder: ast.AST | None, kind: str, first: int, lifts: _Lifts
    ) -> None:
        for node in self._walk(holder, name):
            if isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load):
                self._push(node, kind, first, lifts)

    def _walk(self, holder: ast.AST | None, name: str) -> Iterator[ast.AST]:
        """The nodes of `holder`, its definitions left unparsed for the sites (core/text/deferred.py)
        that name `name` parsed first: a method that calls a `setup` attribute holds no trigger."""
        if holder is None:
            return iter(())
        if isinstance(holder, (ast.Module, ast.ClassDef)) and self.module.parse_deferred_naming(name, holder):
            self._index_parents(holder)  # what was parsed lies inside it
        return ast.walk(holder)

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


def _arrival(lift: _Lift, name: str, index: int | None) -> str:
    """How the argument for the parameter `name` (`index` among the positional ones, None when
    keyword-only) arrives through `lift`: as it is, sliced, or traced. What is not known (axes
    or static arguments not written as constants) counts as arriving as it is."""
    lifted, call = lift.lifted, lift.call
    position = None if index is None else index - lift.base  # Flax's count: the module is 0
    if lifted.static_position is not None:
        nums = _given(call, STATIC_ARGNUMS, lifted.static_position)
        names = _given(call, "static_argnames", lifted.static_position + 1)
        known = _constants(nums, _index)
        known_names = _constants(names, string_constant)
        if known is None or known_names is None or position in known or name in known_names:
            return _AS_IS
        return _TRACED
    if lifted.axes_position is None or position is None or position < 1:
        return _AS_IS  # no axes, a keyword-only parameter, or the module itself
    if position <= lifted.carried:
        return _SLICED  # the loop's carry
    axes = _given(call, "in_axes", lifted.axes_position)
    if axes is None:
        return _SLICED  # the default axis, 0
    if isinstance(axes, (ast.Tuple, ast.List)):  # one axis an argument
        at = position - 1 - lifted.carried
        axes = axes.elts[at] if at < len(axes.elts) else None
    integer = axes is not None and not isinstance(axes, (ast.Tuple, ast.List)) and static_indices(axes)
    return _SLICED if integer else _AS_IS


def _given(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    """The argument of the transform's call named `keyword`, or at `position`."""
    value = next((k.value for k in call.keywords if k.arg == keyword), None)
    if value is None and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        value = call.args[position]
    return value


def _index(item: ast.expr) -> int | None:
    """An index of `static_argnums` written as a number that counts from the start."""
    return next((index for _, index in static_indices(item) if index >= 0), None)


def _constants(value: ast.expr | None, read: Callable[[ast.expr], object | None]) -> set[object] | None:
    """The constants of a `static_argnums`/`static_argnames` value (empty when it is absent), or
    None when some item is not a constant `read` knows."""
    if value is None:
        return set()
    items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    found = [read(item) for item in items]
    return None if any(item is None for item in found) else set(found)

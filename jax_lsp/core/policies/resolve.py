"""From a site's policy expression to the definitions JAX will call.

Followed: a `def` or `lambda`; names assigned once; imports from workspace modules;
`functools.partial(def, ...)`; calls of local factories (their returned defs and
lambdas); both branches of `a if c else b`; members of `jax.checkpoint_policies`;
the arguments of `save_from_both_policies`; literals that JAX would try to call; lookups in
a policy table (`POLICIES[key]`, `POLICIES.get(key)`): the entry of a constant key, every
entry when the key is unknown; a name bound more than once, by the assignments that can reach
the use (reaching.py). A factory's returns where the module JAX came from is None are not
followed: JAX is absent there (guards.py). Anything else is unknown and yields nothing.
"""

from __future__ import annotations

import ast

from jax_lsp.core.binding.guards import paths_with_jax
from jax_lsp.core.binding.module import MAX_DEPTH, Module
from jax_lsp.core.binding.reaching import reaching_values
from jax_lsp.core.binding.scopes import FunctionNode, Scope
from jax_lsp.core.findings import Span
from jax_lsp.core.jax_api import PARTIAL, SAVE_FROM_BOTH, policy_member
from jax_lsp.core.policies.sites import Site
from jax_lsp.core.policies.tables import Table, TableChoice, find_table, lookup
from jax_lsp.core.record import Record


class PolicyFunction(Record):
    """A user-written function that JAX calls as `policy(prim, *avals, **params)`."""

    __slots__ = (
        "module",
        "node",
        "scope",
        "bound_positional",
        "bound_keywords",
        "in_save_from_both",
        "reached_from",
        "chosen_by",
    )
    module: Module
    node: FunctionNode
    scope: Scope  # the scope the function is defined in
    bound_positional: int  # positional arguments bound by functools.partial
    bound_keywords: frozenset[str]
    in_save_from_both: bool
    # Where it reaches JAX: (path, span) of the site's policy value. Not the Site itself,
    # which would keep the whole site module alive as long as this policy is remembered.
    reached_from: tuple[str, Span]
    chosen_by: TableChoice | None  # the table entry it comes from, when the key is unknown

    def __init__(
        self,
        module: Module,
        node: FunctionNode,
        scope: Scope,
        bound_positional: int,
        bound_keywords: frozenset[str],
        in_save_from_both: bool,
        reached_from: tuple[str, Span],
        chosen_by: TableChoice | None = None,
    ) -> None:
        self._assign(
            module, node, scope, bound_positional, bound_keywords, in_save_from_both, reached_from, chosen_by
        )

    @property
    def key(self) -> tuple[str, int]:
        return (self.module.path, id(self.node))


class BuiltinPolicy(Record):
    """A member of `jax.checkpoint_policies` named at (or on the way to) a site."""

    __slots__ = ("member", "module", "expr", "call", "in_save_from_both", "chosen_by")
    member: str
    module: Module
    expr: ast.expr  # where it is named
    call: ast.Call | None  # set when it is called there
    in_save_from_both: bool
    chosen_by: TableChoice | None

    def __init__(
        self,
        member: str,
        module: Module,
        expr: ast.expr,
        call: ast.Call | None,
        in_save_from_both: bool = False,
        chosen_by: TableChoice | None = None,
    ) -> None:
        self._assign(member, module, expr, call, in_save_from_both, chosen_by)


class LiteralValue(Record):
    """A literal that JAX would call as the policy: a string, a number, `True`, a non-empty
    container (a falsy one, like `None`, JAX reads as "no policy")."""

    __slots__ = ("module", "expr", "scope", "chosen_by")
    module: Module
    expr: ast.expr
    scope: Scope  # where it is written
    chosen_by: TableChoice | None

    def __init__(
        self, module: Module, expr: ast.expr, scope: Scope, chosen_by: TableChoice | None = None
    ) -> None:
        self._assign(module, expr, scope, chosen_by)


# What a site's policy value resolves to: a function, one of JAX's, or a literal.
ResolvedPolicy = PolicyFunction | BuiltinPolicy | LiteralValue


class Wrapping(Record):
    """What wraps a policy on its way to JAX: the arguments `functools.partial` bound, and
    whether `save_from_both_policies` holds it."""

    __slots__ = ("positional", "keywords", "in_save_from_both")
    positional: int
    keywords: frozenset[str]
    in_save_from_both: bool

    def __init__(self, positional: int, keywords: frozenset[str], in_save_from_both: bool) -> None:
        self._assign(positional, keywords, in_save_from_both)


NOT_WRAPPED = Wrapping(0, frozenset(), False)
IN_SAVE_FROM_BOTH = Wrapping(0, frozenset(), True)


def _called_literal(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return bool(expr.value)
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return bool(expr.elts)
    return isinstance(expr, ast.Dict) and bool(expr.keys)


def resolve_site(site: Site) -> list[ResolvedPolicy]:
    if site.value is None:
        return []
    reached_from = (site.module.path, site.module.source.span(site.value))
    return _Resolver(reached_from).resolve(site.module, site.value, site.scope, NOT_WRAPPED, 0)


def unselected_entries(site: Site) -> list[ResolvedPolicy]:
    """The members of the policy tables the site looks up with a constant key that no key used
    there selects: selecting one later hands it to JAX. Only the tables whose every entry is a
    policy (a member of `jax.checkpoint_policies`, or a function, with at least one member),
    each target marked with the key that would select it."""
    if site.value is None:
        return []
    resolver = _Resolver((site.module.path, site.module.source.span(site.value)), unselected=[])
    resolver.resolve(site.module, site.value, site.scope, NOT_WRAPPED, 0)
    return resolver.unselected or []


def table_members(site: Site) -> list[ResolvedPolicy]:
    """Every member of the policy tables the site looks up, however its key is given (as
    `unselected_entries`, the member a constant key selects included; for an unknown key, every
    member), each marked with the key that selects it."""
    if site.value is None:
        return []
    resolver = _Resolver((site.module.path, site.module.source.span(site.value)), unselected=[], every=True)
    chosen = resolver.resolve(site.module, site.value, site.scope, NOT_WRAPPED, 0)
    return [t for t in chosen if t.chosen_by is not None] + (resolver.unselected or [])


class _Resolver:
    def __init__(
        self,
        reached_from: tuple[str, Span],
        unselected: list[ResolvedPolicy] | None = None,
        every: bool = False,
    ):
        self.reached_from = reached_from
        # Where the entries that constant keys leave unselected are gathered, when asked for
        # (`every`: the selected one too).
        self.unselected = unselected
        self.every = every
        self.seen: set[tuple[int, int, bool, tuple[tuple[int, str, object], ...]]] = set()
        # The parameters of the helpers being followed that their call binds to a literal:
        # id(def) -> {parameter: value}.
        self.literals: dict[int, dict[str, object]] = {}

    def resolve(
        self,
        module: Module,
        expr: ast.expr,
        scope: Scope,
        wrapping: Wrapping,
        depth: int,
    ) -> list[ResolvedPolicy]:
        frame = tuple(
            sorted((f, name, value) for f, named in self.literals.items() for name, value in named.items())
        )
        visit = (id(expr), wrapping.positional, wrapping.in_save_from_both, frame)
        if depth > MAX_DEPTH or visit in self.seen:
            return []
        self.seen.add(visit)
        step = depth + 1

        if isinstance(expr, ast.Lambda):
            return [self._function(module, expr, scope, wrapping)]
        if _called_literal(expr):
            return [LiteralValue(module, expr, scope)]
        if isinstance(expr, ast.IfExp):
            return [
                *self.resolve(module, expr.body, scope, wrapping, step),
                *self.resolve(module, expr.orelse, scope, wrapping, step),
            ]
        looked_up = lookup(expr)
        if looked_up is not None:
            entries = self._lookup(module, *looked_up, scope, wrapping, step)
            if entries is not None or isinstance(expr, ast.Subscript):
                return entries or []
        if isinstance(expr, ast.Call):
            return self._call(module, expr, scope, wrapping, step)
        if isinstance(expr, (ast.Name, ast.Attribute)):
            member = policy_member(module.qualname(expr, scope))
            if member:
                return [BuiltinPolicy(member, module, expr, None, wrapping.in_save_from_both)]
            found = module.definition(expr, scope)
            if found is None:
                return self._reaching(module, expr, scope, wrapping, step)
            def_module, node, owner = found
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return [self._function(def_module, node, owner, wrapping)]
            if isinstance(node, ast.expr):
                return self.resolve(def_module, node, owner, wrapping, step)
        return []

    def _function(
        self, module: Module, node: FunctionNode, scope: Scope, wrapping: Wrapping
    ) -> PolicyFunction:
        return PolicyFunction(
            module,
            node,
            scope,
            wrapping.positional,
            wrapping.keywords,
            wrapping.in_save_from_both,
            self.reached_from,
        )

    def _reaching(
        self,
        module: Module,
        expr: ast.expr,
        scope: Scope,
        wrapping: Wrapping,
        step: int,
    ) -> list[ResolvedPolicy]:
        """A name bound more than once: what each assignment or `def` that can reach it gives."""
        if not isinstance(expr, ast.Name):
            return []
        owner = scope.lookup(expr.id)[1]
        targets: list[ResolvedPolicy] = []
        for value in reaching_values(expr, scope) or ():
            if isinstance(value, ast.expr):
                targets += self.resolve(module, value, scope, wrapping, step)
            elif owner is not None:
                targets.append(self._function(module, value, owner, wrapping))
        return targets

    def _lookup(
        self,
        module: Module,
        table_expr: ast.expr,
        key: ast.expr,
        default: ast.expr | None,
        scope: Scope,
        wrapping: Wrapping,
        step: int,
    ) -> list[ResolvedPolicy] | None:
        """`TABLE[key]` / `TABLE.get(key, default)`: the entry of a constant key; every entry of
        an unknown key, each marked with the key that selects it. None: not a table."""
        table = find_table(module, table_expr, scope)
        if table is None:
            return None
        more = self.resolve(module, default, scope, wrapping, step) if default is not None else []
        known, value = self._constant(key, scope)
        if known:
            entry = table.entry(value)
            if self.unselected is not None:
                self._gather_unselected(table, entry, wrapping, step)
            if entry is None:
                return more
            return self.resolve(table.module, entry, table.scope, wrapping, step) + more
        targets: list[ResolvedPolicy] = []
        for name, value in table.entries:
            choice = table.choice(name, value)
            for target in self.resolve(table.module, value, table.scope, wrapping, step):
                targets.append(target if target.chosen_by else target.replace(chosen_by=choice))
        if not any(isinstance(t, (PolicyFunction, BuiltinPolicy)) for t in targets):
            # Not a policy table (a config dict of numbers and strings): its literals are no policies.
            targets = []
        return targets + more

    def _gather_unselected(
        self,
        table: Table,
        selected: ast.expr | None,
        wrapping: Wrapping,
        step: int,
    ) -> None:
        by_entry = [
            (name, value, self.resolve(table.module, value, table.scope, wrapping, step))
            for name, value in table.entries
        ]
        policies = all(
            targets and all(isinstance(t, (PolicyFunction, BuiltinPolicy)) for t in targets)
            for _, _, targets in by_entry
        )
        if not policies or not any(isinstance(t, BuiltinPolicy) for _, _, ts in by_entry for t in ts):
            return
        for name, value, targets in by_entry:
            if (self.every or value is not selected) and self.unselected is not None:
                choice = table.choice(name, value)
                self.unselected += [t if t.chosen_by else t.replace(chosen_by=choice) for t in targets]

    def _call(
        self,
        module: Module,
        call: ast.Call,
        scope: Scope,
        wrapping: Wrapping,
        step: int,
    ) -> list[ResolvedPolicy]:
        qualname = module.qualname(call.func, scope)
        if qualname in PARTIAL and call.args:
            more = frozenset(k.arg for k in call.keywords if k.arg)
            partial = Wrapping(
                wrapping.positional + len(call.args) - 1, wrapping.keywords | more, wrapping.in_save_from_both
            )
            return self.resolve(module, call.args[0], scope, partial, step)
        member, factory = self._callee(module, call.func, scope)
        if member == SAVE_FROM_BOTH:
            targets: list[ResolvedPolicy] = [
                BuiltinPolicy(member, module, call.func, call, wrapping.in_save_from_both)
            ]
            for argument in call.args:
                targets += self.resolve(module, argument, scope, IN_SAVE_FROM_BOTH, step)
            return targets
        if member:
            return [BuiltinPolicy(member, module, call.func, call, wrapping.in_save_from_both)]
        if factory is None:
            return []
        # A local factory: the policies are what its return statements give.
        factory_module, factory_def = factory
        factory_scope = factory_module.function_scope(factory_def)
        targets = []
        outer = self.literals
        self.literals = {**outer, id(factory_def): self._literal_arguments(call, factory_def, scope)}
        try:
            for _, value in paths_with_jax(factory_module, factory_def).values():
                if value is not None:
                    targets += self.resolve(factory_module, value, factory_scope, wrapping, step)
        finally:
            self.literals = outer
        return targets

    def _constant(self, expr: ast.expr, scope: Scope) -> tuple[bool, object]:
        """(True, value) for a literal, or a parameter of a helper being followed whose call
        binds it to a literal (and that the helper does not rebind); else (False, None)."""
        if isinstance(expr, ast.Constant):
            return True, expr.value
        if isinstance(expr, ast.Name):
            binding, owner = scope.lookup(expr.id)
            if binding is not None and owner is not None and binding.kind == "param":
                named = self.literals.get(id(owner.node), {})
                if expr.id in named:
                    return True, named[expr.id]
        return False, None

    def _literal_arguments(
        self, call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope
    ) -> dict[str, object]:
        """The parameters of `function` that `call` binds to a literal: an argument written as
        one (or itself a parameter bound so), else a literal default the call leaves alone."""
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        given: dict[str, ast.expr] = {}
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                return {}  # which parameter gets what is unknown from here on
            if index < len(positional):
                given[positional[index].arg] = argument
        for keyword in call.keywords:
            if keyword.arg is None:
                return {}  # `**kwargs`: any parameter may be given
            given[keyword.arg] = keyword.value
        defaults = dict(
            zip([p.arg for p in positional[len(positional) - len(args.defaults) :]], args.defaults)
        )
        defaults.update((p.arg, d) for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        literals: dict[str, object] = {}
        for name, default in defaults.items():
            if name not in given and isinstance(default, ast.Constant):
                literals[name] = default.value
        for name, argument in given.items():
            known, value = self._constant(argument, scope)
            if known:
                literals[name] = value
        return literals

    def _callee(
        self, module: Module, func: ast.expr, scope: Scope, depth: int = 0
    ) -> tuple[str | None, tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef] | None]:
        """What a call calls: (member of jax.checkpoint_policies, None), (None, (module, def)) for
        a function of the workspace, or (None, None). A `functools.partial` of either, written
        there or bound to a name, calls what it wraps."""
        if depth > MAX_DEPTH:
            return None, None
        member = policy_member(module.qualname(func, scope))
        if member:
            return member, None
        wrapped: ast.AST
        if isinstance(func, ast.Call):
            wrapped = func
        else:
            found = module.definition(func, scope)
            if found is None:
                return None, None
            module, wrapped, scope = found
            if isinstance(wrapped, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None, (module, wrapped)
        if isinstance(wrapped, ast.Call) and wrapped.args and module.qualname(wrapped.func, scope) in PARTIAL:
            return self._callee(module, wrapped.args[0], scope, depth + 1)
        return None, None

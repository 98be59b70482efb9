"""Policy sites: where a value reaches JAX as a remat policy."""

from __future__ import annotations

import ast

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, dotted
from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES, CHECKPOINT_FUNCTIONS, PARTIAL, CheckpointFunction
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# The checkpoint a call is taken for while deciding whether to ask jedi what it is.
CHECKPOINT = "jax.checkpoint"
# The name of the wrapped-function parameter, when passed by keyword.
FUNCTION_KEYWORDS = {"fun", "target", "fn", "f"}


class Site(Record):
    __slots__ = (
        "module",
        "call",
        "function",
        "scope",
        "value",
        "positional_policy",
        "missing_function",
        "via_partial",
    )
    module: Module
    call: ast.Call
    function: CheckpointFunction
    scope: Scope
    value: ast.expr | None  # the policy expression; None when no policy is passed
    positional_policy: bool  # passed positionally where JAX wants `policy=`
    missing_function: bool  # `@jax.checkpoint(policy=p)`: no function to wrap
    via_partial: bool

    def __init__(
        self,
        module: Module,
        call: ast.Call,
        function: CheckpointFunction,
        scope: Scope,
        value: ast.expr | None,
        positional_policy: bool,
        missing_function: bool,
        via_partial: bool,
    ) -> None:
        self._assign(module, call, function, scope, value, positional_policy, missing_function, via_partial)


def _policy_keyword(call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "policy":
            return keyword.value
    return None


FUNCTION_NAMES = CHECKPOINT_FUNCTION_NAMES | {"partial"}


def checkpoint_aliases(module: Module) -> set[str]:
    """Module-level names bound to something whose name ends like a checkpoint function."""
    names = set()
    for name, bindings in module.scope.bindings.items():
        for binding in bindings:
            target = binding.target or (
                ".".join(dotted(binding.node) or []) if binding.kind == "assign" else ""
            )
            if target.rsplit(".", 1)[-1] in FUNCTION_NAMES:
                names.add(name)
    return names


def _could_be_site(call: ast.Call, names: frozenset[str] | set[str]) -> bool:
    """Cheap syntactic filter before any name resolution: a `policy=` keyword, or a
    positional policy given to something named like a checkpoint function or its alias."""
    if any(k.arg == "policy" for k in call.keywords):
        return True
    if len(call.args) < 2:
        return False
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return last in names


def find_sites(module: Module, worth_naming: Callable[[Site], bool] | None = None) -> list[Site]:
    """The module's policy sites. A call with `policy=` whose callee the module's imports cannot
    name is asked of jedi (`Module.callee_qualname`) only where `worth_naming` (given the call as
    a `jax.checkpoint` site would be) says so."""
    sites: list[Site] = []
    names = FUNCTION_NAMES | checkpoint_aliases(module)
    for call, scope in module.calls:
        if not _could_be_site(call, names):
            continue
        site = _site(module, call, scope, worth_naming)
        if site is not None:
            sites.append(site)
    return sites


def _site(
    module: Module, call: ast.Call, scope: Scope, worth_naming: Callable[[Site], bool] | None
) -> Site | None:
    value = _policy_keyword(call)
    qualname = module.qualname(call.func, scope)
    if qualname is None and value is not None:
        has_function = bool(call.args) or any(k.arg in FUNCTION_KEYWORDS for k in call.keywords)
        maybe = Site(
            module, call, CHECKPOINT_FUNCTIONS[CHECKPOINT], scope, value, False, not has_function, False
        )
        if worth_naming is None or worth_naming(maybe):
            qualname = module.callee_qualname(call, scope)
    has_keyword = value is not None
    if qualname in PARTIAL and call.args:
        inner = module.qualname(call.args[0], scope)
        function = CHECKPOINT_FUNCTIONS.get(inner or "")
        if function is None or not has_keyword:
            return None
        return Site(module, call, function, scope, value, False, False, True)
    function = CHECKPOINT_FUNCTIONS.get(qualname or "")
    if function is None:
        return None
    positional = False
    if value is None:
        if function.policy_position is None and len(call.args) >= 2:
            value, positional = call.args[1], True
        elif function.policy_position is not None and len(call.args) > function.policy_position:
            value = call.args[function.policy_position]
        else:
            return None
    has_function = bool(call.args) or any(k.arg in FUNCTION_KEYWORDS for k in call.keywords)
    missing = function.requires_function and not has_function
    return Site(module, call, function, scope, value, positional, missing, False)

"""## What it does
Checks the memory kinds given to `Offloadable(...)` (any alias or attribute path),
`offload_dot_with_no_batch_dims(offload_src, offload_dst)` and
`save_and_offload_only_these_names(..., offload_src=, offload_dst=)`: a destination other
than `"pinned_host"`, a source other than `"device"`, the two swapped, and keywords the call
does not take.

## Why is this bad?
JAX maps only `"pinned_host"` to host memory; every other string (`"host"`, `"cpu"`,
`"unpinned_host"`, typos) silently means device memory. A destination other than
`"pinned_host"` therefore offloads nothing: the residual is copied and stays on the device,
with no error and no memory saved. JAX also asserts that the residual is where `src` says it
is produced, which is always device memory, so `src="pinned_host"` (or the pair swapped) fails
at the first `jax.grad` with a bare `AssertionError` and no message. A misspelt keyword of
`Offloadable` raises `TypeError` only when the policy first runs.

Memory kinds are read this way from jax 0.7.1 (the facts of each release); before it JAX hands
the string to XLA, and only the swapped pair is reported.

## Fix safety
Setting `src` to `"device"` is safe: JAX already reads every other source but `"pinned_host"`
as device memory, and `"pinned_host"` fails. Setting `dst` to `"pinned_host"` and swapping the
pair are unsafe: the program starts moving residuals to host memory, which changes its memory
use and speed. Renaming a keyword is unsafe too: the nearest valid name is a guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.scopes import Scope, string_constant
from jax_lsp.core.findings import Finding, Fix, Position, Span
from jax_lsp.core.jax_api import (
    OFFLOAD_DESTINATION,
    OFFLOAD_SOURCE,
    OFFLOADABLE,
    POLICY_FACTORIES,
    policy_member,
)
from jax_lsp.rules.base import Example, ModuleContext, Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _parameters(module: Module, call: ast.Call, scope: Scope) -> tuple[str, tuple[str, ...], int] | None:
    """(callee as written, parameter names, how many may be positional) of an offloading call."""
    qualname = module.qualname(call.func, scope)
    if qualname in OFFLOADABLE:
        return module.source.segment(call.func), ("src", "dst"), 2
    factory = POLICY_FACTORIES.get(policy_member(qualname) or "")
    if factory is not None and factory.offload_parameters is not None:
        return (factory.name, *factory.offload_parameters)
    return None


def _residuals_stay_on_device(namespace: dict[str, Any]) -> None:
    """The policy asks JAX to offload, yet every offloading copy targets device memory."""
    import jax
    import jax.numpy as jnp

    jaxpr = jax.make_jaxpr(jax.grad(lambda x: jnp.sum(namespace["f"](x))))(jnp.ones((4, 4)))
    spaces = [
        s for eqn in jaxpr.jaxpr.eqns if eqn.primitive.name == "device_put" for s in eqn.params["devices"]
    ]
    assert spaces, "the policy offloads nothing at all"
    assert jax.memory.Space.Host not in spaces, spaces


class OffloadMemoryKindInvalid(Rule):
    code = "JAX105"

    def check_module(self, context: ModuleContext) -> Iterator[Finding]:
        module = context.module
        # Every spelling of these callees comes from an import or assignment naming "offload".
        if "ffload" not in module.source.text:
            return
        for call, scope in module.calls:
            if not isinstance(call.func, (ast.Name, ast.Attribute)) or not module.source.could_hold_site(
                call
            ):
                continue
            found = _parameters(module, call, scope)
            if found is None:
                continue
            callee, parameters, positional = found
            yield from self._keywords(module, call, callee, parameters)
            # Releases before 0.7.1 map no memory kind themselves (XLA reads the string): only the
            # swapped pair is known to fail there.
            maps_kinds = context.project.jax().host_memory_kinds is not None
            yield from self._kinds(module, call, parameters, positional, maps_kinds)

    def _keywords(
        self, module: Module, call: ast.Call, callee: str, parameters: tuple[str, ...]
    ) -> Iterator[Finding]:
        import difflib  # here, not at the top: start-up time of `jax-lsp check`

        for keyword in call.keywords:
            if keyword.arg is None or keyword.arg in parameters:
                continue
            start = module.source.span(keyword).start
            name = Span(start, Position(start.line, start.column + len(keyword.arg)))
            takes = ", ".join(f"`{p}`" for p in parameters)
            close = difflib.get_close_matches(keyword.arg, parameters, n=1)
            if close:
                message = f"`{callee}` takes no keyword `{keyword.arg}` (it takes {takes}); did you mean `{close[0]}`?"
                fixes = [self.unsafe_fix(f"Rename to `{close[0]}`", self.replace(module, name, close[0]))]
            else:
                message = f"`{callee}` takes no keyword `{keyword.arg}`: it takes {takes}"
                fixes = []
            yield self.finding(module, keyword, message, fixes)

    def _kinds(
        self, module: Module, call: ast.Call, parameters: tuple[str, ...], positional: int, maps_kinds: bool
    ) -> Iterator[Finding]:
        src_name, dst_name = parameters[-2:]
        bound: dict[str, ast.expr] = {}
        for name, argument in zip(parameters[:positional], call.args):
            if isinstance(argument, ast.Starred):
                break
            bound[name] = argument
        bound.update((k.arg, k.value) for k in call.keywords if k.arg in parameters)
        src, dst = bound.get(src_name), bound.get(dst_name)
        src_kind, dst_kind = string_constant(src), string_constant(dst)
        if src and dst and src_kind == OFFLOAD_DESTINATION and dst_kind == OFFLOAD_SOURCE:
            yield self.finding(
                module,
                src,
                f"`{src_name}` and `{dst_name}` are swapped: residuals are produced in device memory and "
                f'offloaded to "pinned_host"; as written JAX fails with a bare `AssertionError`',
                [
                    self.unsafe_fix(
                        f"Swap `{src_name}` and `{dst_name}`",
                        self.replace(module, src, module.source.segment(dst)),
                        self.replace(module, dst, module.source.segment(src)),
                    )
                ],
            )
            return
        if not maps_kinds:
            return
        if dst and dst_kind is not None and dst_kind != OFFLOAD_DESTINATION:
            yield self.finding(
                module,
                dst,
                f'JAX reads `{dst_name}="{dst_kind}"` as device memory (only "pinned_host" is host memory): '
                'the residual silently stays on the device and nothing is offloaded; use "pinned_host"',
                [self._set_kind(module, dst, OFFLOAD_DESTINATION, safe=False)],
            )
        if src and src_kind is not None and src_kind != OFFLOAD_SOURCE:
            if src_kind == OFFLOAD_DESTINATION:
                why = "residuals are produced in device memory and JAX fails with a bare `AssertionError`"
            else:
                why = "JAX reads it as device memory, where residuals are produced"
            yield self.finding(
                module,
                src,
                f'`{src_name}="{src_kind}"`: {why}; use "device"',
                [self._set_kind(module, src, OFFLOAD_SOURCE, safe=True)],
            )

    def _set_kind(self, module: Module, expr: ast.expr, kind: str, safe: bool) -> Fix:
        quote = "'" if module.source.segment(expr).startswith("'") else '"'
        make = self.safe_fix if safe else self.unsafe_fix
        return make(f'Use "{kind}"', self.replace(module, expr, f"{quote}{kind}{quote}"))

    VALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable(src="device", dst="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax._src.interpreters import partial_eval as pe

                SOURCE, DESTINATION = "device", "pinned_host"


                def policy(prim, *avals, **params):
                    if prim.name == "cos":
                        return pe.Offloadable("device", "pinned_host")
                    return pe.Offloadable(src=SOURCE, dst=DESTINATION)


                offload_dots = jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")
                g = jax.checkpoint(lambda x: jnp.sin(jnp.cos(x)), policy=policy)
                f = jax.checkpoint(lambda x: g(jnp.sin(x @ x)), policy=offload_dots)
                """
        ),
    ]
    INVALID = [
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable(src="device", dst="host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return Offloadable(src="device", dst="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            misbehaves=_residuals_stay_on_device,
            lines=(8,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable as O


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return O(src="device", dest="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            fixed="""
                import jax
                import jax.numpy as jnp
                from jax.ad_checkpoint import Offloadable as O


                def policy(prim, *avals, **params):
                    if prim.name == "sin":
                        return O(src="device", dst="pinned_host")
                    return False


                f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
                """,
            error="unexpected keyword argument 'dest'",
            lines=(8,),
        ),
        Example(
            """
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies
                f = jax.checkpoint(lambda x: jnp.sin(x @ x), policy=cp.offload_dot_with_no_batch_dims("host", "cpu"))
                """,
            fixed="""
                import jax
                import jax.numpy as jnp

                cp = jax.checkpoint_policies
                f = jax.checkpoint(lambda x: jnp.sin(x @ x), policy=cp.offload_dot_with_no_batch_dims("device", "pinned_host"))
                """,
            misbehaves=_residuals_stay_on_device,
            lines=(5, 5),
        ),
    ]

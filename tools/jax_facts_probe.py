"""Measure, in one interpreter, what jax-lsp's rules rely on in the JAX installed there.

Run by tools/jax_facts.py in a venv per JAX release (``python jax_facts_probe.py``): standard
library and jax only. Prints one JSON object: the facts of this release. Every fact is measured
by running JAX (a policy under ``jax.grad``, the residuals JAX keeps), not read from its source,
and a fact that cannot be measured here is recorded as what happened, never guessed.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import re
import sys
import warnings

warnings.simplefilter("ignore")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

cp = jax.checkpoint_policies

# Strings a user may write as a memory kind: JAX's own and the usual mistakes.
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host", "host", "cpu", "tpu_host", "Pinned_Host", "")


def _error(exc: BaseException) -> str:
    """``Type: first line``, without object addresses (the same error reads the same in every run)."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(exc).strip())
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _saved_residuals():
    try:  # public in some releases
        from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined]
    except ImportError:
        from jax._src.ad_checkpoint import saved_residuals
    return saved_residuals


def tagged(x):
    """Two named values the backward pass needs (``a * b``), and a dot: what the name-based and
    the dot policies choose from."""
    from jax.ad_checkpoint import checkpoint_name

    a = checkpoint_name(jnp.sin(x), "a")
    b = checkpoint_name(jnp.cos(x), "b")
    return jnp.sum(jnp.tanh((a * b) @ x))


def saved(policy, fun=tagged):
    """What JAX keeps for ``fun`` under ``policy``: {'named': [...], 'outputs': [...]}."""
    found = {"named": [], "outputs": []}
    for _, description in _saved_residuals()(jax.checkpoint(fun, policy=policy), jnp.ones((4, 4))):
        if description.startswith("named '"):
            found["named"].append(description.split("'")[1])
        elif description.startswith("output of "):
            found["outputs"].append(description.split()[2])
    return {key: sorted(set(value)) for key, value in found.items()}


def grad_runs(policy, fun=tagged):
    """None when ``jax.grad`` of ``fun`` checkpointed with ``policy`` runs, else JAX's error."""
    try:
        jax.make_jaxpr(jax.grad(jax.checkpoint(fun, policy=policy)))(jnp.ones((4, 4)))
    except Exception as exc:
        return _error(exc)
    return None


def parameters(function):
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    return [
        {"name": p.name, "kind": p.kind.name.lower(), "default": p.default is not inspect.Parameter.empty}
        for p in signature.parameters.values()
    ]


def policies():
    """Each member of jax.checkpoint_policies: a ready-made policy (JAX accepts it as ``policy=``)
    or a factory (it must be called), its parameters, and the name it is an alias of."""
    members = {name: value for name, value in sorted(vars(cp).items()) if not name.startswith("_")}
    found = {}
    for name, value in members.items():
        if not callable(value):
            found[name] = {"kind": "value", "type": type(value).__name__}
            continue
        failure = grad_runs(value)
        entry = {"kind": "ready_made" if failure is None else "factory"}
        if failure is not None:
            entry["uncalled_error"] = failure
            entry["parameters"] = parameters(value)
        first = next(other for other, v in members.items() if v is value)
        if first != name:
            entry["alias_of"] = first
        found[name] = entry
    return found


def offloadable_fields():
    from jax.ad_checkpoint import Offloadable

    return list(Offloadable._fields)


def host_memory_kinds():
    """The memory-kind strings JAX maps to host memory; None where JAX maps none itself (it hands
    the string on to XLA as it is)."""
    try:
        from jax._src.core import MemorySpace, mem_kind_to_space
    except ImportError:
        return None
    return [kind for kind in MEMORY_KINDS if mem_kind_to_space(kind) == MemorySpace.Host]


def offload_under_jit_on_cpu():
    """Whether ``jax.jit(jax.grad(...))`` runs, on CPU, a policy that offloads to "pinned_host"."""
    from jax.ad_checkpoint import Offloadable

    def policy(prim, *_, **__):
        return Offloadable(src="device", dst="pinned_host") if prim is lax.dot_general_p else False

    try:
        fun = jax.jit(jax.grad(jax.checkpoint(tagged, policy=policy)))
        jax.block_until_ready(fun(jnp.ones((4, 4))))
    except Exception as exc:
        return _error(exc)
    return "runs"


def offload_under_grad():
    """Whether plain ``jax.grad`` (no jit) runs a policy that offloads to "pinned_host"."""
    from jax.ad_checkpoint import Offloadable

    def policy(prim, *_, **__):
        return Offloadable(src="device", dst="pinned_host") if prim is lax.dot_general_p else False

    try:
        jax.grad(jax.checkpoint(tagged, policy=policy))(jnp.ones((4, 4)))
    except Exception as exc:
        return _error(exc)
    return "runs"


def policy_keyword_params():
    """The keyword arguments JAX passes a policy for ``sin``: a policy without ``**params`` fails
    where there are some (e.g. ``accuracy``)."""
    seen = []

    def policy(prim, *_, **params):
        if prim is lax.sin_p:
            seen.extend(params)
        return False

    jax.make_jaxpr(jax.grad(jax.checkpoint(lambda x: jnp.sum(jnp.sin(jnp.sin(x))), policy=policy)))(
        jnp.ones((4, 4))
    )
    return sorted(set(seen))


def save_anything_except_these_names():
    """'honours_names' or 'saves_everything': what its policy answers, called as JAX calls it for
    a ``checkpoint_name`` tag, for a name it was given ('a') and one it was not ('b')."""
    try:
        from jax.ad_checkpoint import name_p  # type: ignore[attr-defined]
    except ImportError:
        from jax._src.ad_checkpoint import name_p
    policy = cp.save_anything_except_these_names("a")
    aval = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    answers = {name: policy(name_p, aval, name=name) for name in ("a", "b")}
    if answers == {"a": False, "b": True}:
        return "honours_names"
    if answers == {"a": True, "b": True}:
        return "saves_everything"
    return f"other: {answers}"


def names_given_as_one(container):
    """``save_only_these_names(container)``: 'matches_nothing', 'matches_members', or the error
    and when it is raised ('at_call' when the policy is made, 'at_grad' when JAX uses it)."""
    try:
        policy = cp.save_only_these_names(container)
    except Exception as exc:
        return {"raises": "at_call", "error": _error(exc)}
    try:
        kept = saved(policy)
    except Exception as exc:
        return {"raises": "at_grad", "error": _error(exc)}
    return {"saves": "matches_members" if {"a", "b"} <= set(kept["named"]) else "matches_nothing"}


def ad_checkpoint_exports():
    import jax.ad_checkpoint as module

    return sorted(name for name in dir(module) if not name.startswith("_"))


def checkpoint_parameters():
    return parameters(jax.checkpoint)


def save_from_both_non_bool():
    """What ``save_from_both_policies`` does with a member that returns ``Saveable``."""
    from jax.ad_checkpoint import Saveable

    return grad_runs(cp.save_from_both_policies(lambda *_, **__: Saveable, cp.dots_saveable)) or "runs"


def invalid_return_error():
    """What JAX raises at the first grad for a policy that returns ``None``."""
    return grad_runs(lambda *_, **__: None) or "runs"


def remat3():
    """Whether the `jax_remat3` flag exists and, under it, which policies still take effect."""
    try:
        default = bool(jax.config.jax_remat3)
    except AttributeError:  # no such flag in this release
        return None
    dots = lambda prim, *_, **__: prim is lax.dot_general_p  # noqa: E731
    returns_none = lambda *_, **__: None  # noqa: E731
    cases = {
        "callable": (dots, "dot_general"),
        "save_from_both_policies": (cp.save_from_both_policies(dots, cp.nothing_saveable), "dot_general"),
        "dots_saveable": (cp.dots_saveable, "dot_general"),
        "save_only_these_names": (cp.save_only_these_names("a"), "a"),
    }
    found = {"default": default}
    for flag in (False, True):
        jax.config.update("jax_remat3", flag)
        try:
            for case, (policy, expected) in cases.items():
                try:
                    kept = saved(policy)
                    result = "takes_effect" if expected in kept["named"] + kept["outputs"] else "ignored"
                except Exception as exc:
                    result = _error(exc)
                found.setdefault(case, {})["on" if flag else "off"] = result
            failure = grad_runs(returns_none)
            found.setdefault("returns_none", {})["on" if flag else "off"] = (
                "runs" if failure is None else failure
            )
        finally:
            jax.config.update("jax_remat3", default)
    return found


FACTS = {
    "policies": policies,
    "offloadable_fields": offloadable_fields,
    "host_memory_kinds": host_memory_kinds,
    "offload_under_jit_on_cpu": offload_under_jit_on_cpu,
    "offload_under_grad": offload_under_grad,
    "policy_keyword_params": policy_keyword_params,
    "save_anything_except_these_names": save_anything_except_these_names,
    "names_as_one_tuple": lambda: names_given_as_one(("a", "b")),
    "names_as_one_list": lambda: names_given_as_one(["a", "b"]),
    "ad_checkpoint_exports": ad_checkpoint_exports,
    "checkpoint_parameters": checkpoint_parameters,
    "save_from_both_non_bool": save_from_both_non_bool,
    "invalid_return_error": invalid_return_error,
    "remat3": remat3,
}


def main():
    out = sys.stdout
    facts = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for name, measure in FACTS.items():
            try:
                facts[name] = measure()
            except Exception as exc:  # recorded, so that the driver can say which fact failed where
                facts[name] = {"probe_error": _error(exc)}
    out.write(json.dumps({"jax": jax.__version__, "python": sys.version.split()[0], "facts": facts}) + "\n")


if __name__ == "__main__":
    main()

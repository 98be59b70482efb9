"""Agent side: run a loaded policy over probe functions under real JAX and record its decisions.

Runs inside the trace agent (the user's interpreter): standard library and jax only.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import core as jax_core
from jax.ad_checkpoint import Offloadable, Recompute, Saveable, checkpoint_name

# What moves between JAX releases is found by looking for it, never by version number (the
# agent runs on every release from the oldest supported one, see docs/trace.md).
try:  # public in some releases, private in others (jax 0.4.30 .. 0.12 keep it in jax._src)
    from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined, unused-ignore]
except ImportError:
    from jax._src.ad_checkpoint import saved_residuals
try:  # JAX's own check of a policy's value (jax 0.4.30 has it, but it does not raise)
    from jax._src.interpreters.partial_eval import ensure_enum
except ImportError:
    ensure_enum = None  # type: ignore[assignment]  # older JAX: the check is a bare assert
# Where JAX maps a memory kind to a memory space itself (not in jax 0.4.30: see
# `host_memory_kinds` in jax_lsp/core/jax_facts.json); else the kind goes to XLA as written
_MEM_KIND_TO_SPACE = getattr(jax_core, "mem_kind_to_space", None)
_HOST_SPACE = getattr(getattr(jax_core, "MemorySpace", None), "Host", None)

MAX_NAMES = 12
# The probe is tiny: XLA's backend optimisations would cost more than they ever save.
FAST_COMPILE = {"xla_backend_optimization_level": 0}
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")


def classify(value):
    """(decision, details) for a value returned by a policy, following JAX's own check."""
    if isinstance(value, bool):
        return ("saved" if value else "recomputed"), None
    if isinstance(value, type(Saveable)):
        return "saved", None
    if isinstance(value, type(Recompute)):
        return "recomputed", None
    if isinstance(value, Offloadable):
        return "offloaded", {"src": value.src, "dst": value.dst, "dst_space": memory_space(value.dst)}
    return "invalid", {"type": type(value).__module__ + "." + type(value).__qualname__}


def memory_space(kind):
    """ "host" or "device": where JAX puts memory kind ``kind``; None where this JAX does not map
    kinds itself (it hands the string to XLA as written)."""
    if _MEM_KIND_TO_SPACE is None:
        return None
    try:
        return _MEM_KIND_TO_SPACE(kind).name.lower()
    except Exception:  # a kind this JAX refuses outright: it is not host memory either
        return None


def rejection_of(value):
    """JAX's message for a value it refuses from a policy; None for a value it accepts."""
    if ensure_enum is not None:
        try:
            ensure_enum(value)  # JAX's own check, for JAX's own message
        except TypeError as exc:
            return str(exc)
    if classify(value)[0] != "invalid":
        return None
    # This JAX checks with a bare `assert` (no message of its own): say what it refuses.
    return (
        f"{show(value)} of type {classify(value)[1]['type']} is not a value a remat policy may return "
        f"(a bool, Saveable, Recompute or Offloadable(...)); jax {jax.__version__} rejects it with "
        "a bare AssertionError"
    )


def show(value):
    if isinstance(value, type(Saveable)):
        return "Saveable"
    if isinstance(value, type(Recompute)):
        return "Recompute"
    if isinstance(value, Offloadable):
        return f"Offloadable(src={value.src!r}, dst={value.dst!r})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Recorder:
    """Wraps a policy: records each call's primitive, value, and the user ``return`` that made it."""

    def __init__(self, policy, user_paths, survey=False):
        self.policy = policy
        self.user_paths = user_paths
        # A survey hands JAX `False` in place of an invalid value, to find every bad `return`.
        self.survey = survey
        self.calls = []  # dicts: primitive, tag, value, path, line
        self.primitives = {}  # name -> Primitive object seen
        self.failure = None  # (exception, path, line) of a policy call that raised

    def wrap(self, mode):
        def recording_policy(prim, *avals, **params):
            return self._call(mode, prim, avals, params)

        return recording_policy

    def _call(self, mode, prim, avals, params):
        returns = []

        def on_event(frame, event, arg):
            if event == "return" and frame.f_code.co_filename in self.user_paths:
                returns.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code))

        self.primitives.setdefault(prim.name, prim)
        previous = sys.getprofile()
        sys.setprofile(on_event)
        try:
            value = self.policy(prim, *avals, **params)
        except BaseException as exc:
            sys.setprofile(previous)
            where = _deepest_user_frame(exc.__traceback__, self.user_paths)
            if where is None and returns:
                where = returns[-1][:2]
            self.failure = (exc, where)
            raise
        sys.setprofile(previous)
        path, line, code = returns[-1] if returns else (None, None, None)
        rejection = rejection_of(value)
        self.calls.append(
            {
                "primitive": prim.name,
                "tag": params.get("name") if prim.name == "name" else None,
                "value": value,
                "path": path,
                "line": line,
                "code": code,
                "mode": mode,
                "rejection": rejection,
            }
        )
        return False if self.survey and rejection else value


def _deepest_user_frame(tb, user_paths):
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in user_paths:
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def mentioned_names(policy):
    """Strings the policy or its factory mention: candidate ``checkpoint_name`` tags."""
    found = []

    def add(text):
        if (
            isinstance(text, str)
            and 0 < len(text) <= 64
            and text not in found
            and text not in MEMORY_KINDS
            and not hasattr(lax, text + "_p")
        ):
            found.append(text)

    memory_args = {
        id(arg)
        for root in (policy.node, *policy.functions)
        for call in ast.walk(root)
        if isinstance(call, ast.Call) and "Offloadable" in ast.unparse(call.func)
        for arg in [*call.args, *(k.value for k in call.keywords)]
    }
    for node in [n for root in (policy.node, *policy.functions) for n in ast.walk(root)]:
        if isinstance(node, ast.Constant) and id(node) not in memory_args:
            add(node.value)

    def visit(value, depth):
        if depth > 3:
            return
        if isinstance(value, str):
            add(value)
        elif isinstance(value, (set, frozenset, tuple, list)):
            for item in sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value:
                visit(item, depth + 1)
        elif isinstance(value, functools.partial):
            visit(value.func, depth + 1)
            visit(value.args, depth + 1)
            visit(tuple(value.keywords.values()), depth + 1)
        elif callable(value):
            for cell in getattr(value, "__closure__", None) or ():
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass
            for item in getattr(value, "__dict__", {}).values():
                visit(item, depth + 1)
            visit(getattr(value, "__defaults__", None) or (), depth + 1)

    visit(policy.value, 0)
    return found[:MAX_NAMES]


def probe_function(names):
    """A function touching many primitive kinds; each name in ``names`` tags one value."""

    def probe(params, x):
        w, kernel = params
        h = x @ w  # dot_general, no batch dims
        hb = jnp.einsum("bij,bjk->bik", h.reshape(2, 2, 8), jnp.broadcast_to(w, (2, 8, 8)))
        h = hb.reshape(4, 8)  # batched dot_general, broadcast_in_dim, reshape
        c = lax.conv_general_dilated(h[None, None], kernel, (1, 1), "SAME")[0, 0]
        h = jnp.sin(h) * jnp.exp(c) + jnp.tanh(h.T).T
        h = jax.nn.sigmoid(h) * jnp.cos(h) - jnp.max(h, axis=0)
        for name in names:
            h = checkpoint_name(jnp.sin(h) * w[0], name)

        def step(carry, _):
            return jnp.sin(carry) * 0.5 + carry, None

        h, _ = lax.scan(step, h, None, length=2)
        h = lax.cond(jnp.sum(h) > 0, jnp.exp, jnp.tanh, h)
        return jnp.sum(h * h) + jnp.mean(h)

    return probe


def probe_inputs():
    # NumPy, not jax.numpy: an eager jnp op compiles a program of its own (tens of ms each).
    params = (np.full((8, 8), 0.1, np.float32), np.full((1, 1, 3, 3), 0.2, np.float32))
    x = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(4, 8)
    return params, x


def warm_up():
    """Trace the probe abstractly, before any fork: fills JAX's tracing caches, starts no backend."""
    shape = jax.ShapeDtypeStruct
    params = (shape((8, 8), jnp.float32), shape((1, 1, 3, 3), jnp.float32))
    fun = jax.checkpoint(probe_function(["warm"]), policy=jax.checkpoint_policies.nothing_saveable)
    jax.make_jaxpr(jax.grad(fun))(params, shape((4, 8), jnp.float32))


def _policy_for_jax(value):
    # `policy=None`/`policy=False` mean "save nothing" to JAX (`params['policy'] or nothing_saveable`).
    return value or jax.checkpoint_policies.nothing_saveable


def _platform_cannot_offload(mode, exc):
    """Older JAX cannot move residuals between memory kinds on some platforms (jax 0.4.30 on CPU:
    "Passing memory_kind to device_put via Shardings is not supported on platforms ('cpu',)").
    That says nothing about the policy, which offloads where the model runs."""
    return mode != "grad" and isinstance(exc, NotImplementedError) and "memory_kind" in str(exc)


def _run_modes(recorder, probe, params, x, timings, skipped_modes=None):
    """Trace under ``jax.grad`` (abstractly) and run under ``jax.jit(jax.grad)``. A mode this
    JAX cannot run on this platform is left out, with why, in ``skipped_modes``."""
    modes = {
        "grad": lambda f: jax.make_jaxpr(jax.grad(f))(params, x),
        "jit(grad)": lambda f: jax.block_until_ready(
            jax.jit(jax.grad(f)).lower(params, x).compile(FAST_COMPILE)(params, x)
        ),
    }
    done = []
    for mode, run in modes.items():
        fun = jax.checkpoint(probe, policy=recorder.wrap(mode))
        started = time.perf_counter()
        try:
            run(fun)
            timings[f"{mode}_s"] = time.perf_counter() - started
        except MemoryError:
            raise
        except Exception as exc:
            if skipped_modes is not None and _platform_cannot_offload(mode, exc):
                skipped_modes.append({"mode": mode, "reason": f"{type(exc).__name__}: {exc}"})
                continue
            return done, mode, exc
        done.append(mode)
    return done, None, None


def _survey(policy, user_paths, probe, params, x):
    """Every call of the probe, with `False` handed to JAX in place of each invalid value."""
    recorder = Recorder(_policy_for_jax(policy.value), user_paths, survey=True)
    try:
        jax.make_jaxpr(jax.grad(jax.checkpoint(probe, policy=recorder.wrap("grad"))))(params, x)
    except Exception:  # another failure past the invalid values: what was seen still counts
        pass
    _fix_fall_through(recorder.calls, policy)
    return recorder.calls


def _rejected(calls):
    """One entry per `return` whose value JAX rejects, with JAX's message for it."""
    found = {}
    for call in calls:
        if call["rejection"] and call["line"]:
            found.setdefault(
                (call["path"], call["line"]),
                {
                    "path": call["path"],
                    "line": call["line"],
                    "value": show(call["value"]),
                    "text": call["rejection"],
                },
            )
    return list(found.values())


def _aggregate(calls):
    rows = {}
    for call in calls:
        decision, details = classify(call["value"])
        key = (call["primitive"], call["tag"], show(call["value"]), call["path"], call["line"])
        row = rows.get(key)
        if row is None:
            row = rows[key] = {
                "primitive": call["primitive"],
                "tag": call["tag"],
                "decision": decision,
                "value": show(call["value"]),
                "details": details,
                "path": call["path"],
                "line": call["line"],
                "count": 0,
                "modes": [],
            }
        row["count"] += 1
        if call["mode"] not in row["modes"]:
            row["modes"].append(call["mode"])
    return list(rows.values())


def _returns_in(node):
    return {n.lineno for n in ast.walk(node) if isinstance(n, ast.Return)}


def _fix_fall_through(calls, policy):
    """A ``None`` from a line without ``return`` fell off the end: anchor it on the ``def``."""
    for node in policy.functions:
        if isinstance(node, ast.Lambda):
            continue
        returns = _returns_in(node)
        for call in calls:
            if (
                call["value"] is None
                and call["path"] == policy.path
                and call["line"] not in returns
                and node.lineno <= (call["line"] or 0) <= node.end_lineno
            ):
                call["line"] = node.lineno
    # A policy defined in another of the user's files (imported where the site is).
    foreign = {}
    for call in calls:
        code = call.get("code")
        if call["value"] is not None or not call["path"] or call["path"] == policy.path or code is None:
            continue
        node = _function_of(code, foreign)
        if node is not None and call["line"] not in _returns_in(node):
            call["line"] = node.lineno


def _function_of(code, trees):
    """The ``def`` whose body ``code`` runs, parsed from its file (None if it cannot be read)."""
    path = code.co_filename
    if path not in trees:
        try:
            with open(path, encoding="utf-8") as handle:
                trees[path] = ast.parse(handle.read(), path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            trees[path] = None
    tree = trees[path]
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == code.co_name
            # A code object starts at its first decorator.
            and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == code.co_firstlineno
        ):
            return node
    return None


def _string_comparisons(policy, primitives):
    """``prim == "sin"``-style comparisons, evaluated against every primitive the probe produced."""
    found = []
    for function in policy.functions:
        found += _string_comparisons_in(function, policy, primitives)
    return found


def _string_comparisons_in(function, policy, primitives):
    # functools.partial(policy, a, b) binds the leading parameters: the primitive comes next.
    bound = len(policy.value.args) if isinstance(policy.value, functools.partial) else 0
    positional = function.args.posonlyargs + function.args.args
    if len(positional) <= bound:
        return []
    param = positional[bound].arg
    text_lines = policy.source_lines()
    found = []
    for cmp in ast.walk(function):
        if not (
            isinstance(cmp, ast.Compare)
            and len(cmp.ops) == 1
            and isinstance(cmp.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
        ):
            continue
        sides = [cmp.left, cmp.comparators[0]]
        if not any(isinstance(s, ast.Name) and s.id == param for s in sides):
            continue
        other = sides[1] if isinstance(sides[0], ast.Name) and sides[0].id == param else sides[0]
        strings = _string_operand(other, policy.namespace)
        if not strings:
            continue
        code = compile(ast.Expression(cmp), policy.path, "eval")
        outcomes = {bool(eval(code, policy.namespace, {param: prim})) for prim in primitives.values()}
        positive = isinstance(cmp.ops[0], (ast.Eq, ast.In))
        named = sorted(s for s in strings if s in primitives)
        if outcomes != {not positive}:
            continue
        line_text = text_lines[cmp.lineno - 1] if cmp.lineno <= len(text_lines) else ""
        end_text = text_lines[cmp.end_lineno - 1] if cmp.end_lineno <= len(text_lines) else ""
        seen = (
            f"although the probe produced {', '.join(f'`{n}`' for n in named)}"
            if named
            else ("and no primitive of the probe has that name either")
        )
        found.append(
            {
                "kind": "string_compare",
                "message": (
                    f"`{ast.unparse(cmp)}` was {not positive} for all {len(primitives)} primitives "
                    f"of the probe, {seen}: a Primitive never equals a string; compare `{param}.name`"
                ),
                "path": policy.path,
                "line": cmp.lineno,
                "column": len(line_text.encode("utf-8")[: cmp.col_offset].decode("utf-8", "replace")),
                "end_line": cmp.end_lineno,
                "end_column": len(end_text.encode("utf-8")[: cmp.end_col_offset].decode("utf-8", "replace")),
            }
        )
    return found


def _string_operand(node, namespace):
    """The strings a comparison operand stands for (a literal, or a constant name), else []."""
    if any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(node)):
        return []
    try:
        value = eval(compile(ast.Expression(node), "<operand>", "eval"), namespace)
    except Exception:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, list, set, frozenset)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return []


def _device_offloads(rows, policy):
    found = []
    for row in rows:
        details = row["details"] or {}
        if row["decision"] == "offloaded" and details.get("dst_space") == "device":
            found.append(
                {
                    "kind": "device_offload",
                    "message": (
                        f"{row['value']} for `{row['primitive']}`: JAX maps memory kind "
                        f"{details['dst']!r} to device memory, so nothing leaves the device "
                        "(only 'pinned_host' is host memory)"
                    ),
                    "path": row["path"] or policy.path,
                    "line": row["line"] or policy.line,
                }
            )
    return found


def _residuals(policy_value, probe, params, x):
    fun = jax.checkpoint(probe, policy=_policy_for_jax(policy_value))
    items = saved_residuals(fun, params, x)
    total = host = 0
    listed = []
    for aval, source in items:
        size = int(aval.size) * aval.dtype.itemsize
        total += size
        if _HOST_SPACE is not None and getattr(aval, "memory_space", None) == _HOST_SPACE:
            host += size
        listed.append([aval.str_short(short_dtypes=True), source])
    # Residuals carry their memory space only where JAX maps kinds to spaces: else unknown.
    host = host if _HOST_SPACE is not None else None
    return {"count": len(items), "bytes": total, "host_bytes": host, "items": listed}


def _error_anchor(recorder, exc, policy):
    """Where the bad value came from: an invalid return, the raising line, the policy's own
    ``def`` (a call JAX could not even make), or the assignment that made a non-callable."""
    for call in recorder.calls:
        if classify(call["value"])[0] == "invalid":
            return call["path"], call["line"]
    if recorder.failure is not None and recorder.failure[0] is exc:
        if recorder.failure[1]:
            return recorder.failure[1]
        code = next(iter(_user_code(policy.value, recorder.user_paths)), None)
        if code is not None:
            return code.co_filename, code.co_firstlineno
        if not callable(policy.value) and policy.origin_line:
            return policy.path, policy.origin_line
    elif recorder.calls and recorder.calls[-1]["line"]:
        return recorder.calls[-1]["path"], recorder.calls[-1]["line"]
    return policy.path, policy.line


def _user_code(value, user_paths):
    code = getattr(value, "__code__", None)
    if code is None and isinstance(value, functools.partial):
        code = getattr(value.func, "__code__", None)
    return [code] if code is not None and code.co_filename in user_paths else []


def use_compilation_cache(folder):
    """Share XLA compilations of the probe between traces (a repeated trace skips the compile)."""
    if folder:
        jax.config.update("jax_compilation_cache_dir", folder)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)


def trace(policy, user_paths):
    """The agent's result for ``policy`` (an ``load.Policy``)."""
    timings = {}
    started = time.perf_counter()
    device = jax.devices()[0]
    timings["backend_s"] = time.perf_counter() - started
    names = mentioned_names(policy)
    probe = probe_function(names)
    params, x = probe_inputs()
    recorder = Recorder(_policy_for_jax(policy.value), user_paths)

    started = time.perf_counter()
    skipped_modes = []
    done, failed_mode, exc = _run_modes(recorder, probe, params, x, timings, skipped_modes)
    timings["probe_s"] = time.perf_counter() - started
    _fix_fall_through(recorder.calls, policy)
    rows = _aggregate(recorder.calls)
    result = {
        "platform": device.platform,
        "device": getattr(device, "device_kind", str(device)),
        "names": names,
        "modes": done,
        "decisions": rows,
        "silent": _string_comparisons(policy, recorder.primitives) + _device_offloads(rows, policy),
        "error": None,
        "residuals": None,
        "timings": timings,
        "skipped_modes": skipped_modes,
    }
    if policy.value is None or policy.value is False:
        result["silent"].append(
            {
                "kind": "falsy_policy",
                "message": f"The policy is {policy.value!r}: JAX reads it as `nothing_saveable`",
                "path": policy.path,
                "line": policy.line,
            }
        )
    if exc is not None:
        path, line = _error_anchor(recorder, exc, policy)
        result["error"] = {
            "type": type(exc).__name__,
            "text": str(exc) or _unexplained(recorder, exc),
            "mode": failed_mode,
            "path": path,
            "line": line,
        }
        if any(call["rejection"] for call in recorder.calls):
            survey = _survey(policy, user_paths, probe, params, x)
            result["decisions"] = _aggregate(survey)
            result["rejected"] = _rejected(survey)
        result["status"] = "jax_error"
        result["message"] = (
            f"The policy failed under {failed_mode}: {type(exc).__name__}: {result['error']['text']}"
        )
        return result
    started = time.perf_counter()
    result["residuals"] = _residuals(policy.value, probe, params, x)
    timings["residuals_s"] = time.perf_counter() - started
    result["status"] = "ok"
    result["message"] = (
        f"Traced under {' and '.join(done)}: {sum(r['count'] for r in rows)} policy calls, "
        f"{result['residuals']['count']} residuals kept ({result['residuals']['bytes']} bytes)"
    )
    for skipped in skipped_modes:
        result["message"] += (
            f"; not run under {skipped['mode']}: jax {jax.__version__} on {device.platform} "
            f"cannot offload ({skipped['reason']})"
        )
    return result


def _unexplained(recorder, exc):
    """A message for an exception JAX raised without one (a bare ``assert`` in older JAX)."""
    for call in recorder.calls:
        if call["rejection"] and classify(call["value"])[0] == "invalid":
            return f"(JAX gave no message) {call['rejection']}"
    return f"(JAX gave no message: a bare {type(exc).__name__} in jax {jax.__version__})"


# Never the user's, even under the project's root (a checkout of jax-lsp or of JAX itself): a
# frame in them is the agent calling the policy, or JAX inside it.
NOT_USER = tuple(
    os.path.dirname(os.path.realpath(filename)) + os.sep
    for filename in (__file__, getattr(jax, "__file__", None))
    if filename
)


def user_paths_for(policy, root):
    """File names (as code objects carry them) whose ``return`` lines belong to the user."""
    paths = {policy.path}
    if root:
        root = os.path.realpath(root)
        for module in list(sys.modules.values()):
            filename = getattr(module, "__file__", None) or ""
            real = os.path.realpath(filename) if filename else ""
            if (
                filename.startswith(root + os.sep)
                and "site-packages" not in filename
                and not real.startswith(NOT_USER)
            ):
                paths.add(filename)
                paths.add(real)
    return paths

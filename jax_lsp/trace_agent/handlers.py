"""What the agent does for each request method, in the child forked for the request."""

from __future__ import annotations

import gc
import os
import sys
import time

import jax

from . import load, preload, probe
from .advisor import driver
from .advisor.placement import see_chips
from .errors import AgentError


def _fresh(handle):
    """``handle``, answering ``restart`` where the child met a module whose code the agent
    already ran (`preload.Rerun`): its import-time code must run once in a process."""

    def answer(params):
        try:
            result = handle(params)
        except preload.Rerun:
            result = None
        return preload.restart_answer() or result

    answer.__doc__ = handle.__doc__
    return answer


@_fresh
def trace(params):
    """Load the policy at ``params``' path and line, and trace it under JAX."""
    preload.enter_child(params.get("path"))
    root = params.get("root")
    if root and os.path.isdir(root):
        os.chdir(root)  # relative paths in the user's code mean what they mean in the project
    started = time.perf_counter()
    try:
        import_root = params.get("import_root") or root
        policy = load.load_policy(
            params["path"], int(params["line"]), params.get("column"), import_root, params.get("source"), root
        )
    except AgentError as exc:
        return exc.result()
    loaded = time.perf_counter()
    probe.use_compilation_cache(params.get("cache_dir"))
    result = probe.trace(policy, probe.user_paths_for(policy, root))
    result["timings"]["load_s"] = loaded - started
    result["timings"]["child_s"] = time.perf_counter() - started
    result["policy"] = {
        "path": policy.path,
        "line": policy.line,
        "end_line": policy.node.end_lineno,
        "kind": policy.kind,
        "text": policy.describe(),
    }
    result["skipped"] = policy.skipped
    return result


def info(params):
    """The platform and device JAX uses, and the memory kinds the device has."""
    device = jax.devices()[0]
    return {
        "status": "ok",
        "platform": device.platform,
        "device": getattr(device, "device_kind", str(device)),
        "memories": [m.kind for m in device.addressable_memories()],
    }


@_fresh
def advise(params):
    """The advisor's answer, with the project's preloaded modules where a cold import would load
    the same ones; it names the project's modules it imported, for the agent to preload. The
    example sees as many CPU devices as the target has chips (its mesh: `placement.py`).
    The cyclic GC is off: the child (and the worker it forks) exits once it answered, and the
    tracing leaves little cyclic garbage (0.3 MB at the 70B-shaped block) while each pass costs
    (about 40 ms of CPU there)."""
    gc.disable()
    given = params.get("overlay") or {}  # files whose text the request gives: never preloaded
    preload.enter_child(params.get("path"), given)
    see_chips((params.get("target") or {}).get("chips") or params.get("chips"))
    before = set(sys.modules)
    result = driver.handle(params)
    folders = [params.get("root"), params.get("import_root")]
    loaded = [params.get("path"), (result.get("example") or {}).get("path"), *given]
    result["preload_project"] = preload.project_imports(before, folders, loaded)
    return result


BY_METHOD = {"trace": trace, "info": info, "advise": advise}
RESTART = preload.RESTART  # a child's answer: run the request again, in a fresh agent


def warm_up():
    """In the agent, before any fork: run the tracing code once, so that every child starts warm."""
    probe.warm_up()
    driver.warm_up()


def after_result(result):
    """In the agent, after a child's answer is sent."""
    preload.preload_from(result)


def stale(params):
    """In the agent, before a fork: why it must restart first (a preloaded file changed, or a
    preload ran what a child must run itself), or None. The request's own file does not count as
    changed: its child loads that file afresh, and every module that imports it."""
    return preload.stale(params.get("path"))

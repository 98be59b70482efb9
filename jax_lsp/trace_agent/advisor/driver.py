"""An ``advise`` request from start to answer, and the agent's warm-up for it."""

from __future__ import annotations

import copy
import os
import sys
import time

import jax
import jax.numpy as jnp

from ..errors import AgentError
from ..import_path import add_import_folders, module_name
from ..preload import installed_imports
from . import kept
from .candidates import Candidate, build_candidates, ready_made
from .example import error_site, run_example, short_error, user_frame_of
from .forward import trace_forward
from .jaxpr import (
    linear_jaxpr,
    markers_in,
    open_jaxpr,
    recompute_flops,
    substitute,
    tagged_names,
    with_outvars,
)
from .no_effect import ignored_by_new_remat, no_effect
from .on_device import run_each
from .overlay import install_overlay
from .peak import (
    NO_PEAK,
    backward_jaxpr,
    compiled_memory,
    differentiated,
    jaxpr_step_peak,
    local_backend_is_cpu,
    peak_entry,
    run_backward,
    step_function,
    step_peak,
)
from .read_files import read_files
from .reasons import Chosen, Why, backward_inputs
from .residuals import Frames, residuals_of
from .selector import find_selector
from .site import (
    Marker,
    example_function,
    example_path,
    import_file,
    install_site,
    namesakes,
    parse_site,
)
from .target import keep_off_devices, libtpu_missing, opened_platforms, placement_notes
from .user_call import user_call_of, watch_library_site
from .worker import Worker, can_fork

LITERALS_MISSING = (
    "this JAX release lacks the tracing hooks the advisor needs to see the scalar constants the "
    "example's code makes through the trace (the 0.5 of x * 0.5): the residuals JAX lists "
    '"from a literal" (a few bytes each) are missing from every policy here'
)


def _flat_call(fn, treedef):
    def flat(*leaves):
        args, kwargs = jax.tree_util.tree_unflatten(treedef, leaves)
        return fn(*args, **kwargs)

    return flat


def _arg_names(fn, args, kwargs, count):
    try:  # private, as saved_residuals names arguments; feature-detected
        from jax._src import api_util

        info = api_util.debug_info("saved_residuals", fn, args, kwargs)
        names = tuple(info.arg_names or ())
    except Exception:
        names = ()
    return names if len(names) == count else ("",) * count


def _trace_error(exc, site, example_file, root, what):
    """JAX's error, anchored on the innermost line of the user's code it went through (else the
    site), naming the library's line where it raised there."""
    anchor, raised = error_site(exc, {site.path, example_file}, root)
    at = f" (raised at {raised[0]}:{raised[1]})" if raised else ""
    return AgentError(
        "trace_error",
        f"JAX could not trace {what}: {short_error(exc)}{at}",
        *(anchor or (site.path, site.line)),
        error_type=type(exc).__name__,
    )


def candidate_jaxpr(candidate, forward, chosen=None):
    """The forward jaxpr with ``candidate`` as the policy of the site's checkpoints; given a dict
    ``chosen``, each checkpoint gets a recording `Chosen` of it, kept there by its marker's id."""

    def choose(marker):
        value = marker.value if candidate.value is None and candidate.current else candidate.value
        return value if chosen is None else chosen.setdefault(id(marker), Chosen(value))

    return substitute(forward.jaxpr, choose, {})


def advise_one(
    candidate, forward, leaves, arg_names, frames, positional=None, on_cpu=local_backend_is_cpu, chosen=None
):
    """What ``candidate`` saves and recomputes in the `Forward` ``forward``, as one answer entry.
    Given ``positional`` (the step's, `step_function`), where the step differentiates every
    floating-point leaf the same trace goes on into the step's backward pass, and the entry gets its ``peak_bytes``
    (None where the backward pass cannot be traced; ``on_cpu`` as `jaxpr_peak` takes it; with its ``peak_fusible_bytes``).
    ``chosen``, a dict given: filled with the `Chosen` recorders the checkpoints were given."""
    chosen = {} if chosen is None else chosen
    new_jaxpr = candidate_jaxpr(candidate, forward, chosen)
    # the step's gradients are this trace's where it differentiates every floating-point leaf (an
    # integer leaf, token ids, has a float0 cotangent: no backward work)
    floating = [i for i, leaf in enumerate(leaves) if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    whole = positional is not None and differentiated(leaves, positional) == floating
    box, pulled, backward_failed = [], [], []

    def run(*xs):
        out, vjp_fn = jax.vjp(forward.replay(new_jaxpr), *xs)
        box.append(vjp_fn)
        for recorder in chosen.values():
            recorder.recording = False  # what the backward pass asks is not the forward's answer
        grads = None
        try:
            pulled.append(backward_jaxpr(vjp_fn, out))
            grads = run_backward(pulled[0], out) if whole else None
        except MemoryError:
            raise
        except Exception:
            backward_failed.append(True)
        return out, vjp_fn, grads

    traced, (out_shape, vjp_shape, _) = jax.make_jaxpr(run, return_shape=True)(*leaves)
    jaxpr = open_jaxpr(traced)
    num_out = jax.tree_util.tree_structure(out_shape).num_leaves
    num_res = jax.tree_util.tree_structure(vjp_shape).num_leaves
    outvars = jaxpr.outvars[num_out : num_out + num_res]
    linear = linear_jaxpr(box[0]) if box else None
    inputs = backward_inputs(box[0], linear) if linear is not None else None
    why = Why(forward.marked, jaxpr, list(chosen.values()), linear, inputs, frames)
    residuals = residuals_of(jaxpr, outvars, arg_names, frames, why)
    flops = recompute_flops(open_jaxpr(pulled[0])) if pulled else None
    entry = {
        "policy": candidate.text,
        "current": candidate.current,
        "device_bytes": sum(r["bytes"] for r in residuals if r["memory"] == "device"),
        "host_bytes": sum(r["bytes"] for r in residuals if r["memory"] == "host"),
        "recompute_flops": flops,
        "residuals": residuals,
    }
    if whole:  # the step: the gradients of the floating-point leaves its only outputs
        grads = jaxpr.outvars[num_out + num_res :]
        step = with_outvars(jaxpr, [grads[i] for i in floating])
        entry.update(peak_entry(jaxpr_step_peak, step, on_cpu) if not backward_failed else NO_PEAK)
    return entry


class Work:
    """The candidates of one advise and what tracing each needs. The advise child and its worker
    each make one, alike: ``platform`` is `_platform`'s answer, the child's for its worker (None:
    ask it here, which starts the process's backend)."""

    def __init__(self, params, site, forward, leaves, call, example_file, root, platform=None):
        fn, args, kwargs = call
        self.names = tagged_names(forward.jaxpr)
        self.platform, self.device, self.memories = platform or _platform()
        self.selector = find_selector(site)
        requested = params.get("policies") or []
        self.candidates, self.errors = build_candidates(
            site, requested, self.names, self.memories, self.selector
        )
        self.site, self.forward, self.leaves = site, forward, leaves
        self.example_file, self.root = example_file, root
        self.compile = bool(params.get("compile"))
        self.target = params.get("target") if self.compile else None
        # Where the compiles keep their executables, and the run on the device loads them (`kept`).
        self.executables = params.get("executables")
        self.arg_names = _arg_names(fn, args, kwargs, len(leaves))
        if site.user_call is not None or site.installed:  # name residuals after the user's lines
            user_files = site.chain.user_files if site.chain is not None else []
            self.frames = Frames(root, [example_file, *user_files], library=site.library)
        else:
            self.frames = Frames(root, [site.path, example_file])
        self.positional = len(jax.tree_util.tree_leaves(args))
        self.traced = []  # (the recorders of a ready-made candidate's trace, its entry)
        self.traced_count = 0  # the candidates traced, not copied

    def entries(self, odd=None, skip=()):
        """``{index: (entry, seconds)}`` of the candidates at odd or even indices (all for None),
        but those in ``skip``."""
        return {
            index: self.entry(candidate)
            for index, candidate in enumerate(self.candidates)
            if index not in skip and (odd is None or index % 2 == int(odd))
        }

    def entry(self, candidate):
        """The answer entry of ``candidate`` and the seconds it took."""
        begun = time.perf_counter()
        try:
            entry = self._traced(candidate)
            if "peak_bytes" not in entry or self.compile:
                jaxpr = candidate_jaxpr(candidate, self.forward)
                step = step_function(self.forward, jaxpr, self.leaves, self.positional)
                if "peak_bytes" not in entry:  # the step differentiates only some leaves
                    entry.update(peak_entry(step_peak, step, self.leaves))
                if self.compile:
                    keep = kept.path_for(self.executables, candidate.text) if self.executables else None
                    entry.update(compiled_memory(step, self.leaves, entry["peak_bytes"], self.target, keep))
        except MemoryError:
            raise
        except Exception as exc:
            files = {self.site.path, self.example_file}
            where = user_frame_of(exc.__traceback__, files, self.root)
            entry = rejected(candidate, short_error(exc), *(where or (self.site.path, self.site.line)))
        selector = self.selector
        entry["select"] = selector.select(candidate.select) if selector is not None else None
        return entry, time.perf_counter() - begun

    def _traced(self, candidate):
        """`advise_one`'s entry; for a ready-made policy that answers every question JAX asked in
        an earlier ready-made candidate's trace alike, that trace's entry (the same trace)."""
        alike = ready_made(candidate.value)
        for recorders, entry in self.traced if alike else ():
            if all(recorder.answered_alike(candidate.value) for recorder in recorders):
                return {**copy.deepcopy(entry), "policy": candidate.text, "current": candidate.current}
        chosen = {}
        self.traced_count += 1
        entry = advise_one(
            candidate, self.forward, self.leaves, self.arg_names, self.frames, self.positional, chosen=chosen
        )
        if alike:
            self.traced.append((list(chosen.values()), copy.deepcopy(entry)))
        return entry


def _add_no_effect(site, candidates, entries, forward, frames, leaves, arg_names):
    """``no_effect`` on the current candidate's entry: the names its policy lists that change
    nothing (`no_effect.py`); ``[]`` when none, or where tracing the policy without them fails."""
    by_candidate = dict(zip(candidates, entries))
    for candidate, entry in by_candidate.items():
        if not candidate.current:
            continue
        try:
            found = no_effect(
                site,
                candidate,
                by_candidate,
                forward,
                frames,
                lambda other: advise_one(other, forward, leaves, arg_names, frames),
            )
        except MemoryError:
            raise
        except Exception:
            found = []
        entry["no_effect"] = found


def rejected(candidate, message, path, line):
    """The entry of a candidate JAX rejects: no numbers (``None``, never 0), JAX's error and the
    line it is anchored on."""
    return {
        "policy": candidate.text,
        "current": candidate.current,
        "device_bytes": None,
        "host_bytes": None,
        "recompute_flops": None,
        **NO_PEAK,
        "residuals": [],
        "error": {"message": message, "path": path, "line": line},
    }


def _remat3_on():
    try:
        from jax._src import config

        flag = getattr(config, "remat3", None)
        return bool(flag.value) if flag is not None else False
    except Exception:
        return False


def _under_new_remat(site, forward, leaves, path):
    """The answer under ``jax_remat3``: ``unsupported`` (no candidate is traced), with the current
    policy's names that the new remat ignores, as its ``no_effect``."""
    message = (
        "jax_remat3 is on: the advisor compares policies under the classic remat only; advise "
        "with jax_remat3 off"
    )
    result = AgentError("unsupported", message, path, site.line).result()
    try:
        found = ignored_by_new_remat(site, forward, leaves)
    except MemoryError:
        raise
    except Exception:
        found = []
    result["target"] = {"path": path, "line": site.line}
    current = rejected(Candidate(site.expression(), None, True), message, path, site.line)
    result["policies"] = [{**current, "no_effect": found}]
    return result


def _max_rss_mb():
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except (ImportError, OSError):
        return None
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def _platform():
    device = jax.devices()[0]
    try:
        memories = [m.kind for m in device.addressable_memories()]
    except Exception:
        memories = []
    return device.platform, getattr(device, "device_kind", str(device)), memories


def advise(params, fork=False):
    """The answer to an ``advise`` request; raises ``AgentError`` where the site cannot be advised.
    ``fork``: trace half of the candidates in a forked `Worker` where that is safe."""
    started = time.perf_counter()
    root, cwd = params.get("root"), params.get("cwd")  # cwd: the CLI's folder, None from the editor
    _enter_user_folder(cwd, root)
    path = os.path.realpath(params["path"])
    spec = _example_spec(params, path)
    params, notes = _with_target_checked(params)
    site, example_file, function = _load(params, path, spec)
    timings = {"load_s": time.perf_counter() - started}
    fn, args, kwargs, form = run_example(function, spec, example_file, site, root)
    timings["example_s"] = time.perf_counter() - started - timings["load_s"]
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    forward = _forward(fn, treedef, leaves, site, example_file, root, spec)
    timings["forward_s"] = time.perf_counter() - started - timings["load_s"] - timings["example_s"]
    site.user_call = user_call_of(site, example_file, function)
    if _remat3_on():  # set in the environment, or by the user's modules as they loaded
        return _under_new_remat(site, forward, leaves, path)
    notes = ([] if forward.lifted else [LITERALS_MISSING]) + notes

    def prepare(platform=None):
        return Work(params, site, forward, leaves, (fn, args, kwargs), example_file, root, platform)

    only = params.get("only")  # a candidate's index or text: its entry alone (its compile's own request)
    if only is not None:
        work = prepare()
        index = _index_of(work, only) if isinstance(only, str) else int(only)
        return _one_entry(work, index, path, site, notes)
    if params.get("run"):  # advise --run, in the agent with the user's environment
        work = prepare()
        return run_each(work, lambda candidate: candidate_jaxpr(candidate, work.forward))
    work, done, shared = _entries(prepare, forward, leaves, fork)
    entries = [done[index][0] for index in range(len(work.candidates))]
    timings["advise_s"] = time.perf_counter() - started - sum(timings.values())
    timings["traced"] = work.traced_count + (shared["value"]["traced"] if shared is not None else 0)
    if shared is not None:
        timings["worker_cpu_s"] = shared["cpu_s"]
    begun = time.perf_counter()
    _add_no_effect(site, work.candidates, entries, forward, work.frames, leaves, work.arg_names)
    timings["no_effect_s"] = time.perf_counter() - begun
    timings["per_policy_s"] = [done[index][1] for index in range(len(work.candidates))]
    timings["max_rss_mb"] = _max_rss_mb()
    return {
        "status": "ok",
        "message": "",
        "target": {"path": path, "line": site.line},
        "example": {"spec": spec, "path": example_file, "form": form},
        "platform": work.platform,
        "device": work.device,
        "memories": work.memories,
        "names": work.names,
        "markers": len(site.markers),
        "selector": work.selector.to_json() if work.selector is not None else None,
        "user_call": site.user_call,
        "library": site.library,  # a library site's folder, whose files are not the user's
        "policies": entries,
        "policy_errors": work.errors,
        "notes": notes + placement_notes(entries),
        "opened_platforms": opened_platforms(),
        "timings": timings,
    }


def _enter_user_folder(cwd, root):
    """Run where the user runs (the CLI's folder), else in the project root: relative paths in
    the user's code mean what they mean there."""
    for folder in (cwd, root):
        if folder and os.path.isdir(folder):
            os.chdir(folder)
            break


def _example_spec(params, path):
    """The request's example, or the error that says how to give one."""
    spec = params.get("example")
    if not spec:
        raise AgentError(
            "no_example",
            f"No example for the checkpoint at {os.path.basename(path)}:{params['line']}: give one with "
            "--example MODULE:FUNCTION, a `# jax-lsp: example=...` comment on the site's line, or "
            "[tool.jax-lsp.examples] in pyproject.toml",
            path,
            params["line"],
        )
    return spec


def _with_target_checked(params):
    """``params`` and the notes of compiling for its target: without libtpu, nothing is
    compiled for a TPU and a note says why; else the devices are kept closed."""
    if params.get("compile") and params.get("target"):
        missing = libtpu_missing(params["target"])
        if missing is not None:
            return {**params, "compile": False}, [missing]
        keep_off_devices()  # before the user's code runs (it may make arrays) and before the worker forks
    return params, []


def _load(params, path, spec):
    """The site (installed as a `Marker`), the example's file and its function, the user's
    modules imported as Python would."""
    root, cwd = params.get("root"), params.get("cwd")
    import_root = params.get("import_root") or root
    overlay = install_overlay(params.get("overlay"))  # the files as a written policy's edit leaves them
    source = overlay.pop(path, None) or params.get("source")
    site = parse_site(path, int(params["line"]), params.get("column"), source)
    example_file, function_name, example_name = example_path(spec, [cwd, root, os.path.dirname(path)])
    install_site(site)
    add_import_folders(cwd, root, import_root, path, example_file)
    files = {path, example_file}
    watch_library_site(site, example_file, root)
    name = example_name or module_name(example_file, cwd, root, import_root)
    module = import_file(example_file, name, site, files, root)
    if site.module is None:  # an example that does not import the site's module
        import_file(path, module_name(path, cwd, root, import_root), site, files, root)
    return site, example_file, example_function(module, function_name, example_file)


def _forward(fn, treedef, leaves, site, example_file, root, spec):
    """The example's forward trace, which must reach the site's checkpoint."""
    try:
        forward = trace_forward(_flat_call(fn, treedef), leaves)
    except MemoryError:
        raise
    except Exception as exc:
        raise _trace_error(exc, site, example_file, root, f"the example {spec}") from None
    if not markers_in(forward.jaxpr):
        copies = namesakes(site)
        hint = (
            f"it imported {copies[0][0]} from {copies[0][1]}, not from the site's file"
            if copies
            else "the example must call the function it checkpoints"
        )
        raise AgentError(
            "not_reached",
            f"Tracing the example {spec} never reached the checkpoint at "
            f"{os.path.basename(site.path)}:{site.line}: {hint}",
            site.path,
            site.line,
        )
    return forward


def _entries(prepare, forward, leaves, fork):
    """Every candidate's entry, half of them traced in a forked `Worker` where ``fork``: the
    `Work`, its entries by index, and the worker's answer (None where it gave none)."""

    def odd_share(platform):
        share = prepare(platform)
        texts = [c.text for c in share.candidates]
        return {"candidates": texts, "entries": share.entries(odd=True), "traced": share.traced_count}

    if fork and can_fork():
        try:
            forward.warm_jvp(leaves)
        except MemoryError:
            raise
        except Exception:  # the candidates' traces then fill JAX's caches, each process its own
            pass
    worker = Worker.start(odd_share) if fork else None
    try:
        work = prepare()
        if worker is not None:
            worker.give([work.platform, work.device, work.memories])
        done = work.entries(odd=False if worker is not None else None)
        answer = worker.result() if worker is not None else None
        if answer is not None and answer["value"]["candidates"] != [c.text for c in work.candidates]:
            answer = None  # it found other candidates: its entries are not these
    finally:
        if worker is not None:
            worker.close()
    if answer is not None:
        done.update({int(index): pair for index, pair in answer["value"]["entries"].items()})
    done.update(work.entries(skip=done))  # a worker that failed: its share here
    return work, done, answer


def _index_of(work, text):
    """The index of the candidate written ``text`` (-1 where there is none)."""
    texts = [c.text for c in work.candidates]
    return texts.index(text) if text in texts else -1


def _one_entry(work, index, path, site, notes):
    """The answer that holds only the entry of ``work``'s candidate at ``index``, with the
    request's ``notes``."""
    if not 0 <= index < len(work.candidates):
        raise AgentError(
            "error", f"No candidate {index}: the site has {len(work.candidates)}", path, site.line
        )
    entry, seconds = work.entry(work.candidates[index])
    return {
        "status": "ok",
        "message": "",
        "platform": work.platform,
        "device": work.device,
        "policies": [entry],
        "notes": notes + placement_notes([entry]),
        "opened_platforms": opened_platforms(),
        "timings": {"per_policy_s": [seconds]},
    }


def handle(params):
    """The agent's answer to an ``advise`` request: ``advise``'s, or the error's."""
    before = set(sys.modules)
    cpu = time.process_time()
    try:
        result = advise(params, fork=True)
    except AgentError as exc:
        result = exc.result()
    else:
        result["read_files"] = read_files(params["path"], (result.get("example") or {}).get("path"))
    result["preload"] = installed_imports(before, params.get("root"))
    timings = result.setdefault("timings", {})
    timings["cpu_s"] = (
        time.process_time() - cpu + timings.get("worker_cpu_s", 0.0)
    )  # the child's and its worker's
    return result


def warm_up():
    """In the agent, before any fork: run the advisor's own tracing once on a small built-in
    function (shapes only: no backend starts), so that every child starts with JAX's code paths
    for ``vjp``, remat and scans warm. Never raises."""
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    try:
        policy = jax.checkpoint_policies

        def layer(h, w):
            h = checkpoint_name(jnp.tanh(h @ w), "h")
            return h, jnp.sum(h * h)

        def body(h, w):
            return jax.checkpoint(layer, policy=Marker(policy.dots_saveable))(h, w)

        def entry(ws, x):
            h, losses = jax.lax.scan(body, x, ws)
            return jnp.mean(h.astype(jnp.float32) ** 2) + jnp.sum(losses)

        leaves = [jax.ShapeDtypeStruct((2, 8, 8), jnp.bfloat16), jax.ShapeDtypeStruct((4, 8), jnp.bfloat16)]
        forward = trace_forward(entry, leaves)
        frames = Frames(None, [])
        for value in (policy.nothing_saveable, policy.save_only_these_names("h")):
            # asking JAX for the backend would start one before the fork, and hang the children
            advise_one(Candidate("warm-up", value), forward, leaves, ("ws", "x"), frames, 2, lambda: True)
    except Exception:  # a JAX release where this does not trace: children start colder
        pass

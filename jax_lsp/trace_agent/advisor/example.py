"""Running the example, and naming the user's line and error when it or a trace fails."""

from __future__ import annotations

import ast
import functools
import os

import jax
from jax._src import core as jax_core

from .. import load
from ..errors import AgentError


def user_frame_of(tb, files, root):
    """(path, line) of the innermost frame in the given files or in the project, else None."""
    found = None
    for filename, line in _frames(tb):
        if filename in files or is_project_file(filename, root):
            found = (filename, line)
    return found


def _frames(tb):
    """(real path, line) of each frame of ``tb`` that runs a file (not ``<frozen os>``), outermost first."""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith("<"):
            yield os.path.realpath(filename), tb.tb_lineno
        tb = tb.tb_next


def error_site(exc, files, root):
    """Where ``exc`` is anchored: the innermost line of the user's code that it went through (None
    when none), and, when it raised elsewhere (in a library), the ``(path, line)`` it raised at.
    A ``SyntaxError`` raised at the file and line that does not parse."""
    anchor = user_frame_of(exc.__traceback__, files, root)
    raised = next(reversed(list(_frames(exc.__traceback__))), None)
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        raised = (os.path.realpath(exc.filename), exc.lineno)
        if raised[0] in files or is_project_file(raised[0], root):
            anchor = raised
    return anchor, (raised if raised != anchor else None)


def is_project_file(filename, root):
    """Whether ``filename`` is in the project under ``root`` (installed packages are not)."""
    if not root:
        return False
    if "site-packages" in filename or "dist-packages" in filename:
        return False
    return filename.startswith(os.path.realpath(root) + os.sep)


def short_error(exc):
    """``exc`` as its class and the first lines of its message."""
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    head = "\n".join(lines[:4])
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__


def _staged(function):
    """Call the example under ``make_jaxpr``, so that what it computes (``jax.random.key(0)``,
    ``jnp.ones``) is traced, never run: no backend starts and nothing is compiled or allocated.
    None when that fails or when the example returns traced values: then it is run as written."""
    box = []

    def staged():
        box.append(function())
        return ()

    try:
        jax.make_jaxpr(staged)()
    except MemoryError:
        raise
    except Exception:
        return None
    if not box or any(isinstance(leaf, jax_core.Tracer) for leaf in jax.tree_util.tree_leaves(box[0])):
        return None
    return box


def _devices_hint(exc):
    """What to do where the example's mesh wants more devices than this process has: it sees as
    many as the target has chips (docs/advise.md, "Many chips")."""
    if "Number of devices" not in str(exc) and "devices" not in type(exc).__name__.lower():
        return ""
    count = len(jax.devices())
    return (
        f" (the example sees {count} device{'s' if count != 1 else ''}, as many as the target has "
        "chips: give --target the slice the mesh is for, build the mesh over jax.devices(), or "
        "shard over a jax.sharding.AbstractMesh, which needs no device)"
    )


def run_example(function, spec, example_file, site, root):
    """Call the example: (the callable to trace, its args, its kwargs, "entry" or "args")."""
    try:
        staged = _staged(function)
        value = staged[0] if staged is not None else function()
    except MemoryError:
        raise
    except Exception as exc:
        where = user_frame_of(exc.__traceback__, {example_file, site.path}, root)
        raise AgentError(
            "example_error",
            f"The example {spec} raised {short_error(exc)}{_devices_hint(exc)}",
            *(where or (example_file, None)),
            error_type=type(exc).__name__,
        ) from None
    if isinstance(value, dict) and "fn" in value:
        fn = value["fn"]
        args = value.get("args", ())
        kwargs = value.get("kwargs") or {}
        if not callable(fn):
            raise AgentError(
                "example_error", f"The example {spec} returned a 'fn' that is not callable", example_file
            )
        if not isinstance(args, (tuple, list)):
            args = (args,)
        return fn, tuple(args), dict(kwargs), "entry"
    args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return _checkpointed_callable(site), args, {}, "args"


def _checkpointed_callable(site):
    """What the example's positional arguments are for: the site's checkpointed callable."""
    parents = load.parents_of(site.tree)
    node = site.call
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        previous, node = node, parents.get(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and previous in node.decorator_list:
            value = site.namespace.get(node.name) if node in site.tree.body else None
            if value is None:
                break
            return value
    if len(site.captured) == 1 and callable(site.captured[0]) and not isinstance(site.captured[0], type):
        value = site.captured[0]
        # partial(jax.checkpoint, policy=...) is a decorator; under jax_remat3 a checkpointed
        # function is a partial too, given the policy positionally
        if not (isinstance(value, functools.partial) and "policy" in value.keywords):
            return value
    raise AgentError(
        "example_error",
        f"The checkpoint at line {site.line} is not a function of the module that positional "
        "arguments can be given to (it is made inside a function, or it checkpoints a class): "
        'make the example return {"fn": entry, "args": (...)} with an entry function that reaches it',
        site.path,
        site.line,
    )

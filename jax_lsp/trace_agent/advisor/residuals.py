"""What a ``vjp`` saves for the backward pass, each residual with its size and the user's line."""

from __future__ import annotations

import itertools
import math
import os

from jax._src import core as jax_core

from .example import is_project_file

# The agent's own folder: its frames (calling the policy, loading the module) are never the user's.
AGENT_FOLDER = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _memory(aval):
    space = getattr(aval, "memory_space", None)
    if space is not None and "host" in str(space).lower():
        return "host"
    return "device"


def _dtype_name(aval):
    return str(getattr(aval, "dtype", "")).replace("<host>", "")


def _nbytes(aval):
    shape = getattr(aval, "shape", ())
    dtype = getattr(aval, "dtype", None)
    itemsize = getattr(dtype, "itemsize", 0) or 0
    return int(math.prod(shape) * itemsize)


def device_bytes(aval):
    """The bytes of a value of ``aval`` on the device (0 for one in host memory)."""
    return _nbytes(aval) if _memory(aval) == "device" else 0


class Frames:
    """Finds the user's line in a JAX source_info, caching by traceback."""

    def __init__(self, root, user_files, library=None):
        self.root = os.path.realpath(root) if root else None
        self.user_files = {os.path.realpath(f) for f in user_files if f}
        self.library = library  # a library site's folder (`user_call.library_folder`): never the user's
        self._user = {}
        self._lines = {}

    def is_user(self, filename):
        if filename in self._user:
            return self._user[filename]
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        mine = real.startswith(AGENT_FOLDER + os.sep)  # the agent's hooks, when jax-lsp is the project
        library = self.library is not None and (
            real == self.library or real.startswith(self.library + os.sep)
        )
        found = not mine and not library and (real in self.user_files or is_project_file(real, self.root))
        self._user[filename] = found
        return found

    def line_of(self, source_info):
        """The user's (file, line) of a source_info, once per traceback (reading its frames is
        slow, and the equations JAX derives from one forward equation share its traceback)."""
        return self._found(source_info)[0]

    def span_of(self, source_info):
        """The place in the user's line (`line_of`) of the expression that made the value:
        ``[start_line, start_column, end_line, end_column]``, columns in UTF-8 bytes as Python's
        ``co_positions`` gives them (and `ast`); None where Python or JAX does not say."""
        return self._found(source_info)[1]

    def _found(self, source_info):
        traceback = getattr(source_info, "traceback", None)
        if id(traceback) not in self._lines:
            self._lines[id(traceback)] = (traceback, self._line_of(traceback))  # keeps the id taken
        return self._lines[id(traceback)][1]

    def _line_of(self, traceback):
        frames = getattr(traceback, "frames", None) if traceback is not None else None
        for index, frame in enumerate(frames or ()):
            if self.is_user(frame.file_name):
                return (os.path.realpath(frame.file_name), frame.line_num), _span(traceback, index)
        for frame in frames or ():  # not the project's: the innermost frame outside jax and here
            name = frame.file_name
            if not (name.startswith("<") or os.sep + "jax" + os.sep in name or name.startswith(AGENT_FOLDER)):
                return (os.path.realpath(name), frame.line_num), None
        return (None, None), None


def _span(traceback, index):
    """The positions of the instruction the ``index``-th frame of ``traceback`` was running
    (`Frames.span_of`); None where the traceback keeps no code objects or Python no positions."""
    try:  # jaxlib's Traceback: the frames' code objects and instruction offsets, innermost first
        codes, offsets = traceback.raw_frames()
        positions = codes[index].co_positions()  # Python 3.11 and later
        start_line, end_line, start_column, end_column = next(
            itertools.islice(positions, offsets[index] // 2, None)
        )
    except Exception:
        return None
    if None in (start_line, end_line, start_column, end_column):
        return None
    return [start_line, start_column, end_line, end_column]


def residuals_of(jaxpr, outvars, arg_names, frames, why=None):
    """The residuals ``outvars`` of a ``vjp`` jaxpr, as JAX's ``_saved_residuals`` reads them;
    ``why(index, var, kind)``, when given, adds its keys to each (``index``: among ``outvars``)."""
    reduce_precision = "reduce_precision"
    subst = {
        e.outvars[0]: e.invars[0] for e in jaxpr.eqns if e.primitive.name == reduce_precision and e.invars
    }
    wanted = {}
    literals = []
    for index, var in enumerate(outvars):
        if isinstance(var, jax_core.Literal):
            literals.append((index, var))
            continue
        wanted.setdefault(subst.get(var, var), []).append(index)
    found = []

    def item(index, var, kind, description, name=None, path=None, line=None, iterations=None, span=None):
        aval = var.aval
        found.append(
            {
                "shape": [int(d) for d in getattr(aval, "shape", ())],
                "dtype": _dtype_name(aval),
                "bytes": _nbytes(aval),
                "memory": _memory(aval),
                "kind": kind,
                "name": name,
                "path": path,
                "line": line,
                "iterations": iterations,
                "description": description,
                "span": span,
                **(why(index, var, kind) if why is not None else {}),
            }
        )

    for index, lit in literals:
        item(index, lit, "literal", "from a literal")
    for var in jaxpr.constvars:
        for index in wanted.get(var, ()):
            item(index, var, "constant", "from a constant")
    for i, var in enumerate(jaxpr.invars):
        for index in wanted.get(var, ()):
            name = arg_names[i] if i < len(arg_names) and arg_names[i] else None
            text = f"from the argument {name}" if name else f"from the argument at flattened index {i}"
            item(index, var, "argument", text)
    producers = {var: eqn for eqn in jaxpr.eqns for var in eqn.outvars}
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            for index in wanted.get(var, ()):
                origin = eqn
                while (
                    origin.primitive.name == "device_put" and origin.invars and origin.invars[0] in producers
                ):
                    origin = producers[origin.invars[0]]  # an offload: where the value was made
                path, line = frames.line_of(origin.source_info)
                name = eqn.params.get("name") if eqn.primitive.name == "name" else None
                prim = eqn.primitive.name
                iterations = eqn.params.get("length") if prim == "scan" else None
                if name is not None:
                    text = f"named {name!r}"
                elif prim in ("jit", "pjit"):
                    text = f"output of jitted function {eqn.params.get('name')!r}"
                else:
                    text = f"output of {prim}"
                span = frames.span_of(origin.source_info) if path is not None else None
                item(index, var, "computed", text, name, path, line, iterations, span)
    return found

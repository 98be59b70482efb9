"""Agent side of ``jax-lsp advise``: what each remat policy saves and recomputes at one site.

Runs inside the trace agent (the user's interpreter): standard library and jax only.

The site's module is loaded as the trace loads it (imports, definitions and the assignments
that are needed, nothing else), with the site's ``policy=`` value wrapped in a ``Marker``.
The example is traced forward once (``make_jaxpr``: shapes only, nothing allocated); then,
for every candidate policy, the ``checkpoint`` equations that carry this site's marker get the
candidate as their policy, and the jaxpr is differentiated again the way
``jax._src.ad_checkpoint.saved_residuals`` does (``make_jaxpr`` of ``vjp``). The residuals are
read as JAX's own ``_saved_residuals`` reads them; the recomputed FLOPs are counted in the
linear (backward) jaxpr of the same ``vjp``: the ``dot_general``/convolution equations there
whose operands do not depend on the cotangents are primal work done again.
"""

from __future__ import annotations

import ast
import functools
import math
import os
import sys
import time
import types

import jax
from jax._src import core as jax_core

from .. import load
from ..errors import AgentError

MARK = "__jax_lsp_advise_mark__"
CAPTURE = "__jax_lsp_advise_capture__"
READY_MADE = (
    "nothing_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
)
POLICIES = "jax.checkpoint_policies."
MAX_SINGLE_NAMES = 6  # one save_only_these_names candidate per name, up to this many names
FLOP_PRIMITIVES = ("dot_general", "conv_general_dilated")
HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the agent's folder


class Marker:
    """The site's policy, recognisable in a jaxpr: JAX only stores it until differentiation."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value

    def __call__(self, *args, **params):  # only reached if a marker escapes substitution
        policy = self.value or jax.checkpoint_policies.nothing_saveable
        return policy(*args, **params)

    def __repr__(self):
        return f"Marker({self.value!r})"


# ---------------------------------------------------------------------------------------------
# Loading the site's module with its policy marked


def find_site(tree, line, column):
    """The ``policy=`` keyword at ``line``: a site, or the site that checkpoints a ``def`` there."""
    for kind, _, node in load.policy_nodes_at(tree, line, column):
        if kind == "site":
            return node
        if kind == "def":
            for decorator in node.decorator_list:
                for inner in ast.walk(decorator):
                    if isinstance(inner, ast.keyword) and inner.arg == "policy":
                        return inner
            for call in ast.walk(tree):  # `block = jax.checkpoint(block_fn, policy=...)`
                if (
                    isinstance(call, ast.Call)
                    and call.args
                    and isinstance(call.args[0], ast.Name)
                    and call.args[0].id == node.name
                ):
                    for keyword in call.keywords:
                        if keyword.arg == "policy":
                            return keyword
    return None


class _Rewrite(ast.NodeTransformer):
    """Wrap the site's policy value in the marker, and the site's call in the capture."""

    def __init__(self, keyword, call):
        self.keyword = keyword
        self.call = call

    def visit(self, node):
        if node is self.call:
            self.generic_visit(node)
            wrapped = ast.Call(ast.Name(CAPTURE, ast.Load()), [node], [])
            return ast.copy_location(wrapped, node)
        if node is self.keyword:
            value = ast.Call(ast.Name(MARK, ast.Load()), [node.value], [])
            node.value = ast.fix_missing_locations(ast.copy_location(value, node.value))
            return node
        return self.generic_visit(node)


class Site:
    def __init__(self, path, text, tree, keyword, call, namespace):
        self.path = path
        self.text = text
        self.tree = tree
        self.keyword = keyword
        self.call = call
        self.namespace = namespace
        self.markers = []  # every Marker the site's expression made, in order
        self.captured = []  # what the site's call returned while the module loaded
        self.loading = True
        self.skipped = []

    @property
    def line(self):
        return self.keyword.value.lineno

    def expression(self):
        return (ast.get_source_segment(self.text, self.keyword.value) or "").strip()

    def mark(self, value):
        marker = Marker(value)
        self.markers.append(marker)
        return marker

    def capture(self, value):
        if self.loading:
            self.captured.append(value)
        return value


def _top_statement(tree, node_line):
    for stmt in tree.body:
        if stmt.lineno <= node_line <= (stmt.end_lineno or stmt.lineno):
            return stmt
    return None


def _register(module, names):
    """Under each name: an import of the site's module by the example gets this (marked) one."""
    for name in names:
        if name:
            sys.modules[name] = module


def load_site(path, line, column, root, source, extra_roots):
    path = os.path.realpath(path)
    text, tree = load.parse_module(path, source)
    keyword = find_site(tree, line, load.byte_column(text, line, column))
    if keyword is None:
        raise AgentError(
            "not_found",
            f"No checkpoint policy at {os.path.basename(path)}:{line}: put the line on a `policy=` "
            "argument, or on a `def` that a `policy=` site checkpoints",
            path,
            line,
        )
    parents = load.parents_of(tree)
    call = parents.get(keyword)
    top = _top_statement(tree, keyword.lineno)
    roots = load.names_in(top) if top is not None else set()
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        roots.add(top.name)
    roots |= set(extra_roots)
    _Rewrite(keyword, call).visit(tree)
    ast.fix_missing_locations(tree)

    load.add_import_folders(path, root)
    name = load.module_name(path, root)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0] if not path.endswith("__init__.py") else name
    _register(module, [name, os.path.splitext(os.path.basename(path))[0]])
    site = Site(path, text, tree, keyword, call, module.__dict__)
    site.namespace[MARK] = site.mark
    site.namespace[CAPTURE] = site.capture
    statements = list(load.kept_statements(tree.body))
    load.execute(statements, path, site.namespace, load.needed_assignments(statements, roots), site.skipped)
    site.loading = False
    return site


# ---------------------------------------------------------------------------------------------
# The example


def example_path(spec, root, site_path):
    """The file an example spec names (without running anything), and the function's name."""
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise AgentError(
            "example_error",
            f"Cannot read the example {spec!r}: write MODULE:FUNCTION or path/to/file.py:FUNCTION",
        )
    if target.endswith((".py", ".ipynb")) or "/" in target or os.sep in target:
        bases = [root, os.path.dirname(site_path), os.getcwd()]
        for base in bases:
            candidate = os.path.realpath(os.path.join(base or "", target))
            if os.path.isfile(candidate):
                return candidate, function
        raise AgentError("example_error", f"The example file {target} does not exist", None, None)
    relative = target.replace(".", os.sep)
    for base in [root, os.path.dirname(site_path)]:  # the project's own modules, not installed ones
        if not base or not os.path.isdir(base):
            continue
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            full = os.path.join(base, candidate)
            if os.path.isfile(full):
                return os.path.realpath(full), function
    raise AgentError(
        "example_error",
        f"The example module {target} was not found in the project "
        f"({root or os.path.dirname(site_path)}) or beside {os.path.basename(site_path)}",
    )


def mentioned_names(path):
    """Names and attribute names a module mentions: the assignments of the site's module it may use."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name.split(".")[-1])
    return found


def load_example_function(path, function, site, root):
    namespace = site.namespace if path == site.path else _load_definitions(path, root, function)
    value = namespace.get(function)
    if not callable(value):
        raise AgentError(
            "example_error",
            f"{os.path.basename(path)} defines no function {function!r} at the top level",
            path,
            None,
        )
    return value


def _load_definitions(path, root, function):
    _, tree = load.parse_module(path, unreadable="example_error")
    load.add_import_folders(path, root)
    name = load.module_name(path, root)
    module = types.ModuleType(name)
    module.__file__ = path
    _register(module, [name])
    statements = list(load.kept_statements(tree.body))
    load.execute(statements, path, module.__dict__, load.needed_assignments(statements, {function}), [])
    return module.__dict__


def _user_frame_of(tb, files, root):
    """(path, line) of the innermost frame in the given files, else in the project, else None."""
    best_file = best_project = None
    while tb is not None:
        filename = os.path.realpath(tb.tb_frame.f_code.co_filename)
        if filename in files:
            best_file = (filename, tb.tb_lineno)
        if _is_project_file(filename, root):
            best_project = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return best_file or best_project


def _is_project_file(filename, root):
    if not root or filename.startswith("<"):
        return False
    if "site-packages" in filename or "dist-packages" in filename:
        return False
    return filename.startswith(os.path.realpath(root) + os.sep)


def _short_error(exc):
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


def run_example(function, spec, example_file, site, root):
    try:
        staged = _staged(function)
        value = staged[0] if staged is not None else function()
    except MemoryError:
        raise
    except Exception as exc:
        where = _user_frame_of(exc.__traceback__, {example_file, site.path}, root)
        raise AgentError(
            "example_error",
            f"The example {spec} raised {_short_error(exc)}",
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
        if not isinstance(value, functools.partial):  # partial(jax.checkpoint, policy=...): a decorator
            return value
    raise AgentError(
        "example_error",
        f"The checkpoint at line {site.line} is not a function of the module that positional "
        "arguments can be given to (it is made inside a function, or it checkpoints a class): "
        'make the example return {"fn": entry, "args": (...)} with an entry function that reaches it',
        site.path,
        site.line,
    )


# ---------------------------------------------------------------------------------------------
# Jaxprs


def _sub_jaxprs(value):
    if isinstance(value, jax_core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax_core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _sub_jaxprs(item)


def _walk_eqns(jaxpr, inside=False):
    """(eqn, inside a marked checkpoint) for every equation, nested jaxprs included."""
    for eqn in jaxpr.eqns:
        marked = isinstance(eqn.params.get("policy"), Marker)
        yield eqn, inside
        for value in eqn.params.values():
            for sub in _sub_jaxprs(value):
                yield from _walk_eqns(sub, inside or marked)


def markers_in(jaxpr):
    return [
        eqn.params["policy"] for eqn, _ in _walk_eqns(jaxpr) if isinstance(eqn.params.get("policy"), Marker)
    ]


def tagged_names(jaxpr):
    names = []
    for eqn, inside in _walk_eqns(jaxpr):
        if inside and eqn.primitive.name == "name":
            name = eqn.params.get("name")
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def _substitute_value(value, choose, memo):
    if isinstance(value, jax_core.ClosedJaxpr):
        inner = _substitute(value.jaxpr, choose, memo)
        return value if inner is value.jaxpr else jax_core.ClosedJaxpr(inner, value.consts)
    if isinstance(value, jax_core.Jaxpr):
        return _substitute(value, choose, memo)
    if isinstance(value, (tuple, list)) and value:
        items = [_substitute_value(v, choose, memo) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    return value


def _substitute(jaxpr, choose, memo):
    """``jaxpr`` with every marked policy replaced by ``choose(marker)``."""
    key = id(jaxpr)
    if key in memo:
        return memo[key][1]
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        params = None
        for name, value in eqn.params.items():
            if name == "policy" and isinstance(value, Marker):
                new = choose(value)
            else:
                new = _substitute_value(value, choose, memo)
            if new is not value:
                params = dict(eqn.params) if params is None else params
                params[name] = new
        if params is not None:
            eqn = eqn.replace(params=params)
            changed = True
        eqns.append(eqn)
    result = jaxpr.replace(eqns=eqns) if changed else jaxpr
    memo[key] = (jaxpr, result)  # keep jaxpr alive so its id stays unique
    return result


def _flops(eqn):
    if eqn.primitive.name == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval.shape
        out = eqn.outvars[0].aval.shape
        return 2 * math.prod(out) * math.prod(lhs[d] for d in contract)
    if eqn.primitive.name == "conv_general_dilated":
        rhs = eqn.invars[1].aval.shape
        out = eqn.outvars[0].aval.shape
        spec = eqn.params["dimension_numbers"].rhs_spec
        out_features = rhs[spec[0]]
        return 2 * math.prod(out) * (math.prod(rhs) // max(out_features, 1))
    return 0


def _inner_inputs(eqn, sub, linear_in):
    """Which inputs of a nested jaxpr are linear, from the equation's inputs."""
    n = len(sub.invars)
    if eqn.primitive.name == "cond":
        mapped = linear_in[1:]
    elif eqn.primitive.name == "while":
        cond_n = eqn.params.get("cond_nconsts", 0)
        mapped = linear_in[cond_n:] if n == len(linear_in) - cond_n else None
    else:
        mapped = linear_in
    if mapped is None or len(mapped) != n:
        return [any(linear_in)] * n
    return list(mapped)


def recompute_flops(jaxpr, linear_in):
    """FLOPs of ``dot_general``/convolutions in ``jaxpr`` whose operands are not linear."""
    linear = {v for v, is_linear in zip(jaxpr.invars, linear_in) if is_linear}
    total = 0
    for eqn in jaxpr.eqns:
        ins = [not isinstance(v, jax_core.Literal) and v in linear for v in eqn.invars]
        if any(ins):
            linear.update(eqn.outvars)
        elif eqn.primitive.name in FLOP_PRIMITIVES:
            total += _flops(eqn)
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        subs = [s for value in eqn.params.values() for s in _sub_jaxprs(value)]
        if eqn.primitive.name == "cond":
            total += max((recompute_flops(s, _inner_inputs(eqn, s, ins)) for s in subs), default=0)
        else:
            for sub in subs:
                total += times * recompute_flops(sub, _inner_inputs(eqn, sub, ins))
    return total


def _linear_jaxpr(vjp_fn):
    """The linear (backward) jaxpr held by what ``jax.vjp`` returned, across releases."""
    jaxpr = getattr(vjp_fn, "jaxpr", None)
    if isinstance(jaxpr, jax_core.Jaxpr):
        return jaxpr
    seen, queue = set(), [vjp_fn]
    while queue:
        value = queue.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, jax_core.Jaxpr):
            return value
        if isinstance(value, jax_core.ClosedJaxpr):
            return value.jaxpr
        for attr in ("func", "fun", "args", "keywords"):
            inner = getattr(value, attr, None)
            if isinstance(inner, (tuple, list)):
                queue.extend(inner)
            elif isinstance(inner, dict):
                queue.extend(inner.values())
            elif inner is not None:
                queue.append(inner)
    return None


# ---------------------------------------------------------------------------------------------
# Residuals


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


class Frames:
    """Finds the user's line in a JAX source_info, caching by traceback."""

    def __init__(self, root, user_files):
        self.root = os.path.realpath(root) if root else None
        self.user_files = {os.path.realpath(f) for f in user_files if f}
        self._user = {}

    def is_user(self, filename):
        if filename in self._user:
            return self._user[filename]
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        found = real in self.user_files or _is_project_file(real, self.root)
        self._user[filename] = found
        return found

    def line_of(self, source_info):
        traceback = getattr(source_info, "traceback", None)
        frames = getattr(traceback, "frames", None) if traceback is not None else None
        for frame in frames or ():
            if self.is_user(frame.file_name):
                return os.path.realpath(frame.file_name), frame.line_num
        for frame in frames or ():  # not the project's: the innermost frame outside jax and here
            name = frame.file_name
            if not (name.startswith("<") or os.sep + "jax" + os.sep in name or name.startswith(HERE)):
                return os.path.realpath(name), frame.line_num
        return None, None


def residuals_of(jaxpr, outvars, arg_names, frames):
    """The residuals ``outvars`` of a ``vjp`` jaxpr, as JAX's ``_saved_residuals`` reads them."""
    reduce_precision = "reduce_precision"
    subst = {
        e.outvars[0]: e.invars[0] for e in jaxpr.eqns if e.primitive.name == reduce_precision and e.invars
    }
    wanted = {}
    literals = []
    for index, var in enumerate(outvars):
        if isinstance(var, jax_core.Literal):
            literals.append(var)
            continue
        wanted.setdefault(subst.get(var, var), []).append(index)
    found = []

    def item(aval, kind, description, name=None, path=None, line=None, iterations=None):
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
            }
        )

    for lit in literals:
        item(lit.aval, "computed", "from a literal")
    for var in jaxpr.constvars:
        for _ in wanted.get(var, ()):
            item(var.aval, "computed", "from a constant")
    for i, var in enumerate(jaxpr.invars):
        for _ in wanted.get(var, ()):
            name = arg_names[i] if i < len(arg_names) and arg_names[i] else None
            text = f"from the argument {name}" if name else f"from the argument at flattened index {i}"
            item(var.aval, "argument", text)
    producers = {var: eqn for eqn in jaxpr.eqns for var in eqn.outvars}
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            for _ in wanted.get(var, ()):
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
                item(var.aval, "computed", text, name, path, line, iterations)
    return found


# ---------------------------------------------------------------------------------------------
# Candidates


class Candidate:
    def __init__(self, text, value, current=False):
        self.text = text
        self.value = value
        self.current = current


def _quote(names):
    return ", ".join(repr(n) for n in names)


def default_candidates(names, memories):
    texts = [POLICIES + name for name in READY_MADE]
    if names:
        texts.append(f"{POLICIES}save_only_these_names({_quote(names)})")
        if 1 < len(names) <= MAX_SINGLE_NAMES:
            texts += [f"{POLICIES}save_only_these_names({name!r})" for name in names]
    if "pinned_host" in memories:
        if names:
            texts.append(
                f"{POLICIES}save_and_offload_only_these_names(names_which_can_be_saved=[], "
                f"names_which_can_be_offloaded=[{_quote(names)}], offload_src='device', "
                "offload_dst='pinned_host')"
            )
        texts.append(f"{POLICIES}offload_dot_with_no_batch_dims('device', 'pinned_host')")
    return texts


def expand(text):
    """``dots_saveable`` or ``save_only_these_names('h')`` as ``jax.checkpoint_policies.…``."""
    text = text.strip()
    head = text.split("(", 1)[0].strip()
    if head.isidentifier() and hasattr(jax.checkpoint_policies, head):
        return POLICIES + text
    return text


def _same(a, b):
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, types.FunctionType):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def build_candidates(site, requested, names, memories):
    current = [m.value for m in site.markers]
    texts = [expand(t) for t in requested] if requested else default_candidates(names, memories)
    namespace = dict(site.namespace)
    namespace.setdefault("jax", jax)
    candidates, errors = [], []
    seen = set()
    for text in texts:
        if text in seen:
            continue
        seen.add(text)
        try:
            value = eval(compile(text, "<policy>", "eval"), namespace)
        except Exception as exc:
            errors.append({"policy": text, "message": _short_error(exc)})
            continue
        is_current = bool(current) and all(_same(value, c) for c in current)
        candidates.append(Candidate(text, value, is_current))
    if not any(c.current for c in candidates):
        candidates.insert(0, Candidate(site.expression() or "None", None, True))
    return candidates, errors


# ---------------------------------------------------------------------------------------------
# The request


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
    where = _user_frame_of(exc.__traceback__, {site.path, example_file}, root)
    return AgentError(
        "trace_error",
        f"JAX could not trace {what}: {_short_error(exc)}",
        *(where or (site.path, site.line)),
        error_type=type(exc).__name__,
    )


def advise_one(candidate, closed, leaves, arg_names, frames):
    if candidate.value is None and candidate.current:
        choose = lambda marker: marker.value  # noqa: E731
    else:
        choose = lambda marker: candidate.value  # noqa: E731
    new_jaxpr = _substitute(closed.jaxpr, choose, {})
    replay = jax_core.jaxpr_as_fun(jax_core.ClosedJaxpr(new_jaxpr, closed.consts))
    box = []

    def run(*xs):
        out, vjp_fn = jax.vjp(replay, *xs)
        box.append(vjp_fn)
        return out, vjp_fn

    traced, out_shape = jax.make_jaxpr(run, return_shape=True)(*leaves)
    jaxpr = traced.jaxpr
    num_res = jax.tree_util.tree_structure(out_shape[1]).num_leaves
    outvars = jaxpr.outvars[len(jaxpr.outvars) - num_res :]
    residuals = residuals_of(jaxpr, outvars, arg_names, frames)
    linear = _linear_jaxpr(box[0]) if box else None
    flops = recompute_flops(linear, [True] * len(linear.invars)) if linear is not None else None
    return {
        "policy": candidate.text,
        "current": candidate.current,
        "device_bytes": sum(r["bytes"] for r in residuals if r["memory"] == "device"),
        "host_bytes": sum(r["bytes"] for r in residuals if r["memory"] == "host"),
        "recompute_flops": flops,
        "residuals": residuals,
    }


def _remat3_on():
    try:
        from jax._src import config

        flag = getattr(config, "remat3", None)
        return bool(flag.value) if flag is not None else False
    except Exception:
        return False


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


def advise(params):
    started = time.perf_counter()
    root = params.get("root")
    if root and os.path.isdir(root):
        os.chdir(root)
    import_root = params.get("import_root") or root
    path = os.path.realpath(params["path"])
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
    if _remat3_on():
        raise AgentError(
            "unsupported",
            "jax_remat3 is on: the advisor reads the classic remat's checkpoint equations, which "
            "the new remat does not make; advise with jax_remat3 off",
            path,
            params["line"],
        )
    example_file, function_name = example_path(spec, root, path)
    extra = {function_name} if example_file == path else mentioned_names(example_file)
    site = load_site(
        path, int(params["line"]), params.get("column"), import_root, params.get("source"), extra
    )
    function = load_example_function(example_file, function_name, site, import_root)
    timings = {"load_s": time.perf_counter() - started}
    fn, args, kwargs, form = run_example(function, spec, example_file, site, root)
    timings["example_s"] = time.perf_counter() - started - timings["load_s"]

    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    what = f"the example {spec}"
    try:
        closed = jax.make_jaxpr(_flat_call(fn, treedef))(*leaves)
    except MemoryError:
        raise
    except Exception as exc:
        raise _trace_error(exc, site, example_file, root, what) from None
    timings["forward_s"] = time.perf_counter() - started - timings["load_s"] - timings["example_s"]
    if not markers_in(closed.jaxpr):
        raise AgentError(
            "not_reached",
            f"Tracing the example {spec} never reached the checkpoint at "
            f"{os.path.basename(path)}:{site.line}: the example must call the function it checkpoints",
            path,
            site.line,
        )
    names = tagged_names(closed.jaxpr)
    platform, device, memories = _platform()
    candidates, errors = build_candidates(site, params.get("policies") or [], names, memories)
    arg_names = _arg_names(fn, args, kwargs, len(leaves))
    frames = Frames(root, [path, example_file])
    entries, per_policy = [], []
    for candidate in candidates:
        begun = time.perf_counter()
        try:
            entries.append(advise_one(candidate, closed, leaves, arg_names, frames))
        except MemoryError:
            raise
        except Exception as exc:
            error = _trace_error(exc, site, example_file, root, f"{what} under {candidate.text}")
            entries.append(
                {
                    "policy": candidate.text,
                    "current": candidate.current,
                    "device_bytes": 0,
                    "host_bytes": 0,
                    "recompute_flops": 0,
                    "residuals": [],
                    "error": {"message": str(error), "path": error.path, "line": error.line},
                }
            )
        per_policy.append(time.perf_counter() - begun)
    timings["advise_s"] = time.perf_counter() - started - sum(timings.values())
    timings["per_policy_s"] = per_policy
    timings["max_rss_mb"] = _max_rss_mb()
    return {
        "status": "ok",
        "message": "",
        "target": {"path": path, "line": site.line},
        "example": {"spec": spec, "path": example_file, "form": form},
        "platform": platform,
        "device": device,
        "memories": memories,
        "names": names,
        "markers": len(site.markers),
        "policies": entries,
        "policy_errors": errors,
        "skipped": site.skipped,
        "timings": timings,
    }


def handle(params):
    """The agent's answer to an ``advise`` request: ``advise``'s, or the error's."""
    before = set(sys.modules)
    cpu = time.process_time()
    try:
        result = advise(params)
    except AgentError as exc:
        result = exc.result()
    result["preload"] = installed_imports(before, params.get("root"))
    result.setdefault("timings", {})["cpu_s"] = time.process_time() - cpu  # the child's own CPU
    return result


# ---------------------------------------------------------------------------------------------
# Warm children: installed packages the user's code imported are imported by the agent too


_PRELOAD = {"enabled": True}


def _installed(module, root):
    filename = getattr(module, "__file__", None) or ""
    if not ("site-packages" in filename or "dist-packages" in filename):
        return False
    return not (root and os.path.realpath(filename).startswith(os.path.realpath(root) + os.sep))


def installed_imports(before, root):
    """Top-level installed packages (site-packages, never the project) imported since ``before``."""
    names = set()
    for name in set(sys.modules) - before:
        top = name.partition(".")[0]
        module = sys.modules.get(top)
        if top not in before and module is not None and not top.startswith("_") and _installed(module, root):
            names.add(top)
    return sorted(names)


def preload_from(result):
    """In the agent, after a child's answer: import the installed packages it names, so that the
    next child forks with them loaded (flax, equinox: seconds each). Stops for good if an import
    starts a thread or a JAX backend, which would make forking unsafe."""
    import threading

    names = result.pop("preload", None) or ()
    if not _PRELOAD["enabled"]:
        return
    import importlib

    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 (an installed package's import failing is its own)
            continue
        if threading.active_count() > 1 or _backend_started():
            _PRELOAD["enabled"] = False
            print(f"jax-lsp advise: importing {name} started a thread; no more preloading", file=sys.stderr)
            return


def _backend_started():
    try:
        from jax._src import xla_bridge

        return bool(getattr(xla_bridge, "_backends", {}))
    except Exception:
        return False


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
        closed = jax.make_jaxpr(entry)(*leaves)
        frames = Frames(None, [])
        for value in (policy.nothing_saveable, policy.save_only_these_names("h")):
            advise_one(Candidate("warm-up", value), closed, leaves, ("ws", "x"), frames)
    except Exception:  # a JAX release where this does not trace: children start colder
        pass

"""The site's module loaded with its policy marked, and the example's file and function."""

from __future__ import annotations

import ast
import os
import sys
import types

import jax

from .. import load
from ..errors import AgentError
from .selector import KEY, key_node

MARK = "__jax_lsp_advise_mark__"
CAPTURE = "__jax_lsp_advise_capture__"


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
    """Wrap the site's policy value in the marker, the site's call in the capture, and the key
    that chooses the policy, if any, in the key's capture."""

    def __init__(self, keyword, call, key):
        self.keyword = keyword
        self.call = call
        self.key = key

    def visit(self, node):
        if node is self.call or node is self.key:
            self.generic_visit(node)
            wrapped = ast.Call(ast.Name(CAPTURE if node is self.call else KEY, ast.Load()), [node], [])
            return ast.copy_location(wrapped, node)
        if node is self.keyword:
            self.generic_visit(node)
            value = ast.Call(ast.Name(MARK, ast.Load()), [node.value], [])
            node.value = ast.fix_missing_locations(ast.copy_location(value, node.value))
            return node
        return self.generic_visit(node)


class Site:
    def __init__(self, path, text, tree, keyword, call, namespace, key):
        self.path = path
        self.text = text
        self.tree = tree
        self.keyword = keyword
        self.value = keyword.value.args[0]  # the policy= value as written, inside the marker
        self.key = key  # the key that may choose the policy (its node now inside the key's capture)
        self.keys = []  # every value the key had, in order
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

    def capture_key(self, key):
        self.keys.append(key)
        return key


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
    """Load the module of ``path`` with the site at ``line`` marked.

    ``extra_roots``: names of the module the example may use, whose assignments are run too."""
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
    key = key_node(keyword.value)
    _Rewrite(keyword, call, key).visit(tree)
    ast.fix_missing_locations(tree)

    load.add_import_folders(path, root)
    name = load.module_name(path, root)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0] if not path.endswith("__init__.py") else name
    _register(module, [name, os.path.splitext(os.path.basename(path))[0]])
    site = Site(path, text, tree, keyword, call, module.__dict__, key)
    site.namespace[MARK] = site.mark
    site.namespace[CAPTURE] = site.capture
    site.namespace[KEY] = site.capture_key
    statements = list(load.kept_statements(tree.body))
    load.execute(statements, path, site.namespace, load.needed_assignments(statements, roots), site.skipped)
    site.loading = False
    return site


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
    """The example function ``function`` of ``path`` (the site's own module when it is that file)."""
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

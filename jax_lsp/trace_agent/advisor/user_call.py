"""A checkpoint site in a library: the user's call that chooses its policy.

haliax's ``eqx.filter_checkpoint(callable, policy=policy)`` is reached by every haliax model;
what a user sets is ``Stacked.init(..., gradient_checkpointing="recompute")`` in their own file.
When the site's policy expression is first evaluated (`Site.mark`), the frames from the site
outward are read once: the names the expression reads (one local assignment followed), the
objects those names hold, and, in each library frame on the way out, the parameters and the
fields of ``self`` that hold one of those objects (``remat``, ``gradient_checkpointing``). The
user's call is then the call, in the example function, the user's functions on the way out or
the top level of their files, of a function or class met on that way out, that passes one of
those names as a keyword; one that passes a field the site reads (``remat_policy`` of
``self.config.remat_policy``) counts only where it calls the library's own function or class
(``StackConfig(remat_policy=...)``): a config the user builds, ``dict(remat_policy=...)``, a
dataclass of theirs or ``dataclasses.replace``, only carries the value.

A site is in a library where its file is installed, or outside the project (`is_library_site`):
a package in the project, the example beside it or not, is the user's own code.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import types

from .. import load
from .example import is_project_file
from .residuals import AGENT_FOLDER
from .site import CHECKPOINT_NAMES

_PLAIN = (str, bytes, int, float, complex, bool, type(None), types.ModuleType, type)


def _reads(expr):
    """The variable names and the attribute names ``expr`` reads."""
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    attributes = {n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    return names, attributes


def _enclosing_function(tree, node):
    parents = load.parents_of(tree)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents.get(node)
    return node


def _followed_reads(site):
    """What the site's policy expression reads, through the local assignments of its names in the
    function holding the site (``policy = self._to_jax_policy(...)`` reads ``self``)."""
    names, attributes = _reads(site.value)
    function = _enclosing_function(site.tree, site.keyword)
    if function is None:
        return names, attributes
    for statement in ast.walk(function):
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in names for t in statement.targets
        ):
            more_names, more_attributes = _reads(statement.value)
            names |= more_names
            attributes |= more_attributes
    return names, attributes


class PolicyChain:
    """What chose the site's policy, read from the frames when the site's expression ran:
    ``frame`` the site's, ``policy`` the value it gave, ``is_user(filename)`` the user's files,
    ``library`` the library's folder (`library_folder`)."""

    def __init__(self, site, frame, policy, is_user, library):
        names, attributes = _followed_reads(site)
        values = {name: frame.f_locals[name] for name in names if name in frame.f_locals}
        tracked = {id(v): v for v in values.values() if not isinstance(v, _PLAIN)}
        # a name whose value is the policy itself: the user's value is then a policy, and a
        # candidate can replace it as written
        self.carries_policy = {name for name, value in values.items() if value is policy}
        self.names = [name for name in values if name not in ("self", "cls")]  # nearest the user first
        self.fields = attributes - set(self.names)  # read at the site: `self.config.remat_policy`
        self.callees = {frame.f_code.co_name} - CHECKPOINT_NAMES
        self.policy = policy
        self.library = library
        self.user_files = []  # the user's files on the way out, innermost first
        self.user_functions = set()  # (file, first line) of the user's functions on the way out
        outer = frame.f_back
        while outer is not None:
            filename = outer.f_code.co_filename
            real = os.path.realpath(filename)
            if is_user(filename):
                if real not in self.user_files:
                    self.user_files.append(real)
                self.user_functions.add((real, outer.f_code.co_firstlineno))
            elif _under(real, library):
                self._read_library_frame(outer, tracked, policy)
            outer = outer.f_back

    def _read_library_frame(self, frame, tracked, policy):
        self.callees |= {frame.f_code.co_name} - CHECKPOINT_NAMES  # a user's own jax.checkpoint is no knob
        holders = list(frame.f_locals.items())
        owner = frame.f_locals.get("self")
        if owner is not None:
            self.callees.add(type(owner).__name__)
            holders += list(getattr(owner, "__dict__", {}).items())
        for name, value in holders:
            if tracked.get(id(value)) is value and name not in ("self", "cls") and name not in self.names:
                self.names.insert(0, name)  # the outer the frame, the nearer the user
                if value is policy:
                    self.carries_policy.add(name)


def _under(filename, folder):
    return filename == folder or filename.startswith(folder + os.sep)


def library_folder(path):
    """The folder of the library holding the site's file: its outermost regular package, or the
    file itself where it is in none."""
    folder = os.path.dirname(path)
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return path
    while os.path.isfile(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


def _installed(path):
    return os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path


def is_library_site(path, root):
    """Whether the site is in a library: installed, or outside the project under ``root`` (a
    package of the project is the user's code, wherever the example is)."""
    return _installed(path) or not is_project_file(os.path.realpath(path), root)


def user_files_test(example_file, root, library):
    """Whether a file is the user's: the example's, or the project's outside the library."""

    def is_user(filename):
        if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
            return False
        real = os.path.realpath(filename)
        if real == example_file:
            return True
        return is_project_file(real, root) and not _under(real, library) and not _under(real, AGENT_FOLDER)

    return is_user


def _callee_parts(call):
    node, parts = call.func, set()
    while isinstance(node, ast.Attribute):
        parts.add(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.add(node.id)
    return parts


def _column(line_text, byte_offset):
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", "replace"))


def _scopes(tree, path, functions):
    """What of a user's file is searched: its module-level statements, and the functions and
    methods among ``functions`` ((file, first line) pairs), nested functions included."""
    yield from (
        n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (path, min([node.lineno, *(d.lineno for d in node.decorator_list)])) in functions:
                yield node


def _namespace_of(path):
    """The globals of the imported module whose file is ``path`` (empty where none is)."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", {})  # no module __getattr__ runs
        file = namespace.get("__file__")
        if isinstance(file, str) and os.path.realpath(file) == path:
            return namespace
    return {}


def _dotted_value(node, namespace):
    """The value of a dotted name (``jax.checkpoint_policies.dots_saveable``) in ``namespace``;
    None for any other expression (nothing is called) or a name it lacks."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in namespace:
        return None
    value = namespace[node.id]
    for attribute in attributes:
        try:
            value = getattr(value, attribute)
        except Exception:
            return None
    return value


def _calls_the_library(call, path, library):
    """Whether ``call`` (in the file ``path``) calls a function or class defined in ``library``:
    not ``dict``, a dataclass of the user's or ``dataclasses.replace``."""
    callee = _dotted_value(call.func, _namespace_of(path))
    callee = getattr(callee, "__func__", callee)
    code = getattr(callee, "__code__", None)
    if code is not None:
        defined = code.co_filename
    else:
        module = sys.modules.get(getattr(callee, "__module__", None) or "")
        defined = getattr(module, "__file__", None) if isinstance(callee, type) else None
    return bool(defined) and _under(os.path.realpath(defined), library)


def find_user_call(chain, files, functions):
    """The call in ``files`` that passes the site's policy, or what the library makes it from, as a
    keyword: ``{"path", "line", "column", "end_line", "end_column", "keyword", "text",
    "callee", "carries_policy"}`` (columns 0-based code points), or None. A keyword named as a
    parameter or field met on the way out of the library counts in a call of a function or class
    met there; one named as a field the site reads, in a call of the library's own function or
    class (`_calls_the_library`). The nearest the user wins."""
    rank = {name: index for index, name in enumerate(chain.names)}
    rank.update({name: len(rank) for name in chain.fields})
    found = []
    for path in files:
        try:
            text, tree = load.parse_module(path)
        except Exception:
            continue
        calls = [n for scope in _scopes(tree, path, functions) for n in ast.walk(scope)]
        for call in calls:
            if not isinstance(call, ast.Call):
                continue
            parts = _callee_parts(call)
            near_library = bool(parts & chain.callees)
            for keyword in call.keywords:
                if keyword.arg in chain.carries_policy and parts & CHECKPOINT_NAMES:
                    # `nn.remat(Block, policy=...)`: a checkpoint function of the library, passing
                    # the very policy the site got (never the user's own checkpoint of another)
                    passes = _dotted_value(keyword.value, _namespace_of(path)) is chain.policy
                    if passes and chain.policy is not None:
                        found.append((rank[keyword.arg], path, keyword.value.lineno, text, call, keyword))
                    continue
                by_field = keyword.arg in chain.fields and _calls_the_library(call, path, chain.library)
                if by_field or (keyword.arg in rank and near_library):
                    found.append((rank[keyword.arg], path, keyword.value.lineno, text, call, keyword))
    if not found:
        return None
    _, path, _, text, call, keyword = min(found, key=lambda item: item[:3])
    lines = load.source_lines(text)
    value = keyword.value
    return {
        "path": path,
        "line": value.lineno,
        "column": _column(lines[value.lineno - 1], value.col_offset),
        "end_line": value.end_lineno,
        "end_column": _column(lines[value.end_lineno - 1], value.end_col_offset),
        "keyword": keyword.arg,
        "text": ast.get_source_segment(text, value) or "",
        "callee": ast.get_source_segment(text, call.func) or "",
        "carries_policy": keyword.arg in chain.carries_policy,
    }


def watch_library_site(site, example_file, root):
    """Where the site is in a library, read what chose its policy when its expression runs."""
    if not is_library_site(site.path, root):
        return
    site.library = library_folder(site.path)
    site.installed = _installed(site.path)
    is_user = user_files_test(example_file, root, site.library)
    site.watch = functools.partial(PolicyChain, site, is_user=is_user, library=site.library)


def user_call_of(site, example_file, example):
    """The user's call that chooses a library site's policy (`find_user_call`), or None: in the
    example function ``example``, the user's functions the site was reached through, or at the
    top level of their files (a call elsewhere may not be the one that ran)."""
    if site.chain is None:
        return None
    code = getattr(example, "__code__", None)
    functions = set(site.chain.user_functions)
    if code is not None:
        functions.add((example_file, code.co_firstlineno))
    return find_user_call(site.chain, [example_file, *site.chain.user_files], functions)

"""The site's module imported as Python imports it, with its policy marked; the example's module.

The site's module runs whole, as an import runs it: registrations, ``f.defvjp(fwd, bwd)``,
config updates, with ``__name__`` its dotted name (so ``if __name__ == "__main__":`` does not
run). A finder first on ``sys.meta_path`` gives every import of the site's file, whatever name
it is imported by, the one marked module.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.util
import os
import sys

import jax

from .. import load
from ..errors import AgentError
from ..import_path import import_parent
from .example import error_site, short_error
from .overlay import overlay_loader, spec_without_own
from .selector import KEY, key_node

MARK = "__jax_lsp_advise_mark__"
CAPTURE = "__jax_lsp_advise_capture__"
PARTIAL = "__jax_lsp_advise_partial__"
CHECKPOINT_NAMES = frozenset({"checkpoint", "remat", "filter_checkpoint"})


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


def _last_name(node):
    """``checkpoint`` of ``jax.checkpoint``; None for what is not a dotted name."""
    if isinstance(node, ast.Attribute):
        return node.attr if _dotted(node) else None
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _policy_free(tree):
    """(node, named) of each call of a dotted name that passes no ``policy=`` (nor ``**``), and
    of each decorator that is a dotted name; ``named``: named like a checkpoint function (or a
    ``partial`` of one), the only sign of one without the host's name resolution."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func):
            if not any(k.arg in ("policy", None) for k in node.keywords):
                last = _last_name(node.func)
                if last == "partial" and node.args:
                    last = _last_name(node.args[0])
                yield node, last in CHECKPOINT_NAMES
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from ((d, _last_name(d) in CHECKPOINT_NAMES) for d in node.decorator_list if _dotted(d))


def find_default_site(tree, line, column):
    """A checkpoint at ``line`` that passes no policy: the call or decorator that starts at
    ``column`` (where the host found one), else the first on the line named like a checkpoint
    function, else one so named decorating the ``def``/``class`` of the line."""
    found = sorted(_policy_free(tree), key=lambda item: (item[0].lineno, item[0].col_offset))
    at = [node for node, _ in found if (node.lineno, node.col_offset) == (line, column)]
    if at:
        return at[0]
    on_line = [node for node, named in found if named and node.lineno == line]
    if on_line:
        return on_line[0]
    for definition in ast.walk(tree):
        if (
            isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and definition.lineno == line
        ):
            decorators = [node for node, named in found if named and node in definition.decorator_list]
            if decorators:
                return decorators[0]
    return None


def _pass_policy(tree, node):
    """Give the policy-free checkpoint ``node`` a ``policy=None`` keyword (a decorator that is a
    name becomes ``functools.partial(name, policy=None)``): the keyword and the call holding it."""
    keyword = ast.keyword("policy", ast.copy_location(ast.Constant(None), node))
    if isinstance(node, ast.Call):
        node.keywords.append(keyword)
        return keyword, node
    call = ast.copy_location(ast.Call(ast.Name(PARTIAL, ast.Load()), [node], [keyword]), node)
    for definition in ast.walk(tree):
        decorators = getattr(definition, "decorator_list", None)
        if decorators is not None and any(d is node for d in decorators):
            definition.decorator_list = [call if d is node else d for d in decorators]
    return keyword, call


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
    """The marked site and, once something imported it, its module."""

    def __init__(self, path, text, tree, keyword, call, key, default=False):
        self.path = path
        self.default = default  # the site passes no policy: JAX's default, `policy=None`
        self.text = text
        self.tree = tree
        self.keyword = keyword
        self.value = keyword.value.args[0]  # the policy= value as written, inside the marker
        self.key = key  # the key that may choose the policy (its node now inside the key's capture)
        self.keys = []  # every value the key had, in order
        self.call = call
        self.module = None  # set by the import that runs it
        self.spec = None
        self.markers = []  # every Marker the site's expression made, in order
        self.captured = []  # what the site's call returned while the module loaded
        self.loading = False
        self.watch = None  # called with the frame and the value of the first marker (`user_call`)
        self.chain = None  # what `watch` answered
        self.library = None  # the library's folder, for a site in a library (`user_call`)
        self.installed = False  # the site is in an installed package
        self.user_call = None  # the user's call that chooses the policy of a site in a library

    @property
    def line(self):
        return self.keyword.value.lineno

    @property
    def namespace(self):
        return self.module.__dict__

    def expression(self):
        """The current policy as written: for a site in a library, at the user's call that chooses it."""
        call = self.user_call
        if call is not None:
            return call["text"] if call["carries_policy"] else f"{call['keyword']}={call['text']}"
        if self.default:
            return "None"
        return (ast.get_source_segment(self.text, self.keyword.value) or "").strip()

    def mark(self, value):
        marker = Marker(value)
        self.markers.append(marker)
        if self.watch is not None and self.chain is None:
            try:
                self.chain = self.watch(sys._getframe(1), value)
            except Exception:  # reading the frames helps the advice, never fails it
                self.watch = None
        return marker

    def capture(self, value):
        if self.loading:
            self.captured.append(value)
        return value

    def capture_key(self, key):
        self.keys.append(key)
        return key


def parse_site(path, line, column, source):
    """The site at ``line`` of ``path`` (its text ``source`` when given), its tree rewritten: a
    ``policy=`` value, else a checkpoint that passes none, given ``policy=None`` (JAX's default)."""
    text, tree = load.parse_module(path, source)
    column = load.byte_column(text, line, column)
    keyword = find_site(tree, line, column)
    default = find_default_site(tree, line, column)
    if default is not None and keyword is not None:
        at_default = (default.lineno, default.col_offset) == (line, column)
        at_keyword = (keyword.value.lineno, keyword.value.col_offset) == (line, column)
        default = default if at_default and not at_keyword else None
    if default is not None:
        keyword, call = _pass_policy(tree, default)
    elif keyword is not None:
        call = load.parents_of(tree).get(keyword)
    else:
        raise AgentError(
            "not_found",
            f"No checkpoint policy at {os.path.basename(path)}:{line}: put the line on a `policy=` "
            "argument, on a `def` that a `policy=` site checkpoints, or on a checkpoint without "
            "a policy (`jax.checkpoint(f)`, `@jax.remat`, `nn.remat(Block)`)",
            path,
            line,
        )
    key = key_node(keyword.value)
    _Rewrite(keyword, call, key).visit(tree)
    ast.fix_missing_locations(tree)
    return Site(path, text, tree, keyword, call, key, default=default is not None)


class _SiteLoader(importlib.abc.Loader):
    """Runs the site's marked tree as the module; a second name gets the same module object."""

    def __init__(self, site):
        self.site = site

    def create_module(self, spec):
        return self.site.module  # None the first time: a new module

    def exec_module(self, module):
        site = self.site
        if site.module is not None:  # imported again under another name: the import set __spec__
            module.__spec__ = site.spec
            return
        site.module, site.spec = module, module.__spec__
        module.__dict__[MARK] = site.mark
        module.__dict__[CAPTURE] = site.capture
        module.__dict__[PARTIAL] = functools.partial
        module.__dict__[KEY] = site.capture_key
        site.loading = True
        try:
            # dont_inherit: the file's own `from __future__` imports, not this module's
            exec(compile(site.tree, site.path, "exec", dont_inherit=True), module.__dict__)
        except BaseException:
            site.module = None
            raise
        finally:
            site.loading = False


class SiteFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: an import that would find the site's file gets the marked module."""

    _jax_lsp_own_finder = True  # `overlay.spec_without_own` skips it

    def __init__(self, site):
        self.site = site
        base = os.path.basename(site.path)
        self.stem = (
            os.path.basename(os.path.dirname(site.path))
            if base == "__init__.py"
            else os.path.splitext(base)[0]
        )

    def find_spec(self, fullname, path=None, target=None):
        if fullname.rpartition(".")[2] != self.stem:
            return None
        spec = spec_without_own(fullname, path, target)
        if spec is None or not spec.origin or os.path.realpath(spec.origin) != self.site.path:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            self.site.path,
            loader=_SiteLoader(self.site),
            submodule_search_locations=spec.submodule_search_locations,
        )


def _imported_files(stem):
    """(name, file) of each imported module whose name ends in ``stem``: only these modules are
    read (reading every module in a forked child copies their memory pages)."""
    for name in [n for n in sys.modules if n.rpartition(".")[2] == stem]:
        file = getattr(sys.modules[name], "__dict__", {}).get("__file__")  # no module __getattr__ runs
        if isinstance(file, str):
            yield name, os.path.realpath(file)


def install_site(site):
    """From now on every import of the site's file gets the marked module: copies already
    imported (a warm agent's) are dropped from ``sys.modules`` and the finder goes first."""
    finder = SiteFinder(site)
    for name, file in list(_imported_files(finder.stem)):
        if file == site.path:
            del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, SiteFinder)]
    sys.meta_path.insert(0, finder)


def _is_copy(file, site):
    """Whether ``file`` is a copy of the site's file: the same text, or the same name in a folder
    of the same name (an installed ``pkg/_src/scan.py``; not ``pkg/nn/scan.py``)."""
    if os.path.basename(os.path.dirname(file)) == os.path.basename(os.path.dirname(site.path)):
        return True
    try:
        with open(file, encoding="utf-8") as handle:
            return handle.read() == site.text
    except (OSError, UnicodeDecodeError):
        return False


def namesakes(site):
    """(name, file) of each imported module that is a copy of the site's file from another file
    (an installed or vendored copy of it): an example that calls those never reaches the site."""
    return [
        (name, file)
        for name, file in _imported_files(SiteFinder(site).stem)
        if file != site.path and _is_copy(file, site)
    ]


def import_file(path, name, site, files, root):
    """The module of the file at ``path`` imported by ``name`` as Python imports it (its parent
    packages first); where ``name`` finds another file or none (a notebook), the file run under
    that name. A statement that raises while it runs is an ``import_error`` at the line that
    raised."""
    try:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == path:
            return importlib.import_module(name)
        import_parent(name)  # as the trace does (`import_path`): a circular import finds it whole
        if path == site.path:
            spec = importlib.util.spec_from_file_location(name, path, loader=_SiteLoader(site))
        else:
            spec = importlib.util.spec_from_file_location(name, path, loader=overlay_loader(path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except (AgentError, MemoryError):
        raise
    except (Exception, SystemExit) as exc:
        anchor, raised = error_site(exc, files, root)
        at = f" (raised at {raised[0]}:{raised[1]})" if raised else ""
        where = anchor or (path, None)
        line = f":{where[1]}" if where[1] else ""
        raise AgentError(
            "import_error",
            f"Importing {name} failed: {os.path.basename(where[0])}{line}: {short_error(exc)}{at}",
            *where,
            error_type=type(exc).__name__,
        ) from None


def example_path(spec, bases):
    """The file an example spec names (without running anything), its function's name, and the
    module name a ``MODULE:FUNCTION`` spec gives (None for a path). A path or module is looked
    for in each of ``bases`` in turn (the folder the user runs from, the project root, the site's
    folder)."""
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise AgentError(
            "example_error",
            f"Cannot read the example {spec!r}: write MODULE:FUNCTION or path/to/file.py:FUNCTION",
        )
    bases = [base for base in bases if base and os.path.isdir(base)]
    if target.endswith((".py", ".ipynb")) or "/" in target or os.sep in target:
        for base in bases:
            candidate = os.path.realpath(os.path.join(base, target))
            if os.path.isfile(candidate):
                return candidate, function, None
        raise AgentError(
            "example_error", f"The example file {target} does not exist in {_listed(bases)}", None, None
        )
    relative = target.replace(".", os.sep)
    for base in bases:  # the project's own modules, not installed ones
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            full = os.path.join(base, candidate)
            if os.path.isfile(full):
                return os.path.realpath(full), function, target
    raise AgentError("example_error", f"The example module {target} was not found in {_listed(bases)}")


def _listed(folders):
    return " or ".join(dict.fromkeys(folders)) or "the project"


def example_function(module, function, path):
    """The example function ``function`` defined at the top level of ``module``."""
    value = module.__dict__.get(function)
    if not callable(value):
        raise AgentError(
            "example_error",
            f"{os.path.basename(path)} defines no function {function!r} at the top level",
            path,
            None,
        )
    return value

"""Files of the user's project imported from a text the request gives, not from the disk.

A policy the advisor writes (`--write-policy`) tags values with ``checkpoint_name`` in the
user's files. Before the edit is offered, its candidates are traced and compiled with the files
as the edit would leave them: the request's ``overlay`` maps each file's real path to that text,
and every import of such a file, whatever name it is imported by, runs the text instead (the
site's own file takes it through the site's ``source``, `site.parse_site`).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
import os
import sys

# Set on the advisor's own finders: a finder asking what the import would find without it skips
# them all (each asks the others otherwise, without end).
OWN_FINDER = "_jax_lsp_own_finder"


class OverlayLoader(importlib.abc.Loader):
    """Runs a file's given text as its module."""

    def __init__(self, path, text):
        self.path = path
        self.text = text

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # dont_inherit: the text's own `from __future__` imports, not this module's (annotations
        # evaluated as the file writes them: a NamedTuple's field types are types, not strings)
        exec(compile(self.text, self.path, "exec", dont_inherit=True), module.__dict__)

    def get_source(self, fullname):  # what `inspect.getsource` asks a module's loader
        return self.text


class OverlayFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: an import that would find an overlaid file runs its text."""

    _jax_lsp_own_finder = True

    def __init__(self, texts):
        self.texts = texts  # real path -> text
        self.stems = {_stem(path) for path in texts}

    def find_spec(self, fullname, path=None, target=None):
        if fullname.rpartition(".")[2] not in self.stems:
            return None
        spec = spec_without_own(fullname, path, target)
        origin = os.path.realpath(spec.origin) if spec is not None and spec.origin else None
        if origin not in self.texts:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=OverlayLoader(origin, self.texts[origin]),
            submodule_search_locations=spec.submodule_search_locations,
        )


def spec_without_own(fullname, path, target):
    """What the import would find without the advisor's finders (the path finder, an editable
    install's)."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if getattr(finder, OWN_FINDER, False) or find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _stem(path):
    base = os.path.basename(path)
    return os.path.basename(os.path.dirname(path)) if base == "__init__.py" else os.path.splitext(base)[0]


def install_overlay(texts):
    """From now on every import of a file of ``texts`` (path -> text) runs its text; copies already
    imported are dropped from ``sys.modules``. Returns the texts by real path."""
    texts = {os.path.realpath(path): text for path, text in (texts or {}).items()}
    if not texts:
        return texts
    stems = {_stem(path) for path in texts}
    for name in [n for n in sys.modules if n.rpartition(".")[2] in stems]:
        file = getattr(sys.modules[name], "__dict__", {}).get("__file__")  # no module __getattr__ runs
        if isinstance(file, str) and os.path.realpath(file) in texts:
            del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, OverlayFinder)]
    sys.meta_path.insert(0, OverlayFinder(texts))
    for path, text in texts.items():
        # code that reads its own source (inspect, tracebacks, jaxtyping's checks) reads the text
        # that runs: an entry without a modification time is never checked against the disk
        linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    return texts


def overlay_loader(path):
    """The loader of ``path`` where the installed overlay gives its text, else None."""
    for finder in sys.meta_path:
        if isinstance(finder, OverlayFinder) and path in finder.texts:
            return OverlayLoader(path, finder.texts[path])
    return None

"""One import path for the trace and the advisor: the folders put on ``sys.path``, the dotted name
a file is imported by, and its package imported before it, as a plain ``import`` would.

Runs inside the trace agent (the user's interpreter): standard library only here.
"""

from __future__ import annotations

import importlib
import os
import sys

PLACEHOLDER = "__jax_lsp_module__"  # the name of a file no folder on the path imports


def add_import_folders(cwd, root, import_root, *files):
    """Put first on ``sys.path``, in this order (one already there stays where it is): the folder
    the user runs from (``cwd``, the CLI's), the project root, the folder above the site's
    outermost package (``import_root``), then the folder of each of ``files`` (the site's, the
    example's)."""
    folders = [cwd, root, import_root, *(os.path.dirname(f) for f in files if f)]
    for folder in reversed(folders):
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)


def _package_root(path):
    folder = os.path.dirname(path)
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def module_name(path, cwd, root, import_root):
    """The dotted name ``path`` is imported by: a package's module from ``import_root`` or the
    folder above its outermost package, any other file from the first of ``cwd``, ``root``,
    ``import_root`` that holds it (``examples/run.py`` from the repository is ``examples.run``),
    else its own stem; `PLACEHOLDER` where no such name is made of identifiers."""
    in_package = os.path.isfile(os.path.join(os.path.dirname(path), "__init__.py"))
    folders = [import_root, _package_root(path)] if in_package else [cwd, root, import_root]
    for folder in [f for f in folders if f] + [os.path.dirname(path)]:
        relative = os.path.relpath(path, folder)
        if relative.startswith(os.pardir):
            continue
        parts = os.path.splitext(relative)[0].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            return ".".join(parts)
    return PLACEHOLDER


def import_parent(name):
    """Import the package of the module ``name`` first, as an import of ``name`` would: a package
    whose ``__init__`` imports the module back then finds it whole, not half run (a circular
    import). Where the package fails, the module's own statements say what fails."""
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        try:
            importlib.import_module(parent)
        except Exception:
            pass

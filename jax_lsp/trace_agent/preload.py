"""In the agent: import the installed packages a child used, so that the next child forks with
them loaded."""

from __future__ import annotations

import os
import sys

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

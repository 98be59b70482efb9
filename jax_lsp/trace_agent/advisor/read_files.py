"""The files an ``advise`` answer read: the host keeps the answer while they are unchanged
(`jax_lsp/trace/advisor/answer_cache.py`)."""

import os
import sys
import sysconfig

_AGENT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def read_files(*given):
    """The site's and the example's files (``given``) and the file of every module imported in
    this process that is neither installed (site-packages), of the standard library, nor the
    agent's own: the project's modules, wherever the example found them."""
    standard = {
        os.path.realpath(p) for k, p in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib")
    }
    found = {os.path.realpath(f) for f in given if f}
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if not filename or getattr(module, "__spec__", None) is None:
            continue
        if "site-packages" in filename or "dist-packages" in filename:
            continue
        real = os.path.realpath(filename)
        if real.startswith(_AGENT + os.sep) or any(real.startswith(s + os.sep) for s in standard):
            continue
        if os.path.isfile(real):
            found.add(real)
    return sorted(found)

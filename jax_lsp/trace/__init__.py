"""Confirm a remat policy by running it under real JAX, in a subprocess agent in the user's interpreter."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.trace.result import TraceResult
    from jax_lsp.trace.service import TraceJob, TraceService

__all__ = ["TraceJob", "TraceResult", "TraceService"]
# Imported when first asked for: `jax-lsp check` imports trace.options alone (startup time).
_HOMES = {"TraceJob": "service", "TraceResult": "result", "TraceService": "service"}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)

"""Confirm a remat policy by running it under real JAX, in a subprocess agent in the user's interpreter."""

from jax_lsp.trace.result import TraceResult
from jax_lsp.trace.service import TraceJob, TraceService

__all__ = ["TraceJob", "TraceResult", "TraceService"]

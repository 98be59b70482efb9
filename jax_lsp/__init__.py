"""jax-lsp: catch broken JAX rematerialization policies in the editor."""

__version__ = "0.1.0"

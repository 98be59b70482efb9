"""The advisor (``jax-lsp advise``), agent side: what each remat policy saves and recomputes at one site."""

"""The language server's LSP features, one module per feature: what the user sees (hovers,
completions, definitions and references, code actions, the trace's and the advisor's code
lenses, inlay hints and commands). Each has a `register(server)`; they use the plumbing of
`jax_lsp.server` (documents, places, the checker, the diagnostics, the feature registry), which
never imports them."""

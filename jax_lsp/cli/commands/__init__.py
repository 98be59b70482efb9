"""Subcommands of the `jax-lsp` command line."""

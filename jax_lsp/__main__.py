from jax_lsp.cli import run

run()

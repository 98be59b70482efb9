"""The trace agent: runs in the user's interpreter, imports their module and traces a policy under JAX.

`agent.py` is started as a script (never imported by the host) and imports this folder as the
package `_jax_lsp_agent`, a name no project uses, so that its modules import one another
relatively. They use only the standard library and JAX: nothing of jax_lsp, so that the user's
interpreter needs no jax-lsp installed (a test checks the imports).
"""

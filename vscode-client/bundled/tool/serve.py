"""Run the jax-lsp server bundled with the VS Code extension (`importStrategy: useBundled`).

Same as `python -m jax_lsp serve`, with the bundled server and its dependencies first on
sys.path. Nothing is added to the environment, so the processes the server starts (the trace
agent in the user's interpreter) see the user's packages, not ours.
"""

import os
import runpy
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libs"))
sys.argv = ["jax-lsp", "serve", *sys.argv[1:]]
runpy.run_module("jax_lsp", run_name="__main__", alter_sys=True)

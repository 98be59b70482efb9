"""Prove rules' examples under the JAX of another interpreter: ``python example_runner.py``.

Standard library and jax only (it runs in a venv holding just a JAX release). Reads JSON lines
``{"code", "check"}`` and answers each with ``{"error", "check"}``: the example module is executed
and its ``f`` differentiated with ``jax.grad`` at ``ones((4, 4))`` (tests/rules/test_examples.py);
``error`` is what that raised (``Type: message``), ``check`` what the rule's ``misbehaves`` check
raised when given the module's globals ("ok" when it passed; None when there is none to run).
A check travels as its source, with the modules its rule module had bound (``io``, ``contextlib``).
"""

import importlib
import json
import sys

# Flags an example may turn on for itself (JAX115: `jax.config.update("jax_remat3", True)`): each
# example runs, and is judged, with them; the next one starts from JAX's own.
EXAMPLE_FLAGS = ("jax_remat3",)


def _error(exc):
    return f"{type(exc).__name__}: {exc}"


def run_example(code):
    import jax
    import jax.numpy as jnp

    namespace = {"__name__": "example"}
    exec(compile(code, "example.py", "exec"), namespace)
    jax.grad(lambda x: jnp.sum(namespace["f"](x)))(jnp.ones((4, 4)))
    return namespace


def load_check(check):
    scope = {alias: importlib.import_module(name) for alias, name in check["modules"].items()}
    exec(compile("from __future__ import annotations\n" + check["source"], "<check>", "exec"), scope)
    return scope[check["name"]]


def prove(request, check=None):
    """The answer to ``request``; ``check`` is the check itself when run in the tests' process."""
    import jax

    flags = {name: getattr(jax.config, name) for name in EXAMPLE_FLAGS if hasattr(jax.config, name)}
    try:
        return _prove(request, check)
    finally:
        for name, value in flags.items():
            jax.config.update(name, value)


def _prove(request, check):
    try:
        namespace = run_example(request["code"])
    except Exception as exc:
        return {"error": _error(exc), "check": None}
    if check is None and request.get("check"):
        check = load_check(request["check"])
    if check is None:
        return {"error": None, "check": None}
    try:
        check(namespace)
    except Exception as exc:
        return {"error": None, "check": _error(exc)}
    return {"error": None, "check": "ok"}


def main():
    out = sys.stdout
    sys.stdout = sys.stderr  # prints of examples and checks never reach the answers
    for line in sys.stdin:
        out.write(json.dumps(prove(json.loads(line))) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

"""Each child imports the user's modules as a fresh interpreter would: a module's import-time
code (a registry filled at import that refuses duplicates, a gin-style `configurable`, a JAX
config option or an absl flag defined at import) runs once per process, however many requests
the agent served before (issue 47, `preload.py`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jax_lsp.trace import TraceService
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

# simply's pattern (google-deepmind/simply, `utils/registry.py` and `model_lib.py`): a registry
# class whose dict refuses a name twice, filled by a decorator as the model module is imported;
# the config module imports the model module, and the example imports both.
REGISTRY = {
    "registry.py": """
        import sys
        from typing import Any, ClassVar


        class RootRegistry:
            registry: ClassVar[dict[str, Any]] = {}
            namespace: ClassVar[str] = ""

            @classmethod
            def register(cls, fn_or_cls, name=""):
                name = name or getattr(fn_or_cls, "__name__")
                fullname = f"{cls.namespace}:{name}" if cls.namespace else name
                if fullname in cls.registry and "google.colab" not in sys.modules:
                    raise ValueError(f"Duplicate name: {fullname}")
                cls.registry[fullname] = fn_or_cls
                return fn_or_cls


        class FunctionRegistry(RootRegistry):
            namespace: ClassVar[str] = "Function"
    """,
    "model_lib.py": """
        import jax
        import jax.numpy as jnp

        import registry


        @registry.FunctionRegistry.register
        def gelu(x):
            return 0.5 * x * (1.0 + jnp.tanh(x))


        registry.FunctionRegistry.register(jax.nn.silu, "silu")


        def block(x, w):
            activation = registry.FunctionRegistry.registry["Function:gelu"]
            return jnp.sum(activation(activation(x @ w) @ w))


        apply = jax.remat(
            block,
            policy=getattr(jax.checkpoint_policies, "dots_saveable", None),
        )
    """,
    "config_lib.py": """
        import model_lib

        ACTIVATION = "gelu"
    """,
    "example.py": """
        import jax
        import jax.numpy as jnp

        import config_lib
        import model_lib


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": model_lib.apply, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}

# gin's pattern: an installed package whose `configurable` decorator registers each function by
# name and refuses a name twice ("A configurable matching 'dense' already exists").
GIN_LIKE = {
    "site-packages/ginlike/__init__.py": """
        _REGISTRY = {}


        def configurable(fn):
            if fn.__name__ in _REGISTRY:
                raise ValueError(f"A configurable matching {fn.__name__!r} already exists.")
            _REGISTRY[fn.__name__] = fn
            return fn
    """,
    "project/layers.py": """
        import ginlike
        import jax
        import jax.numpy as jnp


        @ginlike.configurable
        def dense(x, w):
            return jnp.tanh(x @ w)


        block = jax.checkpoint(lambda x, w: jnp.sum(dense(dense(x, w), w)), policy=jax.checkpoint_policies.dots_saveable)
    """,
    "project/config.py": """
        import layers
    """,
    "project/example.py": """
        import jax
        import jax.numpy as jnp

        import config
        import layers


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": layers.block, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}

# Options defined as the module is imported: a JAX config option (JAX refuses a second
# definition: "Config option ... already defined") and an absl flag (DuplicateFlagError).
OPTIONS = {
    "model.py": """
        import jax
        import jax.numpy as jnp
        from absl import flags
        from jax._src import config as jax_config

        FUSED = jax_config.bool_state("my_model_fused_mlp", False, help="the model's own option")
        LAYERS = flags.DEFINE_integer("my_model_layers", 2, "how many layers")


        def mlp(x, w):
            return jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))


        apply = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)
    """,
    "train.py": """
        import model
    """,
    "example.py": """
        import jax
        import jax.numpy as jnp

        import model
        import train


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": model.apply, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}


def _written(root: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return root


def _settled(service: TraceService) -> None:
    """Wait until the agent has imported what the last child used: it answers ``info`` after."""
    service.agent().request("info", TraceOptions().to_params())[1].result()


@pytest.fixture
def fresh_service():
    """An agent of its own: what it preloaded is this test's."""
    service = AgentTraceService()
    yield service
    service.shutdown()


def _compiled_everywhere(advice) -> None:
    assert advice.ok, advice.message
    failed = {p.policy: p.compile_error for p in advice.policies if p.compile_error}
    assert not failed
    assert all(p.was_compiled for p in advice.policies if p.error is None)


@pytest.mark.parametrize(
    ("files", "site", "example", "root"),
    [
        (REGISTRY, "model_lib.py", "example.py:example", "."),
        (OPTIONS, "model.py", "example.py:example", "."),
    ],
    ids=["registry", "options"],
)
def test_every_candidate_compiles_where_the_site_registers_at_import(
    tmp_path, fresh_service, files, site, example, root
):
    """`advise --compile` compiles each candidate in a child of its own, forked from the agent that
    preloaded the modules the first child imported: the config module (and so the site's module,
    which it imports) must not be run twice in one process."""
    folder = _written(tmp_path, files) / root
    path = folder / site
    advice = advise(
        fresh_service, path, line_of(path), example=example, root=folder, compile=True, options=TraceOptions()
    )
    _compiled_everywhere(advice)
    again = advise(fresh_service, path, line_of(path), example=example, root=folder)
    assert again.ok, again.message


def test_a_gin_style_registry_of_an_installed_package(tmp_path, monkeypatch):
    """The registry lives in an installed package the agent keeps for good: the project's module
    that registers into it is run once per child."""
    _written(tmp_path, GIN_LIKE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site-packages"))
    service = AgentTraceService()  # started with that PYTHONPATH
    try:
        root = tmp_path / "project"
        path = root / "layers.py"
        advice = advise(service, path, line_of(path), example="example.py:example", root=root, compile=True)
        _compiled_everywhere(advice)
    finally:
        service.shutdown()


def test_the_editors_agent_answers_every_advise_of_the_site(tmp_path, fresh_service):
    """The editor's agent lives on: once one advise has compiled, later ones of that site (the
    estimate, then each candidate compiled, in the same agent) still import the site's module
    once in each process."""
    root = _written(tmp_path, REGISTRY)
    path = root / "model_lib.py"
    for _ in range(3):
        advice = advise(
            fresh_service, path, line_of(path), example="example.py:example", root=root, compile=True
        )
        _compiled_everywhere(advice)
        _settled(fresh_service)


# Another site of the same project, whose example imports the config module (and so the model
# module, which fills the registry): the agent preloads both for its children.
ANOTHER_SITE = {
    "ops.py": """
        import jax
        import jax.numpy as jnp


        def mlp(x, w):
            return jnp.sum(jnp.sin(x @ w))


        apply = jax.checkpoint(mlp, policy=jax.checkpoint_policies.nothing_saveable)
    """,
    "ops_example.py": """
        import jax
        import jax.numpy as jnp

        import config_lib
        import ops


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": ops.apply, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}
# The model's example imports the model module first (its child stops at once: the agent holds
# the site's file), or imports the config module first, in a `try` with a bare `except` as some
# projects import optional modules (its child stops there, the user's code catching the stop).
EXAMPLES = {
    "site_first": """
        import jax
        import jax.numpy as jnp

        import model_lib
        import config_lib


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": model_lib.apply, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
    "caught": """
        import jax
        import jax.numpy as jnp

        try:
            import config_lib
        except:  # noqa: E722
            config_lib = None
        import model_lib


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": model_lib.apply, "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_a_site_whose_module_the_agent_ran_for_another_site(tmp_path, fresh_service, example):
    """The agent ran `model_lib.py` (its registry is filled) when it preloaded for `ops.py`'s
    children: the child of model_lib's site stops before it runs the module again, even inside
    the user's bare `except`, and a fresh agent answers the request."""
    root = _written(tmp_path, {**REGISTRY, **ANOTHER_SITE, "example.py": EXAMPLES[example]})
    ops = root / "ops.py"
    first = advise(fresh_service, ops, line_of(ops), example="ops_example.py:example", root=root)
    assert first.ok, first.message
    _settled(fresh_service)
    path = root / "model_lib.py"
    advice = advise(fresh_service, path, line_of(path), example="example.py:example", root=root, compile=True)
    _compiled_everywhere(advice)
    assert fresh_service.agent().stderr_tail().count("restarting the trace agent") == 1

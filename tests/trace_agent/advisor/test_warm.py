"""Warm re-runs: the agent keeps the project's modules a child imported, and a later child uses
them only where a cold import would load the same, unchanged module (``preload.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jax_lsp.trace import TraceService
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace_agent import preload
from tests.agent import line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

pytest.importorskip("jax")

# A package whose __init__ imports the module holding the site (`block.py`), as model packages
# do (`from .block import Block`); `counted.py` logs each time its body runs.
PROJECT = {
    "model/__init__.py": """
        from . import counted
        from .block import apply_block
    """,
    "model/counted.py": """
        import os

        with open(os.path.join(os.path.dirname(__file__), os.pardir, "imports.log"), "a") as log:
            log.write("counted\\n")
        WIDTH = 8
    """,
    "model/block.py": """
        import jax
        import jax.numpy as jnp


        def layer(x, w):
            return jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))


        apply_block = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
    """,
    "model/other.py": """
        import jax
        import jax.numpy as jnp

        from .counted import WIDTH


        def mlp(x, w):
            return jnp.sum(jnp.sin(x @ w) * WIDTH)


        apply_other = jax.checkpoint(mlp, policy=jax.checkpoint_policies.nothing_saveable)
    """,
    "example.py": """
        import jax
        import jax.numpy as jnp

        import model
        from model.counted import WIDTH


        def _args():
            x = jax.ShapeDtypeStruct((4, WIDTH), jnp.float32)
            return x, jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32)


        def block():
            return {"fn": model.apply_block, "args": _args()}


        def other():
            from model.other import apply_other

            return {"fn": apply_other, "args": _args()}
    """,
}


def _project(folder: Path) -> Path:
    for name, code in PROJECT.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return folder


def _advise(service, root: Path, site: str, example: str):
    path = root / "model" / site
    advice = advise(service, path, line_of(path), example=f"example.py:{example}", root=root)
    assert advice.ok, advice.message
    return advice


def _settled(service) -> None:
    """Wait until the agent has imported what the last child used: it answers ``info`` after."""
    service.agent().request("info", TraceOptions().to_params())[1].result()


def _imports(root: Path) -> int:
    return (root / "imports.log").read_text().count("counted")


@pytest.fixture
def fresh():
    """A new agent of its own, for each use: the cold side of a comparison."""
    services = []

    def start():
        services.append(TraceService())
        return services[-1]

    yield start
    for service in services:
        service.shutdown()


def test_a_site_whose_module_the_agent_ran_is_advised_by_a_fresh_agent(tmp_path, fresh):
    """The agent imported `model` for the children of another site, and so ran `block.py`: a
    child of block.py's site would run that module's code a second time in its process (a
    registry filled at import would refuse it). It asks for a fresh agent, which answers, and
    which then preloads nothing of `model` (its `__init__` imports the site)."""
    root = _project(tmp_path / "project")
    warm = fresh()
    _advise(warm, root, "other.py", "other")  # the agent then imports `model`, so block.py too
    _settled(warm)
    assert _imports(root) == 2  # the child's import, then the agent's
    advice = _advise(warm, root, "block.py", "block")
    assert "must run again in a fresh process" in warm.agent().stderr_tail()
    assert _imports(root) == 3  # the fresh agent's child
    assert advice.policies == _advise(fresh(), root, "block.py", "block").policies
    _settled(warm)
    assert _imports(root) == 4  # a cold agent's child; the fresh agent preloaded none of `model`
    assert _advise(warm, root, "block.py", "block").policies == advice.policies
    assert _imports(root) == 5 and warm.agent().stderr_tail().count("restarting") == 1


def test_an_edited_module_is_imported_afresh(tmp_path, fresh):
    root = _project(tmp_path / "project")
    service = fresh()
    before = _advise(service, root, "other.py", "other")
    _settled(service)
    counted = root / "model" / "counted.py"
    counted.write_text(counted.read_text().replace("WIDTH = 8", "WIDTH = 6"))  # the same size
    after = _advise(service, root, "other.py", "other")
    assert before.policies != after.policies
    assert [r.shape for p in after.policies for r in p.residuals if r.kind == "argument"][0] == (4, 6)
    _settled(service)
    # the agent restarted: its child and then the new agent imported the edited module
    assert _imports(root) == 4
    assert after.policies == _advise(fresh(), root, "other.py", "other").policies


def test_editing_the_advised_site_keeps_the_agent_warm(tmp_path, fresh):
    """The agent never imports the site's module: a quick fix at the site followed by the advise
    again needs no new agent."""
    root = _project(tmp_path / "project")
    service = fresh()
    _advise(service, root, "other.py", "other")
    _settled(service)
    assert _imports(root) == 2
    other = root / "model" / "other.py"
    other.write_text(other.read_text().replace("nothing_saveable", "dots_saveable"))
    advice = _advise(service, root, "other.py", "other")
    assert advice.current is not None and advice.current.policy.endswith("dots_saveable")
    assert _imports(root) == 2  # `counted` from the agent
    assert "restarting" not in service.agent().stderr_tail()


def test_a_package_that_imports_the_site_is_not_preloaded(tmp_path, fresh):
    """`model/__init__.py` imports the site's `block.py`: the agent cannot import any module of
    the package without running the site's module, so it preloads none, and each child imports
    them once, as a cold interpreter does."""
    root = _project(tmp_path / "project")
    service = fresh()
    first = _advise(service, root, "block.py", "block")
    _settled(service)
    assert _imports(root) == 1
    assert _advise(service, root, "block.py", "block").policies == first.policies
    assert _imports(root) == 2
    assert "restarting" not in service.agent().stderr_tail()


def test_a_module_of_another_project_under_the_same_name_is_not_reused(tmp_path, fresh):
    service = fresh()
    first, second = _project(tmp_path / "first"), _project(tmp_path / "second")
    counted = second / "model" / "counted.py"
    counted.write_text(counted.read_text().replace("WIDTH = 8", "WIDTH = 16"))
    _advise(service, first, "other.py", "other")
    advice = _advise(service, second, "other.py", "other")
    assert _imports(second) == 1  # its own, not the first project's preloaded one
    assert advice.policies == _advise(fresh(), second, "other.py", "other").policies


def test_a_trace_after_a_warm_advise_equals_a_cold_one(tmp_path, fresh):
    root = _project(tmp_path / "project")
    path = root / "model" / "other.py"  # it imports `counted`, which the agent then holds
    service = fresh()
    _advise(service, root, "other.py", "other")
    warm = service.trace(path, line_of(path), root=root)
    cold = fresh().trace(path, line_of(path), root=root)
    assert warm.ok, warm.message
    assert (warm.policy, warm.decisions, warm.residuals) == (cold.policy, cold.decisions, cold.residuals)


WIDE = """
import jax
import jax.numpy as jnp

from model.block import apply_block
from model.extra import WIDTH


def example():
    x = jax.ShapeDtypeStruct((4, WIDTH), jnp.float32)
    return {"fn": apply_block, "args": (x, jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32))}
"""


def test_a_module_of_another_project_that_the_agent_meets_is_not_kept(tmp_path, fresh):
    """The agent holds the first project's `model`: importing the second's `model.extra` there
    loads the first's file of that name, which no child of the second may get."""
    service = fresh()
    first, second = _project(tmp_path / "first"), _project(tmp_path / "second")
    (first / "model" / "extra.py").write_text("WIDTH = 8\n")
    (second / "model" / "extra.py").write_text("WIDTH = 16\n")
    (second / "wide.py").write_text(WIDE)
    _advise(service, first, "other.py", "other")
    _settled(service)
    site = second / "model" / "block.py"
    for _ in range(2):
        advice = advise(service, site, line_of(site), example="wide.py:example", root=second)
        _settled(service)
        assert advice.ok, advice.message
        assert [r.shape for p in advice.policies for r in p.residuals if r.kind == "argument"][0] == (4, 16)


REGISTRY = {
    "layers/__init__.py": """
        import importlib

        BLOCKS = {name: importlib.import_module(f"{__name__}.{name}").apply for name in ["block"]}
    """,
    "layers/block.py": """
        import jax
        import jax.numpy as jnp


        def layer(x, w):
            return jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))


        apply = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
    """,
    "example.py": """
        import jax
        import jax.numpy as jnp

        import layers


        def example():
            x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
            return {"fn": layers.BLOCKS["block"], "args": (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}
    """,
}


def test_a_registry_that_imports_the_site_by_name_is_loaded_afresh(tmp_path, fresh):
    """A registry filled at import by `importlib.import_module`, as model zoos do: no import
    statement names the site's module, yet importing the registry runs it."""
    for name, code in REGISTRY.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    site = tmp_path / "layers" / "block.py"
    service = fresh()
    first = advise(service, site, line_of(site), example="example.py:example", root=tmp_path)
    for _ in range(2):
        _settled(service)
        again = advise(service, site, line_of(site), example="example.py:example", root=tmp_path)
        assert first.ok and again.ok, again.message
        assert again.policies == first.policies
    # preloading `layers` ran the site's module: the agent was replaced once, and the fresh one
    # never preloads `layers` again
    assert service.agent().stderr_tail().count("restarting the trace agent") == 1


@pytest.mark.parametrize(
    ("name", "code", "package", "expected"),
    [
        ("pkg.mod", "import a.b.c", False, {"a", "a.b", "a.b.c"}),
        ("pkg.mod", "from .block import Block", False, {"pkg", "pkg.block", "pkg.block.Block"}),
        ("pkg", "from . import counted", True, {"pkg", "pkg.counted"}),
        ("pkg.sub.mod", "from ..util import *", False, {"pkg", "pkg.util"}),
    ],
)
def test_the_modules_an_import_statement_names(tmp_path, name, code, package, expected):
    path = tmp_path / "module.py"
    path.write_text(code)
    assert preload._imports_of(str(path), name, package) == expected


def _written(root: Path, files: dict[str, str]) -> Path:
    """``root`` holding ``files`` (path -> text)."""
    for name, code in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code, encoding="utf-8")
    return root


def test_a_namespace_package_inside_a_package_is_reused_or_imported_afresh(tmp_path, fresh):
    """`lib/sub/ns/` has no `__init__.py`: its path reads `lib.sub` from `sys.modules`, which a
    later child has not imported yet when it decides what to reuse (a KeyError there failed every
    warm advise of haliax, whose `aqt.jax.v2` is such a package)."""
    files = {
        "lib/__init__.py": "",
        "lib/sub/__init__.py": "",
        "lib/sub/ns/helper.py": "SCALE = 2.0\n",
        "model/__init__.py": "from lib.sub.ns import helper\n\nfrom .block import apply_block\n",
        "model/block.py": textwrap.dedent(PROJECT["model/block.py"]).replace("jnp.sum(", "jnp.sum(2.0 * "),
        "example.py": "import jax\nimport jax.numpy as jnp\n\nimport model\n\n\ndef block():\n"
        "    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)\n"
        "    return {'fn': model.apply_block, 'args': (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}\n",
    }
    root = _written(tmp_path / "project", files)
    service = fresh()
    first = _advise(service, root, "block.py", "block")
    _settled(service)
    assert _advise(service, root, "block.py", "block").policies == first.policies


def test_a_package_stubbed_by_the_example_whose_own_import_fails_in_the_agent(tmp_path, fresh):
    """The example puts `model` in `sys.modules` (its `__init__` needs a package not installed, as
    tunix's does) and imports `model.layers.helper` (`layers/` has no `__init__.py`). The agent,
    preloading that module, runs `model/__init__`, which imports `model.layers` and fails: the
    namespace package stays behind without its parent, and reading its path raised KeyError,
    which killed the agent and every compile in flight."""
    files = {
        "model/__init__.py": "from model.layers import block\nimport a_package_nobody_installed\n",
        "model/layers/block.py": textwrap.dedent(PROJECT["model/block.py"]),
        "model/layers/helper.py": "WIDTH = 8\n",
        "example.py": "import sys, types\nfrom pathlib import Path\n\nimport jax\nimport jax.numpy as jnp\n\n"
        "sys.modules['model'] = types.ModuleType('model')\n"
        "sys.modules['model'].__path__ = [str(Path(__file__).parent / 'model')]\n\n"
        "from model.layers.block import apply_block\nfrom model.layers.helper import WIDTH\n\n\n"
        "def block():\n"
        "    x = jax.ShapeDtypeStruct((4, WIDTH), jnp.float32)\n"
        "    return {'fn': apply_block, 'args': (x, jax.ShapeDtypeStruct((8, 8), jnp.float32))}\n",
    }
    root = _written(tmp_path / "project", files)
    service = fresh()
    first = _advise(service, root, "layers/block.py", "block")
    agent = service.agent()
    _settled(service)
    assert service.agent() is agent  # the agent that preloaded is still the one serving
    assert _advise(service, root, "layers/block.py", "block").policies == first.policies

"""`trace` and `advise` import the user's module one way (`trace_agent/import_path.py`): the same
folders on `sys.path`, the same dotted name, its package first; and where an import fails, both
name the module that is missing."""

from pathlib import Path

import pytest

from jax_lsp.trace.advisor.request import advise
from tests.agent import line_of

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

SITE = """
import jax
import jax.numpy as jnp
{imports}

def policy(prim, *args, **params):
    return prim.name in SAVED


def block(x):
    return jnp.sin(x @ x)


step = jax.checkpoint(block, policy=policy)


def example():
    return (jnp.ones((4, 4)),)
"""


def _both(service, path: str, root: Path, import_root: Path):
    """The trace of the site's policy and the advice of its site, as the CLI asks for them."""
    traced = service.trace(path, line_of(path, "def policy"), root=root, import_root=import_root)
    advice = advise(
        service,
        path,
        line_of(path, "step = jax.checkpoint"),
        example=f"{path}:example",
        root=root,
        import_root=import_root,
        cwd=root,
    )
    return traced, advice


def test_a_script_outside_any_package_has_one_name_for_both(service, write, tmp_path):
    """`scripts/train.py` is `scripts.train` from the project root for both (the trace named it
    `train` from its own folder, so its relative import had no parent package)."""
    write("scripts/saved.py", "SAVED = ('sin',)\n")
    path = write("scripts/train.py", SITE.format(imports="from .saved import SAVED"))
    traced, advice = _both(service, path, tmp_path, tmp_path / "scripts")
    assert traced.ok, traced.message
    assert {d.primitive for d in traced.decisions if d.decision == "saved"} == {"sin"}
    assert advice.ok, advice.message


def test_a_missing_third_party_module_is_named_by_both(service, write, tmp_path):
    """rbpf's case: the repository's package imports (plain Python finds it at the root), then
    fails on a third-party package that is not installed: both name that package, not rbpf."""
    write("rbpf/__init__.py", "from rbpf import utils\n")
    write("rbpf/utils.py", "import missing_thirdparty_pkg\nSAVED = ('sin',)\n")
    path = write("rbpf/model.py", SITE.format(imports="from rbpf.utils import SAVED"))
    traced, advice = _both(service, path, tmp_path, tmp_path)
    for status, message in ((traced.status.value, traced.message), (advice.status, advice.message)):
        assert status == "import_error", message
        assert "No module named 'missing_thirdparty_pkg'" in message
        assert "No module named 'rbpf'" not in message

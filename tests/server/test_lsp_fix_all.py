"""The editor's fix-all and `jax-lsp check --fix` run one fix loop: the same text, across modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import Session

from jax_lsp.server.features.code_actions import FIX_ALL
from tests.cli.runner import run_check

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Fixing save_dots takes two rounds: its signature first; then the policy it returns can be
# delegated to. Both findings exist only because model.py uses the policies.
POLICIES = """import jax


def save_dots(prim, *args):
    return jax.checkpoint_policies.dots_saveable


def save_nothing(prim, *args, **params):
    if prim.name == "sin":
        return
    return False
"""
MODEL = """import jax

from policies import save_dots, save_nothing

f = jax.checkpoint(lambda x: x, policy=save_dots)
g = jax.checkpoint(lambda x: x, policy=save_nothing)
"""


def _fixed_by_check(folder: Path, files: dict[str, str]) -> dict[str, str]:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    done = run_check(folder, "--fix", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr  # every finding fixed, none left
    return {name: (folder / name).read_text() for name in files}


async def _fix_all_in_editor(server: Session, root: Path, on_disk: dict[str, str], buffers: dict[str, str]):
    root.mkdir()
    for name, text in on_disk.items():
        (root / name).write_text(text)
    async with server.in_folder(root) as lsp:
        uris = {name: lsp.open(name, text) for name, text in buffers.items()}
        policies = uris["policies.py"]
        await lsp.eventually(policies, lambda d: {x.code for x in d} == {"JAX101", "JAX103", "JAX108"})
        [fix_all] = await lsp.code_actions(policies, [], only=[FIX_ALL])
        lsp.apply(fix_all, policies)
        return {name: lsp.texts[uri] for name, uri in uris.items()}, await lsp.diagnostics(policies)


async def test_fix_all_gives_the_text_of_check_fix_for_a_policy_used_in_another_module(server, tmp_path):
    files = {"policies.py": POLICIES, "model.py": MODEL}
    expected = _fixed_by_check(tmp_path / "check", files)
    assert expected["policies.py"] != POLICIES
    fixed, left = await _fix_all_in_editor(server, tmp_path / "editor", files, {"policies.py": POLICIES})
    assert fixed == {"policies.py": expected["policies.py"]}
    assert left == []


async def test_fix_all_sees_the_use_in_an_unsaved_buffer(server, tmp_path):
    # On disk model.py uses no policy: only its open buffer makes the policies' findings.
    files = {"policies.py": POLICIES, "model.py": MODEL}
    expected = _fixed_by_check(tmp_path / "check", files)
    on_disk = {"policies.py": POLICIES, "model.py": "import jax\n"}
    fixed, left = await _fix_all_in_editor(server, tmp_path / "editor", on_disk, files)
    assert fixed == expected
    assert left == []

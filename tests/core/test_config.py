"""Finding the pyproject.toml whose [tool.jax-lsp] table applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from jax_lsp.core.config import find_pyproject, load_pyproject


@pytest.mark.parametrize(
    "toml",
    [
        '[tool.jax-lsp]\nselect = ["JAX1"]\n',
        "[tool]\n'jax-lsp' = { select = [\"JAX1\"] }\n",
        '[tool."jax\\u002dlsp"]\nselect = ["JAX1"]\n',  # the name spelled with an escape
        '[tool."\\U0000006Aax-lsp"]\nselect = ["JAX1"]\n',
    ],
)
def test_a_jax_lsp_table_is_found_however_it_is_spelled(tmp_path: Path, toml: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "pkg").mkdir()
    assert find_pyproject(tmp_path / "pkg") == tmp_path / "pyproject.toml"
    assert load_pyproject(tmp_path / "pyproject.toml").select == ("JAX1",)


@pytest.mark.parametrize(
    "toml",
    [
        '[project]\nname = "jax-lsp-user"\n',  # the name, but no table
        '[tool.ruff]\nexclude = ["\\\\.git"]\n',  # escapes that spell no letter
        "[tool.jax-lsp\n",  # not TOML
    ],
)
def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path, toml: str) -> None:
    (tmp_path / "outer").mkdir()
    (tmp_path / "outer" / "pyproject.toml").write_text("[tool.jax-lsp]\n")
    (tmp_path / "outer" / "inner").mkdir()
    (tmp_path / "outer" / "inner" / "pyproject.toml").write_text(toml)
    assert find_pyproject(tmp_path / "outer" / "inner") == tmp_path / "outer" / "pyproject.toml"

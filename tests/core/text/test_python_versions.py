"""The Python a project requires: requires-python in pyproject.toml, setup.cfg, setup.py; target-version."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from jax_lsp.core.config import Settings, SettingsError, settings_from_mapping
from jax_lsp.core.text.python_versions import ProjectPythons, RequiredPython, declared_python, minimum_python

SPECIFIERS = {
    ">=3.12": (3, 12),
    ">=3.12,<4": (3, 12),
    " >= 3.12 , < 4 ": (3, 12),
    "~=3.12": (3, 12),
    "~=3.12.1": (3, 12),
    ">3.11": (3, 11),  # 3.11.1 > 3.11
    "==3.12.*": (3, 12),
    "==3.13": (3, 13),
    ">=3.12.0rc1": (3, 12),
    ">=3.10,!=3.11.*": (3, 10),
    "<4": None,
    "": None,
    "^3.12": None,  # Poetry's, not PEP 440
}


@pytest.mark.parametrize(("specifier", "expected"), SPECIFIERS.items())
def test_the_oldest_python_a_specifier_admits(specifier: str, expected: tuple | None) -> None:
    assert minimum_python(specifier) == expected


@pytest.mark.parametrize("specifier", [s for s, v in SPECIFIERS.items() if v is not None])
def test_the_oldest_python_agrees_with_packaging(specifier: str) -> None:
    candidates = [f"3.{minor}.{patch}" for minor in range(6, 16) for patch in (0, 1, 5)]
    admitted = [
        v for v in candidates if SpecifierSet(specifier.replace(" ", "")).contains(v, prereleases=True)
    ]
    assert tuple(map(int, admitted[0].split(".")[:2])) == minimum_python(specifier)


def _write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


def test_pyproject_requires_python(tmp_path: Path) -> None:
    _write(tmp_path, pyproject_toml='[project]\nname = "p"\nrequires-python = ">=3.12"\n')
    assert declared_python(tmp_path) == RequiredPython(
        (3, 12), f"requires-python '>=3.12' in {tmp_path / 'pyproject.toml'}"
    )


def test_setup_cfg_python_requires(tmp_path: Path) -> None:
    _write(tmp_path, setup_cfg="[metadata]\nname = p\n\n[options]\npython_requires = >=3.13, <4\n")
    assert declared_python(tmp_path).version == (3, 13)


def test_setup_py_is_read_never_run(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    _write(tmp_path, setup_py=f"open({str(ran)!r}, 'w').close()\nsetup(name='p', python_requires='>=3.12')\n")
    assert declared_python(tmp_path).version == (3, 12)
    assert not ran.exists()


def test_a_dynamic_requires_python_falls_back_to_setup_files(tmp_path: Path) -> None:
    _write(
        tmp_path,
        pyproject_toml='[project]\nname = "p"\ndynamic = ["requires-python"]\n',
        setup_cfg="[options]\npython_requires = >=3.12\n",
        setup_py="setup(python_requires='>=3.10')\n",
    )
    assert declared_python(tmp_path).version == (3, 12)


def test_unreadable_files_declare_nothing(tmp_path: Path) -> None:
    _write(tmp_path, pyproject_toml="[project\n", setup_cfg="not an ini", setup_py="setup(name='p')\n")
    assert declared_python(tmp_path) is None


def test_the_nearest_declaration_wins_up_to_the_root(tmp_path: Path) -> None:
    _write(tmp_path, pyproject_toml='[project]\nrequires-python = ">=3.10"\n')
    root = _write(tmp_path / "repo", pyproject_toml='[project]\nrequires-python = ">=3.12"\n')
    _write(root / "libs" / "old", setup_cfg="[options]\npython_requires = >=3.11\n")
    _write(root / "pkg" / "sub", m_py="")
    pythons = ProjectPythons([root])
    assert pythons.required(str(root / "pkg" / "sub" / "m.py")).version == (3, 12)
    assert pythons.required(str(root / "libs" / "old" / "m.py")).version == (3, 11)
    (root / "pyproject.toml").write_text('[project]\nname = "repo"\n')
    assert pythons.required(str(root / "pkg" / "m.py")) is None  # the root ends the search
    assert ProjectPythons([root / "pkg"]).required(str(tmp_path / "elsewhere.py")).version == (3, 10)


def test_an_edited_declaration_is_read_again(tmp_path: Path) -> None:
    pyproject = _write(tmp_path, pyproject_toml='[project]\nrequires-python = ">=3.12"\n') / "pyproject.toml"
    pythons = ProjectPythons([tmp_path])
    assert pythons.required(str(tmp_path / "m.py")).version == (3, 12)
    pyproject.write_text('[project]\nrequires-python = ">=3.9"\n')
    os.utime(pyproject, ns=(0, 0))  # a new stamp even on a coarse clock
    assert pythons.required(str(tmp_path / "m.py")).version == (3, 9)


def test_target_version_overrides_requires_python(tmp_path: Path) -> None:
    _write(tmp_path, pyproject_toml='[project]\nrequires-python = ">=3.12"\n')
    settings = settings_from_mapping({"target-version": "py310"})
    assert settings == Settings(target_version=(3, 10))
    assert ProjectPythons([tmp_path], settings.target_version).required(str(tmp_path / "m.py")).version == (
        3,
        10,
    )


@pytest.mark.parametrize("value", ["3.12", "py2", 312, "py3"])
def test_a_bad_target_version_is_a_settings_error(value: object) -> None:
    with pytest.raises(SettingsError, match="target-version"):
        settings_from_mapping({"target-version": value})

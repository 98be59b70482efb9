from __future__ import annotations

from pathlib import Path

from jax_lsp.core.packages import imported_packages, package_files, read_file


def test_imports_are_read_only_where_a_statement_starts_a_line():
    data = (
        b"from flax import linen\n"
        b"  \tfrom  praxis.layers import x\n"
        b"import os, optax.tree as t, haliax\n"
        b"if True:\n    import equinox  # indented\n"
        b"x = 1; import not_at_line_start\n"
        b"# from commented import y\n"
        b"text = 'from quoted'\n"
        b"a = 1\rfrom after_carriage_return import z\n"  # `^` only follows a line feed
        b"from\n"
        b"import\tjaxtyping"
    )
    assert imported_packages(data) == {"flax", "praxis", "optax", "haliax", "equinox", "jaxtyping"}


def test_a_package_lists_its_python_files_folder_by_folder_in_name_order(tmp_path):
    package = tmp_path / "modellib"
    for relative in ["b.py", "__init__.py", "a.py", "notes.txt", "sub/x.py", "Zeta/y.py", "__pycache__/a.py"]:
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text("")
    (package / "linked").symlink_to(package / "sub")  # a linked folder is not entered
    found = package_files("modellib", [tmp_path])
    expected = ["__init__.py", "a.py", "b.py", "Zeta/y.py", "sub/x.py"]
    assert found == [str(package / relative) for relative in expected]
    assert package_files("missing", [tmp_path]) == []


def test_a_file_is_read_whole_and_what_cannot_be_read_is_none(tmp_path: Path):
    (tmp_path / "empty.py").write_bytes(b"")
    big = bytes(range(256)) * 20_000  # more than one read of a pipe's or a buffer's size
    (tmp_path / "big.py").write_bytes(big)
    assert read_file(str(tmp_path / "empty.py")) == b""
    assert read_file(str(tmp_path / "big.py")) == big
    assert read_file(str(tmp_path / "missing.py")) is None
    assert read_file(str(tmp_path)) is None  # a folder

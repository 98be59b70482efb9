from __future__ import annotations

from jax_lsp.core.packages import imported_packages, package_files


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

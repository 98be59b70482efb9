from __future__ import annotations

from jax_lsp.core.packages import imported_packages


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

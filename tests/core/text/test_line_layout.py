"""An edit laid out as the file is: its project's line length, its indentation step."""

import ast

from jax_lsp.core.text.line_layout import DEFAULT_LINE_LENGTH, fitted, indent_step, line_length

SITE = "  block = nn.remat(Block, policy=jax.checkpoint_policies.dots_saveable)  # jax-lsp: example=m.py:e"
OFFLOAD = "jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')"


def test_the_line_length_is_ruffs_then_blacks_then_88(tmp_path):
    model = tmp_path / "pkg" / "model.py"
    model.parent.mkdir()
    assert line_length(model) == DEFAULT_LINE_LENGTH == 88
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert line_length(model) == 100
    (tmp_path / "pyproject.toml").write_text(
        "[tool.black]\nline-length = 100\n[tool.ruff]\nline-length = 120\n"
    )
    assert line_length(model) == 120
    (tmp_path / "pyproject.toml").write_text("[tool.ruff\n")  # broken: the default
    assert line_length(model) == 88


def test_the_indentation_step_is_the_files():
    assert indent_step("def f():\n  if x:\n    return 1\n") == "  "
    assert indent_step("def f():\n\treturn 1\n") == "\t"
    assert indent_step("x = 1\n") == "    "


def test_a_value_that_fits_stays_on_the_line_one_that_does_not_gets_its_own():
    start = SITE.index("jax.checkpoint_policies.dots_saveable")
    end = start + len("jax.checkpoint_policies.dots_saveable")
    short = "jax.checkpoint_policies.nothing_saveable"
    assert fitted(SITE, start, end, short, 120, "  ") == short
    same = "jax.checkpoint_policies.dots_with_no"  # as long as what it replaces
    assert fitted(SITE, start, end, same, 80, "  ") == same  # the line was too long already
    text = fitted(SITE, start, end, OFFLOAD, 120, "  ")
    assert text == "\n    " + OFFLOAD
    rewritten = SITE[:start] + text + SITE[end:]
    assert all(len(line) <= 120 for line in rewritten.split("\n")[:1])
    assert max(len(line) for line in rewritten.split("\n")) < len(SITE[:start] + OFFLOAD + SITE[end:])
    ast.parse(rewritten.strip())  # inside the call's brackets Python joins the lines

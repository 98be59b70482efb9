"""Which example a site gets: its comment, then [tool.jax-lsp.examples] by line, by the function
or class that holds it, by file (trace/advisor/examples.py)."""

from __future__ import annotations

from pathlib import Path

from jax_lsp.engine import Workspace
from jax_lsp.trace.advisor.examples import KeyLines, enclosing_names, example_for, line_keys
from jax_lsp.trace.mapping import LineEdit

MODEL = """import functools
import jax


class Block:
    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
    def __call__(self, x):
        return x

    def setup(self):
        if True:
            self.f = jax.checkpoint(
                lambda x: x,
                policy=jax.checkpoint_policies.nothing_saveable,
            )


@jax.checkpoint
def top(x):
    return x
"""


def _line(needle: str, text: str = MODEL) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _example(tmp_path, examples, needle, key_line="same", text=MODEL):
    (tmp_path / "model.py").write_text(text, encoding="utf-8")
    line = _line(needle, text)
    return example_for(
        Workspace([tmp_path]),
        tmp_path / "model.py",
        line,
        examples,
        tmp_path,
        line if key_line == "same" else key_line,
    )


def test_the_function_or_class_holding_a_site_names_it_innermost_first(tmp_path):
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    module = Workspace([tmp_path]).load(tmp_path / "model.py")
    assert enclosing_names(module.source.tree, _line("nothing_saveable")) == ["Block.setup", "Block"]
    # a decorator's line belongs to what it decorates
    assert enclosing_names(module.source.tree, _line("dots_saveable")) == ["Block.__call__", "Block"]
    assert enclosing_names(module.source.tree, _line("@jax.checkpoint")) == ["top"]
    assert enclosing_names(module.source.tree, 1) == []


def test_keys_by_line_then_function_then_class_then_file(tmp_path):
    examples = {
        "model.py": "ex:file",
        "model.py:Block": "ex:block",
        "model.py:Block.setup": "ex:setup",
        f"model.py:{_line('nothing_saveable')}": "ex:line",
    }
    assert _example(tmp_path, examples, "nothing_saveable") == "ex:line"
    assert _example(tmp_path, examples, "nothing_saveable", key_line=None) == "ex:setup"
    assert _example(tmp_path, examples, "dots_saveable") == "ex:block"
    assert _example(tmp_path, examples, "@jax.checkpoint") == "ex:file"
    assert _example(tmp_path, {"other.py": "ex:other"}, "@jax.checkpoint") is None


def test_the_comment_on_the_sites_line_wins(tmp_path):
    text = MODEL.replace("nothing_saveable,", "nothing_saveable,  # jax-lsp: example=ex:comment")
    assert _example(tmp_path, {"model.py": "ex:file"}, "nothing_saveable", text=text) == "ex:comment"


def test_a_line_key_follows_its_line_through_edits():
    keys = KeyLines(
        line_keys({"m.py:10": "a", "m.py:20": "b", "m.py": "c", "n.py:5": "d"}, Path("m.py"), None)
    )
    assert (keys.key_at(10), keys.key_at(20)) == (10, 20)
    keys.follow(LineEdit.of((0, 0), (0, 0), "# one\n# two\n"))  # two lines in above both
    assert (keys.key_at(12), keys.key_at(22), keys.key_at(10)) == (10, 20, None)
    keys.follow(LineEdit.of((11, 4), (11, 9), "other"))  # the site's own line rewritten: it stays
    assert keys.key_at(12) == 10
    keys.follow(LineEdit.of((14, 0), (19, 0), ""))  # five lines out between them
    assert (keys.key_at(12), keys.key_at(17)) == (10, 20)
    keys.follow(LineEdit.of((10, 0), (13, 0), ""))  # the line itself removed: forgotten
    assert (keys.key_at(12), keys.key_at(11), keys.key_at(14)) == (None, None, 20)

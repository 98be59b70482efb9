"""`names_untagged_in` and `factory_uncalled_in`: the byte-level guesses a batch check makes to
read the installed packages' tags ahead (engine.batch). A wrong guess costs time, never a
finding; these pin what they say."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jax_lsp.core.tags.tags import factory_uncalled_in, names_untagged_in

POLICY = b'import jax\nP = jax.checkpoint_policies.save_only_these_names("attn_out", "mlp_out")\n'
TAGS = b'from jax.ad_checkpoint import checkpoint_name\nA = checkpoint_name(1, "attn_out")\n'


def _guess(files: list[bytes]) -> bool:
    """The guess when every file is searched both for the names written and for the tags."""
    return names_untagged_in(files, files)


def test_a_written_name_that_no_tagging_file_quotes_is_untagged():
    assert _guess([POLICY, TAGS])  # "mlp_out"
    assert _guess([POLICY])


def test_names_each_quoted_in_a_tagging_file_are_not():
    both = TAGS + b"M = checkpoint_name(2, 'mlp_out')\n"
    assert not _guess([POLICY, both])
    # Quoted, but in a file that tags nothing: the index would not find it there first.
    assert _guess([POLICY, TAGS, b'NAMES = ["mlp_out"]\n'])


def test_no_written_name_no_guess():
    assert not _guess([b"import jax\nP = jax.checkpoint_policies.save_only_these_names(*NAMES)\n"])
    assert not _guess([TAGS, b"x = 1\n"])
    assert not _guess([])


def test_bytes_that_are_not_utf8_are_compared_as_bytes():
    policy = b'P = save_only_these_names("caf\xe9")\n'
    assert _guess([policy])
    assert not _guess([policy, b'checkpoint_name(1, "caf\xe9")\n'])


def test_names_are_read_from_the_writing_files_and_tags_from_the_others():
    both = TAGS + b"M = checkpoint_name(2, 'mlp_out')\n"
    assert not names_untagged_in([POLICY], [both])
    assert names_untagged_in([POLICY], [TAGS])
    assert not names_untagged_in([TAGS], [POLICY])  # a factory's call in a tagging file alone: none written


def test_the_tagging_files_are_not_read_when_no_name_is_written():
    def unread() -> Iterator[bytes]:
        raise AssertionError("the tagging files were read")
        yield b""  # a generator: it fails only when iterated

    assert not names_untagged_in([TAGS, b"x = 1\n"], unread())


def test_a_factory_of_names_named_without_its_call_is_uncalled():
    assert factory_uncalled_in(
        [b"import jax\nP = dict(only=jax.checkpoint_policies.save_only_these_names)\n"]
    )
    assert factory_uncalled_in([b"x = 1\n", b"policy=cp.save_and_offload_only_these_names,\n"])
    assert factory_uncalled_in([b"p = save_any_names_but_these\n"])


def test_a_factory_of_names_called_is_not():
    assert not factory_uncalled_in([POLICY])
    assert not factory_uncalled_in([b"P = cp.save_anything_except_these_names (\n  'a')\n"])
    assert not factory_uncalled_in([b"P = cp.dots_saveable\n", TAGS, b""])
    assert not factory_uncalled_in([])


@pytest.mark.parametrize(
    "text",
    [
        b'"""Same as ``save_only_these_names``, but offloaded."""\nP = cp.save_only_these_names("a")\n',
        b'PRESET = "save_anything_except_these_names"\n',  # easydel's presets: strings
        b"from jax.checkpoint_policies import save_only_these_names\n",
        b"# pass save_only_these_names, called\nP = cp.save_only_these_names('a')\n",
        b"P = cp.save_any_names_but_these\n(\n'a')\n",
        b"def save_only_these_names(*names):\n    pass\nns = dict(save_only_these_names=save_only_these_names)\n",
    ],
)
def test_a_factory_of_names_quoted_imported_or_in_a_comment_is_not(text):
    assert not factory_uncalled_in([text])

"""`names_untagged_in`: the byte-level guess a batch check makes to read the installed packages'
tags ahead (engine.batch). A wrong guess costs time, never a finding; these pin what it says."""

from __future__ import annotations

from jax_lsp.core.tags.tags import names_untagged_in

POLICY = b'import jax\nP = jax.checkpoint_policies.save_only_these_names("attn_out", "mlp_out")\n'
TAGS = b'from jax.ad_checkpoint import checkpoint_name\nA = checkpoint_name(1, "attn_out")\n'


def test_a_written_name_that_no_tagging_file_quotes_is_untagged():
    assert names_untagged_in([POLICY, TAGS])  # "mlp_out"
    assert names_untagged_in([POLICY])


def test_names_each_quoted_in_a_tagging_file_are_not():
    both = TAGS + b"M = checkpoint_name(2, 'mlp_out')\n"
    assert not names_untagged_in([POLICY, both])
    # Quoted, but in a file that tags nothing: the index would not find it there first.
    assert names_untagged_in([POLICY, TAGS, b'NAMES = ["mlp_out"]\n'])


def test_no_written_name_no_guess():
    assert not names_untagged_in([b"import jax\nP = jax.checkpoint_policies.save_only_these_names(*NAMES)\n"])
    assert not names_untagged_in([TAGS, b"x = 1\n"])
    assert not names_untagged_in([])


def test_bytes_that_are_not_utf8_are_compared_as_bytes():
    policy = b'P = save_only_these_names("caf\xe9")\n'
    assert names_untagged_in([policy])
    assert not names_untagged_in([policy, b'checkpoint_name(1, "caf\xe9")\n'])

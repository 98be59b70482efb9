"""Every code of the registry, the file problems and the trace's JAX190 included, links its page."""

from __future__ import annotations

import pytest

from jax_lsp.core.codes import CODES
from jax_lsp.server.diagnostics import code_description


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_gets_the_link_to_its_doc_page(code):
    assert code_description(code).href == CODES[code].doc_url
    assert code_description(code).href.endswith(f"/docs/rules/{code}.md")


def test_a_note_without_a_code_gets_no_link():
    assert code_description(None) is None

"""Recompute FLOPs against counts made by hand."""

from __future__ import annotations

import pytest

from jax_lsp.trace.advice import advise
from tests.advise.conftest import FIXTURES, site_line

pytest.importorskip("jax")

PATH = FIXTURES / "matmul_stack.py"
B, D, L = 16, 64, 5
MATMUL = 2 * B * D * D


def _flops(service, needle, example, policies):
    advice = advise(service, PATH, site_line(PATH, needle), example=example, policies=policies, root=FIXTURES)
    assert advice.ok, advice.message
    return {p.policy.removeprefix("jax.checkpoint_policies."): p.recompute_flops for p in advice.policies}


def test_a_stack_of_matmuls(service):
    flops = _flops(
        service,
        "block = jax.checkpoint(",
        "matmul_stack.py:example",
        ["nothing_saveable", "dots_saveable", "everything_saveable"],
    )
    assert flops == {"nothing_saveable": L * MATMUL, "dots_saveable": 0, "everything_saveable": 0}


def test_a_scanned_stack_counts_every_iteration(service):
    flops = _flops(
        service,
        "lax.scan(jax.checkpoint(",
        "matmul_stack.py:scanned_example",
        ["nothing_saveable", "dots_saveable"],
    )
    assert flops == {"nothing_saveable": L * MATMUL, "dots_saveable": 0}


def test_a_convolution(service):
    flops = _flops(
        service,
        "conv_block = jax.checkpoint(",
        "matmul_stack.py:conv_example",
        ["nothing_saveable", "everything_saveable"],
    )
    # out 2x8x8x4, each output sums 3x3x3 products: 2 FLOPs per product
    assert flops == {"nothing_saveable": 2 * (2 * 8 * 8 * 4) * (3 * 3 * 3), "everything_saveable": 0}

"""The commands' tests share the session's agent, and `cli`: `main` tracing in it."""

import functools
import sys

import pytest

from jax_lsp.cli import main
from jax_lsp.trace.service import TraceService
from tests.agent import AGENT_PYTHON, service, write  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def cli(service):  # noqa: F811 (the fixture imported above)
    """`main`, tracing in the session's warm agent: an agent of its own would cost each run about
    3 CPU-s, most of it importing jax. Where the session's agent runs another Python
    (JAX_LSP_TEST_INTERPRETER), in a warm agent of this one: these tests compare with its JAX."""
    if AGENT_PYTHON == sys.executable:
        yield functools.partial(main, trace_service=service)
        return
    own = TraceService()
    yield functools.partial(main, trace_service=own)
    own.shutdown()

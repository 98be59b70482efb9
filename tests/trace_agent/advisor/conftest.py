"""The advisor's tests run the agent in this Python, whatever JAX_LSP_TEST_INTERPRETER says."""

import pytest

from jax_lsp.trace import TraceService

pytest.importorskip("jax")


@pytest.fixture(scope="session")
def service():
    svc = TraceService()
    yield svc
    svc.shutdown()

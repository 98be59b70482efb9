"""The advisor's tests run the agent in tests/agent.py's AGENT_PYTHON (JAX_LSP_TEST_INTERPRETER)."""

import pytest

from tests.agent import service  # noqa: F401 (the fixture)

pytest.importorskip("jax")

"""Fixtures: the editor profiles, and one real server per test module and profile."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_harness import PROFILES, Session, start_session


@pytest.fixture(params=list(PROFILES))
def profile(request) -> str:
    """For a test that starts its own server (its settings, folders or lifecycle are its subject)."""
    return request.param


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=list(PROFILES))
async def server(request, tmp_path_factory) -> AsyncIterator[Session]:
    """One server per module and profile (a start costs over a CPU-second, most of it imports);
    its modules' tests declare `pytestmark = pytest.mark.asyncio(loop_scope="module")`."""
    root = tmp_path_factory.mktemp(f"{request.module.__name__}-{request.param}")
    async with start_session(request.param, root) as session:
        await session.indexed()
        yield session


@pytest_asyncio.fixture(loop_scope="module")
async def lsp(server: Session, tmp_path: Path) -> AsyncIterator[Session]:
    """The module's server as this test's own: a fresh workspace folder (a new analysis), its own
    documents, closed after it, and its own view of what was published and said."""
    async with server.in_folder(tmp_path) as view:
        yield view

"""Fixtures: one real server per test, for each editor profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import PROFILES, start_session


@pytest.fixture(params=list(PROFILES))
def profile(request) -> str:
    return request.param


@pytest.fixture
async def lsp(profile: str, tmp_path: Path):
    async with start_session(profile, tmp_path) as session:
        yield session

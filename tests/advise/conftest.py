from pathlib import Path

import pytest

from jax_lsp.trace import TraceService

pytest.importorskip("jax")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def service():
    svc = TraceService()
    yield svc
    svc.shutdown()


def site_line(path: Path, needle: str = "policy=") -> int:
    """1-based line of the first line containing ``needle``."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")

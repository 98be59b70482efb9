import pytest

from tests.agent import libtpu_python, service, write  # noqa: F401 (fixtures)

pytest.importorskip("jax")

from tests.agent import service, write  # noqa: F401 (fixtures)

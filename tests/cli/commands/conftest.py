from tests.agent import write  # noqa: F401 (fixtures)

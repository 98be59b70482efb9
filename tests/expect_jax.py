"""With JAX_LSP_EXPECT_JAX=1 (.ci/run sets it), a test or a whole folder skipped because this Python
lacks jax, flax or equinox fails instead: the trace, advisor and example suites skip themselves
without them, and a run that is meant to have them must not pass by skipping them.

Loaded by tests/conftest.py; `pytest -p tests.expect_jax` loads it elsewhere (its own test does)."""

from __future__ import annotations

import os
import re
import sys

import pytest

PACKAGES = ("jax", "flax", "equinox")

# The reasons the suites give: pytest.importorskip's, and `not_installed`'s (tests/jax_premises.py)
# when it names this Python (a JAX_LSP_TEST_INTERPRETER venv holding only JAX may lack flax).
_names = "|".join(PACKAGES)
MISSING = re.compile(
    rf"could not import '({_names})[.']"
    rf"|^{re.escape(sys.executable)} lacks (.*, )?({_names})(,|$)"
)


def expected() -> bool:
    return os.environ.get("JAX_LSP_EXPECT_JAX") == "1"


def _fail_if_missing(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return
    reason = report.longrepr[2].removeprefix("Skipped: ")
    if MISSING.search(reason):
        report.outcome = "failed"
        report.longrepr = (
            f"{reason}\nJAX_LSP_EXPECT_JAX=1: this run is meant to have {', '.join(PACKAGES)} "
            "(pip install -e '.[test]'), so a test that needs them must not be skipped."
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    report = yield
    if expected():
        _fail_if_missing(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if expected():
        _fail_if_missing(report)
    return report

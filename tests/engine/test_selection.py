"""The one selection step every producer of findings passes: noqa, select/ignore, severity."""

from jax_lsp.core.config import Settings, settings_from_mapping
from jax_lsp.core.findings import Finding, Severity, Span
from jax_lsp.engine.selection import admitted

LINES = {
    0: "x = 1",
    1: "return prim.missing  # noqa: JAX190",
    2: "return prim.missing  # NOQA",
    3: "return prim.missing  # noqa: JAX101",
}


def _at(line, code="JAX190", severity=Severity.ERROR, message="JAX rejected this policy"):
    return Finding("model.py", code, severity, message, Span.of(line, 0, line, 5))


def _admitted(findings, settings=None):
    return admitted(findings, settings or Settings(), lambda path, line: LINES[line])


def test_a_noqa_naming_the_code_or_a_bare_one_hides_a_trace_finding():
    assert [f.span.start.line for f in _admitted([_at(line) for line in LINES])] == [0, 3]


def test_ignore_and_select_hold_but_a_file_problem_is_always_admitted():
    ignoring = settings_from_mapping({"ignore": ["JAX190", "JAX001"]}, Settings())
    assert _admitted([_at(0), _at(0, "JAX001", message="syntax")], ignoring) == [
        _at(0, "JAX001", message="syntax")
    ]
    assert _admitted([_at(2, "JAX001", message="syntax")]) == [_at(2, "JAX001", message="syntax")]  # noqa too


def test_severity_overrides_and_each_finding_once():
    warning = settings_from_mapping({"severity": {"JAX190": "warning"}}, Settings())
    assert _admitted([_at(0), _at(0)], warning) == [_at(0, severity=Severity.WARNING)]

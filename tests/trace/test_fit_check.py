"""`--budget` counts only the steps that compiled: a tie whose compile failed does not end the
check, and the message names what did not compile without blaming the limits where none stopped
it (issue 47: an import error read "a larger --compile-timeout or --compile-memory-limit-mb may
let them", and the current policy, which fit, was never compiled)."""

from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.fit import check_fit
from jax_lsp.trace.advisor.report import no_fit

MiB = 2**20
DOTS = "jax.checkpoint_policies.dots_saveable"
NOTHING = "jax.checkpoint_policies.nothing_saveable"
IMPORT_ERROR = "Importing advise_example failed: registry.py:69: ValueError: Duplicate name: Function:gelu"


def _entry(policy, flops, current=False, **more):
    return {
        "policy": policy,
        "current": current,
        "device_bytes": 10,
        "host_bytes": 0,
        "recompute_flops": flops,
        "peak_bytes": 40 * MiB,
        **more,
    }


def _advice(*entries, status="ok", message=""):
    answer = {
        "status": status,
        "message": message,
        "target": {"path": "m.py", "line": 3},
        "policies": list(entries),
    }
    return Advice.from_agent(answer, "m.py", 3)


def _compiled(temp_mib):
    return {"temp_bytes": temp_mib * MiB, "argument_bytes": 0, "output_bytes": 0, "alias_bytes": 0}


def test_a_failed_compile_is_not_counted_and_the_next_candidate_is_compiled():
    advice = _advice(_entry(DOTS, 0), _entry(NOTHING, 300, current=True))

    def compile_candidates(policies):
        if policies == [DOTS]:  # its compile's process failed to import the example
            return _advice(status="import_error", message=IMPORT_ERROR)
        return _advice(_entry(NOTHING, 300, current=True, compiled=_compiled(49)))

    checked = check_fit(advice, 60 * MiB, compile_candidates)
    assert checked.fit_check is not None and checked.fit_check.policies == (DOTS, NOTHING)
    suggested = checked.suggest(60 * MiB)
    assert suggested is not None and suggested.policy == NOTHING
    dots = next(p for p in checked.policies if p.policy == DOTS)
    assert dots.compile_error == f"import_error: {IMPORT_ERROR}"


def test_no_fit_names_what_did_not_compile_and_blames_the_limits_only_where_they_stopped_it():
    failed = _advice(
        _entry(DOTS, 0, compiled=None, compile_error=f"import_error: {IMPORT_ERROR}"),
        _entry(NOTHING, 300, current=True, compiled=_compiled(49)),
    )
    text = no_fit(failed, 30 * MiB)
    assert "did not compile" in text and "dots_saveable" in text and "nothing_saveable" not in text
    assert "--compile-timeout" not in text and "--compile-memory-limit-mb" not in text
    stopped = _advice(
        _entry(
            DOTS, 0, compiled=None, compile_error="did not compile within 300 s", compile_stopped="timeout"
        ),
        _entry(NOTHING, 300, current=True, compiled=_compiled(49)),
    )
    assert "--compile-timeout" in no_fit(stopped, 30 * MiB)

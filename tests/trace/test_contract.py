"""The advice's one wire format keeps every field (issue 49): for any advice the agent can give,
`Advice.from_contract` of its `to_contract` JSON, through `json`, is the same advice, a library
site's user call included, with paths inside the project's root relative in the JSON and
absolute again once read."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jax_lsp.trace.advisor import policy_advice as kept
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import Compiled, Exhausted
from jax_lsp.trace.advisor.runs import DeviceRuns, StepRun
from jax_lsp.trace.advisor.step_time import StepCost
from jax_lsp.trace.advisor.user_call import UserCall
from jax_lsp.trace.compile_target import parse_target

ROOT = Path("/project")
TARGETS = ("cpu", "v5e-1", "v5e:2x2", "v4-8", "v5p-8", "v6e-4")
FAILURES = ("timeout", "crashed", "no_example", "example_error", "jax_error", "unsupported")

text = st.text(max_size=12)
sizes = st.integers(min_value=0, max_value=2**50)
lines = st.integers(min_value=1, max_value=10**6)
seconds = st.floats(min_value=0, max_value=1e6, allow_nan=False)
# the agent gives absolute paths: inside the project (relative in the JSON) or outside it
places = st.from_regex(r"[a-z_][a-z0-9_]{0,6}(/[a-z_][a-z0-9_]{0,6}){0,2}\.py", fullmatch=True)
paths = st.builds(
    lambda inside, place: str((ROOT if inside else Path("/elsewhere")) / place), st.booleans(), places
)
keys = st.one_of(text, st.integers(min_value=-(2**31), max_value=2**31))

residuals = st.builds(
    kept.Residual,
    shape=st.lists(st.integers(min_value=0, max_value=2**16), max_size=4).map(tuple),
    dtype=st.sampled_from(["float32", "bfloat16", "int32", "float32<host>"]),
    bytes=sizes,
    memory=st.sampled_from(["device", "host"]),
    kind=st.sampled_from(kept.KINDS),
    name=st.none() | text,
    path=st.none() | paths,
    line=st.none() | lines,
    iterations=st.none() | st.integers(min_value=1, max_value=4096),
    description=text,
    reason=st.none() | st.sampled_from(sorted(kept.REASONS)),
    used_by=st.none() | st.lists(st.tuples(paths, lines), max_size=3).map(tuple),
)
no_effects = st.builds(
    kept.NoEffect,
    name=text,
    role=st.sampled_from(["saved", "offloaded", "excluded"]),
    reason=st.sampled_from(["not_produced", "not_needed", "kept_otherwise", "new_remat"]),
    tagged_outside=st.lists(st.tuples(paths, lines), max_size=2).map(tuple),
    without=st.none() | text,
)
costs = st.builds(
    StepCost,
    *(sizes for _ in range(7)),
    st.lists(st.none() | st.integers(min_value=1, max_value=4096), max_size=3).map(tuple),
    st.lists(st.tuples(*(sizes for _ in range(5))), max_size=3).map(tuple),
    st.none() | seconds,
    st.none() | seconds,
)
compiled = st.builds(
    Compiled,
    sizes,
    sizes,
    sizes,
    sizes,
    st.none() | sizes,
    st.none() | sizes,
    st.sampled_from([None, "replicated", "example"]),
    st.none() | costs,
)
runs = st.builds(
    StepRun,
    step_s=st.none() | seconds,
    runs=st.none() | st.integers(min_value=1, max_value=100),
    peak_bytes_in_use=st.none() | sizes,
    error=st.none() | text,
    peak_bytes_at_most=st.none() | sizes,
    executable_s=st.none() | seconds,
    loaded=st.booleans(),
)


@st.composite
def policies(draw: st.DrawFn) -> kept.PolicyAdvice:
    """A candidate as the agent reports it: a rejected one has no figures; the compile's time and
    why it stopped only where --compile ran."""
    error = draw(st.none() | text)
    step = draw(st.none() | compiled)
    compile_error = draw(st.none() | text)
    exhausted = draw(st.none() | st.builds(Exhausted, sizes, sizes, text))
    was_compiled = step is not None or compile_error is not None or exhausted is not None
    return kept.PolicyAdvice(
        policy=draw(text),
        current=draw(st.booleans()),
        device_bytes=0 if error is not None else draw(sizes),
        host_bytes=0 if error is not None else draw(sizes),
        recompute_flops=None if error is not None else draw(st.none() | sizes),
        residuals=tuple(draw(st.lists(residuals, max_size=4))),
        error=error,
        select=draw(st.none() | st.builds(kept.Select, keys, text)),
        peak_bytes=None if error is not None else draw(st.none() | sizes),
        compiled=step,
        compile_s=draw(st.none() | seconds) if was_compiled else None,
        compile_error=compile_error,
        exhausted=exhausted,
        compile_stopped=draw(st.none() | st.sampled_from(["memory", "timeout", "crashed"]))
        if was_compiled
        else None,
        run=draw(st.none() | runs),
        no_effect=tuple(draw(st.lists(no_effects, max_size=2))),
    )


user_calls = st.builds(
    UserCall,
    path=paths,
    line=lines,
    column=st.integers(min_value=0, max_value=200),
    end_line=lines,
    end_column=st.integers(min_value=0, max_value=200),
    keyword=text,
    text=text,
    callee=text,
    carries_policy=st.booleans(),
)


@st.composite
def advices(draw: st.DrawFn) -> Advice:
    """An advice as the agent and the host make it: a failure says where; only a compiled one
    names what it was compiled for."""
    status = draw(st.sampled_from(["ok", *FAILURES]))
    candidates = tuple(draw(st.lists(policies(), max_size=4)))
    compiled_any = any(p.was_compiled for p in candidates)
    target = draw(st.sampled_from(TARGETS)) if compiled_any and draw(st.booleans()) else None
    return Advice(
        status=status,
        message=draw(text),
        path=draw(paths),
        line=draw(lines),
        jax_version=draw(st.none() | st.sampled_from(["0.4.30", "0.10.2", "0.12.0.1"])),
        platform=draw(st.none() | st.sampled_from(["cpu", "tpu"])),
        python=draw(st.none() | text),
        policies=candidates,
        names=tuple(draw(st.lists(text, max_size=3))),
        example=draw(st.none() | text),
        error_path=None if status == "ok" else draw(paths),
        error_line=None if status == "ok" else draw(st.none() | lines),
        duration_s=draw(st.none() | seconds),
        timings=tuple(draw(st.dictionaries(text, st.one_of(sizes, seconds), max_size=3)).items()),
        selector=draw(
            st.none()
            | st.builds(
                kept.Selector, text.filter(bool), st.none() | keys, st.lists(keys, max_size=3).map(tuple)
            )
        ),
        setting=draw(
            st.none() | st.builds(kept.Setting, paths, lines, st.integers(0, 200), st.integers(0, 200), text)
        ),
        setting_note=draw(st.none() | text),
        notes=tuple(draw(st.lists(text, max_size=2))),
        target=parse_target(target, draw(st.sampled_from(["--target", "[tool.jax-lsp] target"])))
        if target
        else None,
        run=draw(st.none() | st.builds(DeviceRuns, st.none() | text, st.none() | text, st.none() | text)),
        fit_check=draw(st.none() | st.builds(kept.FitCheck, st.lists(text, max_size=3).map(tuple), seconds)),
        user_call=draw(st.none() | user_calls),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(advices(), st.sampled_from([ROOT, None]), st.none() | sizes)
def test_every_field_reads_back_through_the_json(advice, root, budget):
    written = json.loads(json.dumps(advice.to_contract(root, budget)))
    assert Advice.from_contract(written, root=root) == advice


def test_a_library_sites_user_call_reads_back_where_its_value_is():
    """The case the round trip lost: the user's call of a site in a library (its value's place,
    its path relative in the JSON)."""
    call = UserCall(
        "/project/train.py", 12, 30, 13, 4, "gradient_checkpointing", '"recompute"', "hnn.Stacked.init", False
    )
    advice = Advice("ok", "", "/elsewhere/haliax/nn/scan.py", 88, user_call=call)
    written = json.loads(json.dumps(advice.to_contract(ROOT)))
    assert written["user_call"]["path"] == "train.py"
    assert (
        written["user_call"]["column"],
        written["user_call"]["end_line"],
        written["user_call"]["end_column"],
    ) == (30, 13, 4)
    assert Advice.from_contract(written, root=ROOT).user_call == call

"""The step's peak: the estimate from the traced step (liveness, scans), and --compile's
figures, which are JAX's own memory_analysis() of the same jit(grad)."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
import textwrap

import pytest

from jax_lsp.trace.advisor.contract import policy_json
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, advise_fixture, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")
jnp = jax.numpy
checkpoint_name = pytest.importorskip("jax.ad_checkpoint").checkpoint_name

from jax_lsp.trace_agent.advisor.candidates import Candidate  # noqa: E402
from jax_lsp.trace_agent.advisor.driver import advise_one, candidate_jaxpr  # noqa: E402
from jax_lsp.trace_agent.advisor.forward import trace_forward  # noqa: E402
from jax_lsp.trace_agent.advisor.jaxpr import open_jaxpr  # noqa: E402
from jax_lsp.trace_agent.advisor.peak import NO_PEAK, _peak, _used, estimate_peak, step_function  # noqa: E402
from jax_lsp.trace_agent.advisor.residuals import Frames  # noqa: E402
from jax_lsp.trace_agent.advisor.site import Marker  # noqa: E402

PEAK_STACK = ADVISOR_FIXTURES / "peak_stack.py"
ON_DEVICE = [  # the peak_stack candidates compared with the compiled step (no offloading)
    "nothing_saveable",
    "dots_saveable",
    "everything_saveable",
    "save_only_these_names('z', 'act')",
    "save_only_these_names('act')",
]
MIB = 2**20


def _module(path):
    spec = importlib.util.spec_from_file_location(f"_peak_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_chain_of_values_peaks_at_two_of_them_not_their_sum():
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)  # 4 MiB

    def chain(x):
        for _ in range(10):
            x = jnp.tanh(x)
        return x

    # each value dies where the next is made; the argument and the result are not temporaries
    assert estimate_peak(chain, [x]) == 2 * 4 * MIB


def test_a_scan_holds_its_stacked_outputs_and_one_iteration_of_its_body():
    n, length = 1024, 16
    xs = jax.ShapeDtypeStruct((length, n), jnp.float32)

    def stacked(xs, start):
        def body(c, x):
            a = jnp.tanh(x)
            return c + a, a * 2.0

        c, ys = jax.lax.scan(body, start, xs)
        return ys * 2.0, c

    # the stacked ys and the body's one temporary (tanh, which two of its outputs read: XLA
    # holds it rather than compute it twice); the body's outputs are the slices of the outer ones
    assert estimate_peak(stacked, [xs, jax.ShapeDtypeStruct((n,), jnp.float32)]) == (length + 1) * n * 4


def _temp_bytes(fn, args):
    return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes


cpu_only = pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's bfloat16 widening")


@cpu_only
@pytest.mark.parametrize("loop", ["scan", "while"])
def test_on_cpu_a_loops_bfloat16_inputs_are_held_as_float32_copies(loop):
    # the same loop in bfloat16 and in float16: XLA:CPU widens only the former, hoisting a
    # float32 copy of the input every iteration reads (a scan's stacked xs, a while's const)
    n, length = 256 * 1024, 16

    def scanned(xs):
        def body(c, x):
            return c + jnp.tanh(x).astype(jnp.float32), None

        return jax.lax.scan(body, jnp.zeros((n,), jnp.float32), xs)[0]

    def looped(w, x, count):
        def body(carry):
            i, c = carry
            return i + 1, jnp.tanh(w @ c)

        return jax.lax.while_loop(lambda carry: carry[0] < count, body, (0, x))[1]

    def case(dtype):
        if loop == "scan":
            return scanned, [jax.ShapeDtypeStruct((length, n), dtype)]
        w, x = jax.ShapeDtypeStruct((1024, 1024), dtype), jax.ShapeDtypeStruct((1024,), dtype)
        return looped, [w, x, jax.ShapeDtypeStruct((), jnp.int32)]

    (fn, wide), (_, narrow) = case(jnp.bfloat16), case(jnp.float16)
    copy = 2 * wide[0].size * 2  # the float32 copy of the bfloat16 input
    # and the while body's bfloat16 matmul output (w @ c), held in float32 too
    widened_dot = 0 if loop == "scan" else 1024 * 2
    assert estimate_peak(fn, wide) - estimate_peak(fn, narrow) == copy + widened_dot
    assert _temp_bytes(fn, wide) >= copy
    if loop == "scan":  # float16 slicing keeps its width on CPU
        assert _temp_bytes(fn, narrow) < copy / 4


@cpu_only
def test_on_cpu_an_input_of_nested_loops_is_copied_once():
    # XLA hoists the widening out of every loop the input does not change in: one copy
    def nested(w, x):
        def inner(d, _):
            return jnp.tanh(w * d), None

        def outer(c, _):
            return jax.lax.scan(inner, c, None, length=2)[0], None

        return jax.lax.scan(outer, x, None, length=2)[0]

    def args(dtype):
        return [jax.ShapeDtypeStruct((1024, 1024), dtype)] * 2

    copy = 1024 * 1024 * 4
    assert estimate_peak(nested, args(jnp.bfloat16)) - estimate_peak(nested, args(jnp.float16)) == copy
    assert copy <= _temp_bytes(nested, args(jnp.bfloat16)) < 2 * copy


@cpu_only
def test_on_cpu_a_scanned_bfloat16_steps_estimate_counts_the_widened_residuals():
    # a scanned training step: the forward scan's stacked bfloat16 residuals, read by the
    # backward scan, are copied to float32 before it (each freed once copied)
    ws = jax.ShapeDtypeStruct((16, 512, 512), jnp.bfloat16)
    x = jax.ShapeDtypeStruct((64, 512), jnp.bfloat16)

    def loss(ws, x):
        def layer(h, w):
            return jnp.tanh(h @ w), None

        h, _ = jax.lax.scan(jax.checkpoint(layer, policy=jax.checkpoint_policies.everything_saveable), x, ws)
        return jnp.mean(h.astype(jnp.float32) ** 2)

    step = jax.grad(loss, argnums=(0, 1))
    compiled = _temp_bytes(step, [ws, x])
    assert abs(estimate_peak(step, [ws, x]) - compiled) <= 0.1 * compiled
    jaxpr = _used(open_jaxpr(jax.make_jaxpr(step)(ws, x)))
    as_traced = _peak(jaxpr, {*jaxpr.invars, *jaxpr.constvars, *jaxpr.outvars}, on_cpu=lambda: False).bytes
    assert as_traced < 0.2 * compiled


def test_no_backend_starts_before_a_fork_nor_for_a_step_without_a_bfloat16_loop_input():
    # the agent warms up before forking its children, and a backend started then hangs them:
    # the estimate asks JAX for the backend only for a bfloat16 loop input
    script = textwrap.dedent(
        """
        import jax, jax.numpy as jnp
        from jax._src import xla_bridge
        from jax_lsp.trace_agent.advisor.driver import warm_up
        from jax_lsp.trace_agent.advisor.peak import estimate_peak

        def stacked(dtype):
            def fn(xs):
                return jax.lax.scan(lambda c, x: (c + jnp.tanh(x), None), jnp.zeros(8, dtype), xs)[0]
            return fn, [jax.ShapeDtypeStruct((4, 8), dtype)]

        warm_up()
        started = [bool(xla_bridge._backends)]
        estimate_peak(*stacked(jnp.float32))
        started.append(bool(xla_bridge._backends))
        estimate_peak(*stacked(jnp.bfloat16))
        print(started + [bool(xla_bridge._backends)])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["[False,", "False,", "True]"], done.stderr[-2000:]


def _marked_stack(ws, x, tokens):
    policy = Marker(jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def layer(h, w):
        a = checkpoint_name(jnp.tanh(h @ w), "act")
        return jnp.sin(a) @ w.T + h

    h, _ = jax.lax.scan(lambda h, w: (jax.checkpoint(layer, policy=policy)(h, w), None), x, ws)
    return jnp.mean(h[tokens] ** 2)


STACK_ARGS = [
    jax.ShapeDtypeStruct((4, 64, 64), jnp.float32),
    jax.ShapeDtypeStruct((32, 64), jnp.float32),
    jax.ShapeDtypeStruct((8,), jnp.int32),
]
CANDIDATES = [
    Candidate("current", None, current=True),
    Candidate("nothing_saveable", jax.checkpoint_policies.nothing_saveable),
    Candidate("everything_saveable", jax.checkpoint_policies.everything_saveable),
    Candidate("save_only_these_names('act')", jax.checkpoint_policies.save_only_these_names("act")),
]


@pytest.mark.parametrize("candidate", CANDIDATES, ids=lambda c: c.text)
def test_the_peak_read_from_the_residual_trace_is_the_step_traced_alone(candidate):
    # the integer tokens are closed over: the step differentiates the weights and x, every leaf
    leaves = STACK_ARGS[:2]
    forward = trace_forward(lambda ws, x: _marked_stack(ws, x, jnp.arange(8)), leaves)
    entry = advise_one(candidate, forward, leaves, ("ws", "x"), Frames(None, []), positional=2)
    step = step_function(forward, candidate_jaxpr(candidate, forward), leaves, 2)
    assert entry["peak_bytes"] == estimate_peak(step, leaves) > 0
    # going on into the backward pass changes nothing else in the entry, reasons included
    alone = advise_one(candidate, forward, leaves, ("ws", "x"), Frames(None, []))
    assert {key: value for key, value in entry.items() if key not in NO_PEAK} == alone


@pytest.mark.parametrize("candidate", CANDIDATES, ids=lambda c: c.text)
def test_an_integer_leaf_does_not_need_the_step_traced_apart(candidate):
    """Token ids have no gradient: the step differentiates every floating-point leaf, and its peak
    is read from the same trace, equal to the step traced alone."""
    forward = trace_forward(_marked_stack, STACK_ARGS)
    names = ("ws", "x", "tokens")
    entry = advise_one(candidate, forward, STACK_ARGS, names, Frames(None, []), positional=3)
    step = step_function(forward, candidate_jaxpr(candidate, forward), STACK_ARGS, 3)
    assert entry["peak_bytes"] == estimate_peak(step, STACK_ARGS) > 0


def test_a_step_that_leaves_a_float_argument_undifferentiated_is_traced_apart():
    forward = trace_forward(_marked_stack, STACK_ARGS)
    # only the first argument is positional: the step differentiates ws, not x
    entry = advise_one(
        CANDIDATES[0], forward, STACK_ARGS, ("ws", "x", "tokens"), Frames(None, []), positional=1
    )
    assert "peak_bytes" not in entry  # the driver traces the step (ws only) on its own


@pytest.fixture(scope="module")
def compiled_stack(service):
    return advise_fixture(
        service,
        "peak_stack",
        *ON_DEVICE,
        compile=True,
        options=TraceOptions(timeout=300),
    )


def test_compiled_figures_are_jaxs_memory_analysis_of_the_same_jit_grad(compiled_stack):
    skip_unless_agent_runs_this_jax()
    assert compiled_stack.ok, compiled_stack.message
    model = _module(PEAK_STACK)
    args = model.example()["args"]
    policies = jax.checkpoint_policies

    def under(policy):
        def stack(ws, x):
            h, _ = jax.lax.scan(jax.checkpoint(model.layer, policy=policy), x, ws)
            return jnp.mean(h**2)

        return stack

    for entry, fn in (
        (compiled_stack.current, model.stack),
        (
            next(p for p in compiled_stack.policies if p.policy.endswith("everything_saveable")),
            under(policies.everything_saveable),
        ),
    ):
        stats = jax.jit(jax.grad(fn, argnums=(0, 1))).lower(*args).compile().memory_analysis()
        assert entry.compiled is not None and entry.compile_s > 0
        assert entry.compiled.temp_bytes == stats.temp_size_in_bytes
        assert entry.compiled.argument_bytes == stats.argument_size_in_bytes
        assert entry.compiled.output_bytes == stats.output_size_in_bytes
        assert entry.compiled.alias_bytes == stats.alias_size_in_bytes


def test_the_estimate_is_within_30_percent_of_compiled_and_orders_as_it(compiled_stack):
    entries = [p for p in compiled_stack.policies if p.error is None]
    assert len(entries) >= len(ON_DEVICE)
    for entry in entries:
        assert entry.compiled.temp_bytes >= 8 * MIB
        assert abs(entry.estimate_error) <= 0.3, (entry.policy, entry.peak_bytes, entry.compiled)
    for a, b in itertools.combinations(entries, 2):
        compiled = a.compiled.temp_bytes - b.compiled.temp_bytes
        if abs(compiled) > 0.05 * max(a.compiled.temp_bytes, b.compiled.temp_bytes):  # not a tie
            assert (a.peak_bytes - b.peak_bytes) * compiled > 0, (a.policy, b.policy)


def test_a_step_that_does_not_compile_is_listed_with_its_error_and_never_suggested(service):
    path = ADVISOR_FIXTURES / "unlowerable.py"
    advice = advise_fixture(
        service,
        "unlowerable",
        "nothing_saveable",
        compile=True,
    )
    assert advice.ok, advice.message
    assert advice.compiled and len(advice.policies) == 2
    for entry in advice.policies:
        assert entry.compiled is None and entry.peak_bytes
        assert "gpu_only_kernel" in entry.compile_error
        assert advice.budgeted_bytes(entry) is None
        assert policy_json(entry, None)["compiled"] is None
    assert advice.suggest(2**40) is None
    # without --compile the same steps have their estimates and are suggested
    plain = advise(service, path, line_of(path), example="unlowerable.py:example", root=ADVISOR_FIXTURES)
    assert not plain.compiled and plain.suggest(2**40) is not None


def test_a_scanned_stack_whose_estimate_is_within_its_target_is_not_doubted(compiled_stack):
    # no elementwise chain outside the scan large enough to put the estimate 30% over
    for entry in (p for p in compiled_stack.policies if p.error is None):
        fusible = entry.peak_fusible_bytes
        assert fusible is not None and fusible / (entry.peak_bytes - fusible) <= 0.3, entry.policy

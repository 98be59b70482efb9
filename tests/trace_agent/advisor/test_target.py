"""`advise --target`: each candidate compiled for a TPU slice from its topology, with no TPU.

The compile needs libtpu in the agent's interpreter. The suite's own venv has none (libtpu
would slow every JAX start-up that does not pin the CPU): these tests run the agent in
JAX_LSP_LIBTPU_PYTHON, a venv with ``jax[tpu]`` that `.ci/libtpu.sh` makes, and skip
without it (with JAX_LSP_EXPECT_LIBTPU=1, as that script sets, they fail instead). The figures
are compared with a direct ``jax.experimental.topologies`` compile run in that interpreter. The
message for an interpreter without libtpu is provoked for real, in the suite's own."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from jax_lsp.trace.advisor.contract import target_json
from jax_lsp.trace.advisor.report import format_markdown
from jax_lsp.trace.advisor.table import short_policy
from jax_lsp.trace.compile_target import GiB, parse_target
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.service import site_params
from tests.agent import ADVISOR_FIXTURES, AGENT_PYTHON, advise_fixture, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

COMPARED = [  # the candidates compiled here too: on the device, by name, and offloading to the host
    "dots_saveable",
    "save_only_these_names('act')",
    "offload_dot_with_no_batch_dims('device', 'pinned_host')",
]
OPTIONS = TraceOptions(timeout=600)


def _compiled_for(target, service, python, name, *policies):
    """The fixture ``name``'s advice, each candidate compiled for ``target`` in ``python``."""
    return advise_fixture(
        service, name, *policies, compile=True, target=target, interpreter=python, options=OPTIONS
    )


def _has_libtpu(python: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('libtpu') is None)"
    return subprocess.run([python, "-c", probe], check=False).returncode == 0


# JAX's own compile for the topology, as MaxText's train_compile.py does it: the fixture's model
# with each policy, its arguments replicated on the slice's chips.
DIRECT = textwrap.dedent(
    """
    import json, os, sys
    os.environ.update(TPU_SKIP_MDS_QUERY="1", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    import jax
    jax.config.update("jax_platforms", "cpu")
    from jax.experimental import topologies
    from jax.sharding import NamedSharding, PartitionSpec
    sys.path.insert(0, sys.argv[1])
    import peak_stack as model
    topology_name, bounds, policies = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    topology = topologies.get_topology_desc(platform="tpu", topology_name=topology_name,
        chip_config_name="default", chips_per_host_bounds=tuple(bounds), num_slices=1)
    mesh = topologies.make_mesh(topology, (len(topology.devices),), ("chips",))
    placed = NamedSharding(mesh, PartitionSpec())
    args = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=placed),
                        model.example()["args"])
    found = {}
    for text in policies:
        policy = eval(text, vars(jax.checkpoint_policies))
        def stack(ws, x):
            h, _ = jax.lax.scan(jax.checkpoint(model.layer, policy=policy), x, ws)
            return jax.numpy.mean(h**2)
        m = jax.jit(jax.grad(stack, argnums=(0, 1))).lower(*args).compile().memory_analysis()
        found[text] = {"temp_bytes": m.temp_size_in_bytes, "argument_bytes": m.argument_size_in_bytes,
                       "output_bytes": m.output_size_in_bytes, "alias_bytes": m.alias_size_in_bytes,
                       "peak_bytes": m.peak_memory_in_bytes, "host_temp_bytes": m.host_temp_size_in_bytes}
    print(json.dumps(found))
    """
)


def _memory(compiled) -> dict:
    """The compiled figures that JAX's ``memory_analysis()`` gives, without the step's cost
    (tests/trace_agent/advisor/test_step_cost.py checks that)."""
    return {key: value for key, value in compiled.to_json().items() if key != "cost"}


def _direct(python: str, topology: str, bounds: list[int], policies: list[str]) -> dict[str, dict[str, int]]:
    done = subprocess.run(
        [python, "-c", DIRECT, str(ADVISOR_FIXTURES), topology, json.dumps(bounds), json.dumps(policies)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["v5e-1", "v5e-4"])
def test_compiled_for_a_topology_the_figures_are_jaxs_own_topology_compile(service, libtpu_python, name):
    target = parse_target(name)
    advice = _compiled_for(target, service, libtpu_python, "peak_stack", *COMPARED)
    assert advice.ok, advice.message
    assert advice.on_tpu and advice.target == target
    params = target.to_params()
    assert params is not None
    direct = _direct(
        libtpu_python, str(params["topology_name"]), list(params["chips_per_host_bounds"]), COMPARED
    )
    for text in COMPARED:
        entry = next(p for p in advice.policies if short_policy(p.policy) == text)
        assert entry.compiled is not None, (text, entry.compile_error)
        device_peak = direct[text]["peak_bytes"] - direct[text]["host_temp_bytes"]
        expected = {**direct[text], "device_peak_bytes": device_peak, "sharding": "replicated"}
        assert _memory(entry.compiled) == expected, text
        assert advice.fits(entry) is True
    offload = next(p for p in advice.policies if short_policy(p.policy).startswith("offload_dot"))
    assert offload.compiled is not None and offload.compiled.host_temp_bytes
    assert target_json(advice)["sharding"] == "replicated"  # type: ignore[index]


def test_a_step_larger_than_the_chip_does_not_fit_by_what_xla_says_and_is_no_error(service, libtpu_python):
    advice = _compiled_for(parse_target("v5e-1"), service, libtpu_python, "too_large_stack", "dots_saveable")
    assert advice.ok, advice.message
    for entry in advice.policies:
        assert entry.compile_error is None and entry.exhausted is not None, entry
        assert entry.exhausted.available_bytes == int(15.75 * GiB)
        assert entry.exhausted.required_bytes > 32 * GiB  # the parameters and their gradients
        assert advice.fits(entry) is False and advice.over_bytes(entry) > 16 * GiB
    assert advice.suggest(2**50) is None


@pytest.mark.parametrize("model", ["peak_stack", "concrete_stack"])
def test_the_compile_process_opens_no_device(service, libtpu_python, model):
    """The agent's answer names the backends its process started or tried: the CPU's, never the
    TPU's, also where the example makes arrays (which starts a backend as it runs)."""
    target = parse_target("v5e-1")
    path = ADVISOR_FIXTURES / f"{model}.py"
    params = {
        **site_params(path, line_of(path), None, ADVISOR_FIXTURES, None),
        "example": f"{model}.py:example",
        "policies": ["dots_saveable"],
        "compile": True,
        "target": target.to_params(),
    }
    answer = service.submit(
        "advise", params, OPTIONS, interpreter=libtpu_python, cwd=str(ADVISOR_FIXTURES), answer=lambda a: a
    ).result()
    assert answer["status"] == "ok", answer
    assert answer["policies"][-1]["compiled"]["peak_bytes"] > 0
    assert answer["opened_platforms"] == ["cpu"]


def test_without_libtpu_a_tpu_target_says_how_to_get_it_and_answers_the_estimate(service):
    if _has_libtpu(AGENT_PYTHON):
        pytest.skip(f"{AGENT_PYTHON} has libtpu: the message is for an interpreter without it")
    advice = advise_fixture(
        service,
        "peak_stack",
        "dots_saveable",
        compile=True,
        target=parse_target("v5e-1"),
    )
    assert advice.ok, advice.message
    assert not advice.compiled and all(p.peak_bytes for p in advice.policies)
    (note,) = [n for n in advice.notes if "libtpu" in n]
    assert "pip install 'jax[tpu]'" in note and "Linux x86-64" in note and "the estimate" in note


def test_on_several_chips_the_examples_own_shardings_are_used(service, libtpu_python):
    advice = _compiled_for(parse_target("v5e-4"), service, libtpu_python, "sharded_stack", "nothing_saveable")
    assert advice.ok, advice.message
    weights, batch = 4 * 512 * 512 * 4, 1024 * 512 * 4
    for entry in advice.policies:
        assert entry.compiled is not None and entry.compiled.sharding == "example", entry
        assert entry.compiled.argument_bytes == weights + batch // 4  # the batch split over 4 chips
    assert "inputs sharded as the example gives them" in format_markdown(advice, None)


OFFLOADED = textwrap.dedent(
    """
    import json, os, sys
    os.environ.update(TPU_SKIP_MDS_QUERY="1", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    import jax
    jax.config.update("jax_platforms", "cpu")
    from jax.experimental import topologies
    from jax.sharding import NamedSharding, PartitionSpec
    sys.path.insert(0, sys.argv[1])
    import offload_stack as model
    topology = topologies.get_topology_desc(platform="tpu", topology_name="v5e:1x1",
        chip_config_name="default", chips_per_host_bounds=(1, 1, 1), num_slices=1)
    placed = NamedSharding(topologies.make_mesh(topology, (1,), ("chips",)), PartitionSpec())
    args = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=placed) for s in model.example()["args"]]
    m = jax.jit(jax.grad(model.stack, argnums=(0, 1))).lower(*args).compile().memory_analysis()
    print(json.dumps({"peak_bytes": m.peak_memory_in_bytes, "host_temp_bytes": m.host_temp_size_in_bytes}))
    """
)


def test_an_offloading_step_whose_host_temporaries_exceed_the_chip_fits(service, libtpu_python):
    """XLA compiles the offloading stack for v5e-1 though its peak_memory_in_bytes (17.5 GiB) is
    over the chip's 15.75 GiB: 16 GiB of it are host temporaries. The advice says it fits, by the
    device's share (tools/tpu_round.sh offload runs it on the chip)."""
    advice = _compiled_for(parse_target("v5e-1"), service, libtpu_python, "offload_stack", "nothing_saveable")
    assert advice.ok, advice.message
    entry = advice.current
    assert entry is not None and entry.compiled is not None, entry
    done = subprocess.run(
        [libtpu_python, "-c", OFFLOADED, str(ADVISOR_FIXTURES)], capture_output=True, text=True, timeout=600
    )
    direct = json.loads(done.stdout.strip().splitlines()[-1])
    assert (entry.compiled.peak_bytes, entry.compiled.host_temp_bytes) == tuple(direct.values())
    assert entry.compiled.peak_bytes > int(15.75 * GiB) > 15 * GiB >= entry.compiled.host_temp_bytes - GiB
    assert advice.fits(entry) is True
    assert entry.compiled.device_peak_bytes == entry.compiled.peak_bytes - entry.compiled.host_temp_bytes


FSDP = textwrap.dedent(
    """
    import json, os, sys
    os.environ.update(TPU_SKIP_MDS_QUERY="1", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    import jax
    jax.config.update("jax_platforms", "cpu")
    from jax.experimental import topologies
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
    sys.path.insert(0, sys.argv[1])
    import fsdp_stack as model
    topology = topologies.get_topology_desc(platform="tpu", topology_name=sys.argv[2],
        chip_config_name=sys.argv[3], chips_per_host_bounds=tuple(json.loads(sys.argv[4])), num_slices=1)
    chips = len(topology.devices)
    mesh = Mesh(topologies.make_mesh(topology, (chips,), ("fsdp",)).devices, ("fsdp",),
                axis_types=(AxisType.Explicit,))
    weights = NamedSharding(mesh, P(None, "fsdp", None))
    ws = (jax.ShapeDtypeStruct((model.L, model.D, model.F), "bfloat16", sharding=weights),
          jax.ShapeDtypeStruct((model.L, model.F, model.D), "bfloat16", sharding=weights))
    x = jax.ShapeDtypeStruct((model.B, model.T, model.D), "bfloat16", sharding=NamedSharding(mesh, P("fsdp")))
    jax.set_mesh(mesh)
    found = {}
    for text in json.loads(sys.argv[5]):
        policy = eval(text, vars(jax.checkpoint_policies))
        def stack(ws, x):
            h, _ = jax.lax.scan(jax.checkpoint(model.layer, policy=policy), x, ws)
            return jax.numpy.mean(h.astype("float32") ** 2)
        m = jax.jit(jax.grad(stack, argnums=(0, 1))).lower(ws, x).compile().memory_analysis()
        found[text] = {"temp_bytes": m.temp_size_in_bytes, "argument_bytes": m.argument_size_in_bytes,
                       "output_bytes": m.output_size_in_bytes, "alias_bytes": m.alias_size_in_bytes,
                       "peak_bytes": m.peak_memory_in_bytes, "host_temp_bytes": m.host_temp_size_in_bytes}
    print(json.dumps(found))
    """
)


@pytest.mark.parametrize("name", ["v5e-8", "v5p-64"])
def test_an_fsdp_example_on_jax_make_mesh_has_the_figures_of_jaxs_own_compile_per_chip(
    service, libtpu_python, name
):
    """The example builds its mesh with `jax.make_mesh` over every device it sees, as a training
    script does: the advise child sees as many devices as the target has chips (8, or 32 for the
    v5p-64 slice, from this CPU machine), and each chip's figures are those of JAX's own compile
    for the topology with the same mesh."""
    target = parse_target(name)
    policies = ["dots_saveable", "nothing_saveable"]
    advice = _compiled_for(target, service, libtpu_python, "fsdp_stack", *policies)
    assert advice.ok, advice.message
    params = target.to_params()
    assert params is not None
    direct = subprocess.run(
        [
            libtpu_python,
            "-c",
            FSDP,
            str(ADVISOR_FIXTURES),
            str(params["topology_name"]),
            str(params["chip_config_name"]),
            json.dumps(params["chips_per_host_bounds"]),
            json.dumps(policies),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    figures = json.loads(direct.stdout.strip().splitlines()[-1])
    for text in policies:
        entry = next(p for p in advice.policies if short_policy(p.policy) == text)
        assert entry.compiled is not None, (text, entry.compile_error)
        expected = {**figures[text], "device_peak_bytes": figures[text]["peak_bytes"], "sharding": "example"}
        assert _memory(entry.compiled) == expected, text
    assert not [n for n in advice.notes if "mesh" in n or "replicated" in n]


def test_a_mesh_smaller_than_the_slice_is_said_and_compiled_on_part_of_it(service, libtpu_python):
    """sharded_stack's mesh has 4 devices: for v5e-8 its step is compiled over 4 of the 8 chips,
    sharded as the example gives it, and the advice says so (it was replicated, silently)."""
    advice = _compiled_for(parse_target("v5e-8"), service, libtpu_python, "sharded_stack", "nothing_saveable")
    assert advice.ok, advice.message
    weights, batch = 4 * 512 * 512 * 4, 1024 * 512 * 4
    for entry in advice.policies:
        assert entry.compiled is not None and entry.compiled.sharding == "example", entry
        assert entry.compiled.argument_bytes == weights + batch // 4
    (note,) = [n for n in advice.notes if "mesh" in n]
    assert "has 4 devices and v5e-8 has 8 chips" in note and "over 4 of them" in note


def test_arguments_on_no_mesh_are_replicated_and_it_is_said(service, libtpu_python):
    advice = _compiled_for(parse_target("v5e-4"), service, libtpu_python, "peak_stack", "nothing_saveable")
    assert advice.ok, advice.message
    (note,) = [n for n in advice.notes if "replicated" in n]
    assert "are on no mesh of the example's: they were replicated on each of the 4 chips" in note

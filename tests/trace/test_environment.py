"""JAX runs on the CPU in every process jax-lsp starts, whatever the user's environment asks for."""

from jax_lsp.trace.environment import CPU_ONLY, child_environment, device_environment
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.service import AgentProcess
from tests.agent import POLICY_MODULE, AgentTraceService, line_of, needs_linux

# What a TPU VM or a GPU machine's shell may hold: the user's job's accelerator.
ACCELERATOR = {"JAX_PLATFORMS": "tpu", "JAX_PLATFORM_NAME": "gpu", "CUDA_VISIBLE_DEVICES": "0"}


def test_the_child_environment_keeps_jax_off_every_accelerator():
    environment = child_environment({**ACCELERATOR, "PATH": "/usr/bin", "XLA_FLAGS": "--xla_dump_to=x"})
    assert environment == {**CPU_ONLY, "PATH": "/usr/bin", "XLA_FLAGS": "--xla_dump_to=x"}
    assert CPU_ONLY == {"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", "TPU_SKIP_MDS_QUERY": "1"}


def test_the_device_environment_is_the_users_and_allocates_a_gpu_as_it_goes():
    assert device_environment({**ACCELERATOR}) == {**ACCELERATOR, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    said = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    assert device_environment(said) == said


@needs_linux
def test_a_trace_runs_on_the_cpu_where_the_environment_asks_for_an_accelerator(write, monkeypatch):
    for name, value in ACCELERATOR.items():
        monkeypatch.setenv(name, value)
    path = write("model.py", POLICY_MODULE.format(extra=""))
    service = AgentTraceService()
    try:
        result = service.trace(path, line_of(path, "def policy"), options=TraceOptions(timeout=60))
        agent = service.agent()
        assert isinstance(agent, AgentProcess)
        with open(f"/proc/{agent.proc.pid}/environ", "rb") as handle:
            started_with = dict(
                entry.decode().split("=", 1) for entry in handle.read().split(b"\0") if b"=" in entry
            )
    finally:
        service.shutdown()
    assert result.ok, result.message
    assert result.platform == "cpu"
    assert {name: started_with.get(name) for name in CPU_ONLY} == CPU_ONLY
    assert "JAX_PLATFORM_NAME" not in started_with

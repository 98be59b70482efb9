"""A device that is busy, cannot start or runs out of memory is a sentence, never a traceback."""

from jax_lsp.trace.options import TraceOptions
from tests.agent import POLICY_MODULE, AgentTraceService, line_of, needs_linux, tpu_lock_held

pytestmark = needs_linux


def _no_traceback(message: str) -> None:
    assert "Traceback" not in message and "Internal error" not in message, message


def test_memory_that_runs_out_as_the_backend_starts_is_a_sentence(service, write):
    path = write("model.py", POLICY_MODULE.format(extra=""))
    result = service.trace(path, line_of(path, "def policy"), options=TraceOptions(memory_mb=128))
    # a sentence whichever way the release fails (jax 0.12 aborts in native code: `crashed`)
    assert result.status in ("memory", "crashed"), result.message
    assert "128 MiB" in result.message
    _no_traceback(result.message)


def test_code_that_asks_for_a_busy_tpu_is_told_so(libtpu_python, write):
    """The project's code asks JAX for the TPU while another process holds it: one sentence, and
    JAX's lock-file error is read, not shown."""
    write("settings.py", 'import jax\n\njax.config.update("jax_platforms", "tpu")\n')
    path = write("model.py", POLICY_MODULE.format(extra="import settings"))
    service = AgentTraceService()
    try:
        with tpu_lock_held():
            result = service.trace(
                path, line_of(path, "def policy"), interpreter=libtpu_python, options=TraceOptions(timeout=60)
            )
    finally:
        service.shutdown()
    assert result.status == "device_busy", result.message
    assert result.message.startswith("The TPU is in use by another process (libtpu admits one)")
    assert "lockfile" not in result.message
    _no_traceback(result.message)

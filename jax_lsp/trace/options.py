"""The limits every request to the trace agent runs under, and their defaults: stated only here.

The command line's options (`cli/trace_arguments.py`), the server's settings and the editor's
(`vscode-client/package.json`, held to these by `tests/cli/test_trace_defaults.py`) default to
`TraceOptions()`. The agent has no defaults of its own: every request carries these."""

from __future__ import annotations

from jax_lsp.core.record import Record


class TraceOptions(Record):
    """A request's wall-clock timeout (seconds) and memory limit (MiB, ``RLIMIT_DATA``: what the
    process writes, not the address space it reserves); and those of each candidate's compile
    (``advise --compile``), each in a process of its own: XLA compiles a large model's step in
    gigabytes and minutes (recurrentgemma's: 3.2 GB and 50 s on a CPU), far past what tracing
    it takes."""

    __slots__ = ("timeout", "memory_mb", "compile_timeout", "compile_memory_mb")
    timeout: float
    memory_mb: int
    compile_timeout: float
    compile_memory_mb: int

    def __init__(
        self,
        timeout: float = 20.0,
        memory_mb: int = 4096,
        compile_timeout: float = 300.0,
        compile_memory_mb: int = 12288,
    ) -> None:
        self._assign(timeout, memory_mb, compile_timeout, compile_memory_mb)

    def to_params(self) -> dict[str, float | int]:
        """The request's parameters that say them, as the agent reads them."""
        return {"timeout": self.timeout, "memory_mb": self.memory_mb}

    def for_compile(self) -> TraceOptions:
        """The options of one candidate's compile: its limits as a request's."""
        return self.replace(timeout=self.compile_timeout, memory_mb=self.compile_memory_mb)

    def for_run(self, candidates: int) -> TraceOptions:
        """The options of the run on the device (``advise --run``), which compiles and runs each
        of ``candidates`` in turn in one process: a compile's memory, a compile's time for each."""
        return self.replace(
            timeout=self.compile_timeout * max(candidates, 1), memory_mb=self.compile_memory_mb
        )

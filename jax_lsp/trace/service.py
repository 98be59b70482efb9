"""Host side of the trace: one warm agent per interpreter, jobs, cancellation, clean shutdown."""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Generic, TypeVar

from jax_lsp.core.jax_facts import facts_for, supported_releases
from jax_lsp.core.notebooks.files import is_notebook
from jax_lsp.core.notebooks.notebook import Notebook, NotebookError
from jax_lsp.trace.environment import child_environment, device_environment
from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.result import TraceResult, TraceStatus

AGENT = Path(__file__).parent.parent / "trace_agent" / "agent.py"
START_TIMEOUT_S = 120.0  # importing jax on a cold disk can be slow
GRACE_S = 10.0  # the agent enforces the timeout; this backstop covers an agent that hangs
INFO_OPTIONS = TraceOptions(timeout=60.0)  # of an `info` request: the agent's platform and memories

Answer = TypeVar("Answer")


def default_cache_dir() -> str:
    return os.path.join(
        tempfile.gettempdir(), f"jax-lsp-trace-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )


class AgentProcess:
    """A running ``agent.py`` in one interpreter, spoken to over JSON lines; JAX runs there, and
    in every process it starts, on the CPU (`child_environment`), unless it is the ``device``
    agent (`device_environment`: ``advise --run``)."""

    def __init__(self, interpreter: str, cwd: str | None = None, device: bool = False):
        self.interpreter = interpreter
        self.hello: dict = {}
        self.info: dict | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._hello_seen = threading.Event()
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.proc = subprocess.Popen(
            [interpreter, str(AGENT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd if cwd and os.path.isdir(cwd) else None,
            env=device_environment() if device else child_environment(),
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr  # the three PIPEs above
        self._to_agent, self._from_agent, self._agent_log = (
            self.proc.stdin,
            self.proc.stdout,
            self.proc.stderr,
        )
        threading.Thread(target=self._read_stdout, name="jax-lsp-trace-out", daemon=True).start()
        threading.Thread(target=self._read_stderr, name="jax-lsp-trace-err", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> TraceResult | None:
        """None once the agent has jax loaded; otherwise the failure, as a result."""
        if not self._hello_seen.wait(timeout):
            self.kill()
            return TraceResult.failure(
                TraceStatus.ERROR,
                f"The trace agent in {self.interpreter} did not start within {timeout:g} s",
                python=self.interpreter,
            )
        if not self.hello.get("ok"):
            message = self.hello.get("error") or (
                f"The trace agent in {self.interpreter} exited before it was ready:\n{self.stderr_tail()}"
            )
            return TraceResult.failure(
                TraceStatus.parse(self.hello.get("status", "error")),
                message,
                python=self.interpreter,
                python_version=self.hello.get("python_version"),
            )
        version = self.hello.get("jax_version")
        if version and not facts_for(version).supported:
            self.kill()
            return TraceResult.failure(
                TraceStatus.ERROR,
                f"jax {version} in {self.interpreter} is older than jax {supported_releases()[0]}, the "
                f"oldest release jax-lsp traces under: upgrade it (`{self.interpreter} -m pip install -U "
                f"'jax>={supported_releases()[0]}'`) or set the `interpreter` setting to a Python with a "
                "newer jax",
                python=self.interpreter,
                python_version=self.hello.get("python_version"),
                jax_version=version,
            )
        return None

    def request(self, method: str, params: dict) -> tuple[int, Future]:
        """Send a request; its future gets the agent's answer (a dict), or a TraceResult when the
        agent cannot answer."""
        future: Future = Future()
        with self._lock:
            request_id = next(self._ids)
            self._pending[request_id] = future
        if not self._send({"id": request_id, "method": method, "params": params}):
            self.settle(request_id, self._died_result())
        return request_id, future

    def cancel(self, request_id: int) -> None:
        self._send({"method": "cancel", "params": {"id": request_id}})

    def close(self, wait: float = 2.0) -> None:
        self._send({"method": "shutdown"})
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.kill()
        for stream in (self._to_agent, self._from_agent, self._agent_log):
            try:
                stream.close()
            except OSError:
                pass

    def kill(self) -> None:
        """The agent dies; its children follow it (PR_SET_PDEATHSIG, and their stdin-less pipes)."""
        if self.alive:
            self.proc.kill()
        self.proc.wait()

    def stderr_tail(self, lines: int = 12) -> str:
        return "\n".join(list(self._stderr)[-lines:])

    def _send(self, message: dict) -> bool:
        try:
            with self._lock:
                self._to_agent.write((json.dumps(message) + "\n").encode("utf-8"))
                self._to_agent.flush()
            return True
        except (OSError, ValueError):  # the agent is gone, or its stdin is closed
            return False

    def settle(self, request_id: int, answer: TraceResult | dict) -> bool:
        """Give the request ``answer`` unless it has one already; True if it had none."""
        with self._lock:
            future = self._pending.pop(request_id, None)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def _died_result(self) -> TraceResult:
        code = self.proc.poll()
        return TraceResult.failure(
            TraceStatus.CRASHED,
            f"The trace agent in {self.interpreter} exited unexpectedly (code {code})"
            + (f":\n{self.stderr_tail()}" if self._stderr else ""),
            python=self.interpreter,
            jax_version=self.hello.get("jax_version"),
        )

    def _read_stdout(self) -> None:
        for raw in self._from_agent:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("event") == "hello":
                self.hello = message
                self._hello_seen.set()
            elif isinstance(message.get("result"), dict):
                request_id = message.get("id")
                if isinstance(request_id, int):  # any other id matches no request
                    self.settle(request_id, message["result"])
        self.proc.wait()
        self._hello_seen.set()
        with self._lock:
            pending = list(self._pending)
        for request_id in pending:
            self.settle(request_id, self._died_result())

    def _read_stderr(self) -> None:
        for raw in self._agent_log:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip())


class TraceJob(Generic[Answer]):
    """A running request: ``result()`` waits for its answer, ``cancel()`` kills it."""

    def __init__(
        self, key: tuple | None, agent: AgentProcess | None, request_id: int | None, future: Future
    ) -> None:
        self.key = key
        self._agent = agent
        self._request_id = request_id
        self.future = future

    def cancel(self) -> None:
        if self._agent is not None and self._request_id is not None and not self.future.done():
            self._agent.cancel(self._request_id)

    def done(self) -> bool:
        return self.future.done()

    def result(self, timeout: float | None = None) -> Answer:
        answer: Answer = self.future.result(timeout)
        return answer


class TraceService:
    """One warm agent per interpreter; a new trace of the same policy cancels the old one."""

    def __init__(self, cache_dir: str | None = None):
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self._agents: dict[tuple[str, bool], AgentProcess] = {}
        self._jobs: dict[tuple, TraceJob] = {}
        self._lock = threading.Lock()
        self._closed = False
        # Python runs atexit handlers on a normal exit: no agent outlives the server.
        self._finalizer = weakref.finalize(self, _close_all, self._agents)
        atexit.register(self._finalizer)

    def agent(
        self, interpreter: str | None = None, cwd: str | None = None, device: bool = False
    ) -> AgentProcess | TraceResult:
        """The warm agent for ``interpreter`` (started on first use), or why there is none;
        ``device``: the one that may open the accelerator (`AgentProcess`)."""
        interpreter = interpreter or sys.executable
        key = (interpreter, device)
        with self._lock:
            if self._closed:
                return TraceResult.failure(TraceStatus.ERROR, "The trace service is shut down")
            agent = self._agents.get(key)
            if agent is None or not agent.alive:
                try:
                    agent = self._agents[key] = AgentProcess(interpreter, cwd, device)
                except OSError as exc:
                    return TraceResult.failure(
                        TraceStatus.ERROR,
                        f"Cannot start the interpreter {interpreter!r}: {exc.strerror or exc}",
                        python=interpreter,
                    )
        failure = agent.wait_ready()
        if failure is not None:
            with self._lock:
                if self._agents.get(key) is agent:
                    del self._agents[key]
            agent.close(wait=0.5)
            return failure
        return agent

    def environment(self, interpreter: str | None = None) -> dict | None:
        """``{"jax_version", "platform", ...}`` of a warm agent, once known; never starts one."""
        with self._lock:
            agent = self._agents.get((interpreter or sys.executable, False))
        if agent is None or not agent.hello.get("ok"):
            return None
        return {"jax_version": agent.hello.get("jax_version"), **(agent.info or {})}

    def probe_environment(self, interpreter: str | None = None, cwd: str | None = None) -> dict | None:
        """Start the agent if needed and ask it for its platform (one short child process)."""
        agent = self.agent(interpreter, cwd)
        if isinstance(agent, AgentProcess) and agent.info is None:
            self.submit(
                "info", {}, INFO_OPTIONS, interpreter=interpreter, cwd=cwd, answer=as_trace_result
            ).result()
        return self.environment(interpreter)

    def submit(
        self,
        method: str,
        params: dict[str, Any],
        options: TraceOptions,
        *,
        interpreter: str | None,
        cwd: str | None,
        answer: Callable[[dict | TraceResult], Answer],
        key: tuple | None = None,
        device: bool = False,
    ) -> TraceJob[Answer]:
        """Send a request to the warm agent of ``interpreter`` (started in ``cwd``), to run under
        ``options``: every request to the agent goes this way. The job's result is what ``answer``
        makes of the agent's answer, or of the `TraceResult` that says why there is none. A job
        with a ``key`` cancels the running job of the same key; ``device``: to the agent that may
        open the accelerator."""
        if key is not None:
            with self._lock:
                previous = self._jobs.get(key)
            if previous is not None:
                previous.cancel()
        agent = self.agent(interpreter, cwd, device)
        if isinstance(agent, TraceResult):
            failed: Future = Future()
            failed.set_result(answer(agent))
            return TraceJob(key, None, None, failed)
        request_id, reply = agent.request(method, {**params, **options.to_params()})
        job: TraceJob[Answer] = TraceJob(key, agent, request_id, Future())
        if key is not None:
            with self._lock:
                self._jobs[key] = job
        timer = threading.Timer(
            options.timeout + GRACE_S, self._overdue, (agent, request_id, options.timeout)
        )
        timer.daemon = True
        timer.start()

        def finished(done: Future) -> None:
            timer.cancel()
            self._forget(job)
            result = answer(done.result())
            if isinstance(result, TraceResult) and result.platform and agent.info is None:
                agent.info = {"platform": result.platform, "device": result.device}
            job.future.set_result(result)

        reply.add_done_callback(finished)
        return job

    def submit_trace(
        self,
        path: str | os.PathLike,
        line: int,
        column: int | None = None,
        *,
        root: str | os.PathLike | None = None,
        import_root: str | os.PathLike | None = None,
        interpreter: str | None = None,
        options: TraceOptions | None = None,
    ) -> TraceJob[TraceResult]:
        """Start tracing the policy at 1-based ``line`` (0-based character ``column``) of ``path``
        (`site_params`); a new trace of the same policy cancels the old one."""
        site = site_params(path, line, column, root, import_root)
        return self.submit(
            "trace",
            {**site, "cache_dir": self.cache_dir},
            options or TraceOptions(),
            interpreter=interpreter,
            cwd=site["root"],
            answer=as_trace_result,
            key=(interpreter or sys.executable, site["path"], line),
        )

    def trace(
        self, path: str | os.PathLike, line: int, column: int | None = None, **request: Any
    ) -> TraceResult:
        """`submit_trace`, waited for."""
        return self.submit_trace(path, line, column, **request).result()

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
        self._finalizer()

    def _forget(self, job: TraceJob) -> None:
        with self._lock:
            if job.key is not None and self._jobs.get(job.key) is job:
                del self._jobs[job.key]

    def _overdue(self, agent: AgentProcess, request_id: int, timeout: float) -> None:
        """The agent missed its own deadline: the request times out, and the agent is killed (and
        so its children)."""
        timed_out = TraceResult.failure(
            TraceStatus.TIMEOUT,
            f"The trace ran past its {timeout:g} s timeout and the agent was killed",
            python=agent.interpreter,
            jax_version=agent.hello.get("jax_version"),
        )
        if agent.settle(request_id, timed_out):
            agent.kill()


def as_trace_result(answer: dict | TraceResult) -> TraceResult:
    """A trace's (or an info request's) answer, typed."""
    return answer if isinstance(answer, TraceResult) else TraceResult.from_json(answer)


def site_params(
    path: str | os.PathLike,
    line: int,
    column: int | None,
    root: str | os.PathLike | None,
    import_root: str | os.PathLike | None,
) -> dict[str, Any]:
    """What a request about the site at 1-based ``line`` (0-based character ``column``) of ``path``
    tells the agent: it runs in ``root`` (the project root; the file's folder when not given) and
    imports ``path`` as a module of ``import_root`` (the folder above its outermost package;
    ``root`` when not given)."""
    path = os.path.realpath(path)
    return {
        "path": path,
        "line": line,
        "column": column,
        "root": os.path.realpath(root) if root else os.path.dirname(path),
        "source": _module_source(path),
        "import_root": os.path.realpath(import_root) if import_root else None,
    }


def _module_source(path: str) -> str | None:
    """A notebook's code cells, joined as the module the agent loads (it reads a .py itself)."""
    if not is_notebook(path):
        return None
    try:
        return Notebook.read(Path(path).read_bytes()).layout.text
    except (OSError, NotebookError):
        return None  # the agent reports the file as it finds it


def _close_all(agents: dict[tuple[str, bool], AgentProcess]) -> None:
    for agent in list(agents.values()):
        agent.close()
    agents.clear()

"""The trace agent: run with ``python agent.py`` in the user's interpreter (stdlib and jax only).

It imports jax once (no backend yet), then forks one child per request, so a trace starts
warm. Each child runs in its own process group under a memory limit (``RLIMIT_DATA``), dies with the
agent (``PR_SET_PDEATHSIG`` on Linux), and is killed at its deadline or on cancel. The agent
exits, killing every child, when its stdin closes, on ``shutdown``, or when its parent dies.

Protocol: JSON lines. The agent first writes ``{"event": "hello", "ok": ...}``; then requests
``{"id", "method": "trace"|"advise"|"info", "params"}`` get ``{"id", "result"}`` (``handlers.py``
answers them; ``params`` always hold the run's ``timeout`` and ``memory_mb``: the host states
them); ``{"method": "cancel", "params": {"id"}}`` kills a running request (which answers
``status: "cancelled"``); ``{"method": "shutdown"}`` ends the agent.

After a child's answer the agent imports what the child used (``preload.py``), so that the next
child starts warmer. Once a preloaded project file changed, the agent lets its running children
finish, then replaces itself with a fresh agent (``exec``, the same process), which runs the
requests read meanwhile: no child forks from a stale module. A child that would run again a
module the agent already ran answers ``restart`` instead (never sent on): its request is run
again by the fresh agent, as the first of those.
"""

import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))
# `python agent.py` puts this folder first on sys.path: drop it, so that the host's modules
# next to this file never shadow the user's own modules.
if sys.path and os.path.realpath(sys.path[0] or os.getcwd()) == _HERE:
    del sys.path[0]

import ctypes  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

PACKAGE = "_jax_lsp_agent"  # this folder, imported as a package under a name no project uses
PR_SET_PDEATHSIG = 1
REPLAY_FD = "JAX_LSP_AGENT_REPLAY_FD"  # of a restarted agent: the requests it must run first
POLL_S = 0.5


def _import_package():
    """Import this folder as the package ``PACKAGE``, so that its modules import each other
    relatively whatever the user's modules are called."""
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(_HERE, "__init__.py"), submodule_search_locations=[_HERE]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)


class Child:
    def __init__(self, request_id, line, pid, fd, deadline, limits):
        self.request_id = request_id
        self.line = line  # the request as it came, to run again after a restart
        self.pid = pid
        self.fd = fd
        self.deadline = deadline
        self.limits = limits
        self.chunks = []
        self.started = time.monotonic()


class Agent:
    def __init__(self, out, handlers, common):
        self.out = out
        self.handlers = handlers
        self.common = common
        self.children = {}
        self.selector = selectors.DefaultSelector()
        self.parent = os.getppid()
        self.pending = b""
        self.info = None
        self.on_result = None  # called with each child's answer once it is sent
        self.stale = None  # before a fork, given its params: why the agent must restart first, or None
        self.explain = None  # in a child, given an exception and the memory limit: its answer, or None
        self.restart = None  # the status of a child's answer asking to run its request in a fresh agent
        self.deferred = []  # the requests (raw lines) to run after the restart

    def send(self, message):
        self.out.write(json.dumps(message, default=str) + "\n")
        self.out.flush()

    def serve(self):
        self.selector.register(0, selectors.EVENT_READ, None)
        try:
            while self._step():
                pass
        finally:
            for child in list(self.children.values()):
                self._kill(child)

    def _step(self):
        now = time.monotonic()
        wake = min([c.deadline for c in self.children.values()], default=now + POLL_S)
        if self.deferred and not self.children:
            self._restart()
        for key, _ in self.selector.select(max(0.0, min(wake - now, POLL_S))):
            if key.data is None:
                data = os.read(0, 65536)
                if not data or not self._read_requests(data):
                    return False
            else:
                self._read_child(key.data)
        for child in [c for c in self.children.values() if c.deadline <= time.monotonic()]:
            self._kill(child)
            seconds = child.limits["timeout"]
            self._reply(
                child,
                {
                    "status": "timeout",
                    "message": f"The trace ran past its {seconds:g} s timeout and was killed",
                },
            )
        return os.getppid() == self.parent

    def _read_requests(self, data):
        self.pending += data
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if not isinstance(request, dict):
                continue
            method = request.get("method")
            params = request.get("params")
            params = params if isinstance(params, dict) else {}
            if method == "shutdown":
                return False
            if method == "cancel":
                for line in [d for d in self.deferred if json.loads(d).get("id") == params.get("id")]:
                    self.deferred.remove(line)
                    self.send(
                        {
                            "id": params.get("id"),
                            "result": {"status": "cancelled", "message": "The trace was cancelled"},
                        }
                    )
                for child in [c for c in self.children.values() if c.request_id == params.get("id")]:
                    self._kill(child)
                    self._reply(child, {"status": "cancelled", "message": "The trace was cancelled"})
            elif method == "info" and self.info is not None:
                self.send({"id": request.get("id"), "result": self.info})
            elif method in self.handlers and self._must_restart(params):
                self.deferred.append(line)
            elif method in self.handlers:
                self._fork(request.get("id"), method, params, line)
            else:
                self.send(
                    {
                        "id": request.get("id"),
                        "result": {"status": "error", "message": f"unknown method {method!r}"},
                    }
                )
        return True

    def _must_restart(self, params):
        if self.deferred:
            return True
        reason = self.stale(params) if self.stale is not None else None
        if reason:
            print(f"jax-lsp: {reason}; restarting the trace agent", file=sys.stderr)
        return bool(reason)

    def _restart(self):
        """Become a fresh agent (the same process): it answers the deferred requests, then reads on."""
        replay = tempfile.TemporaryFile()
        replay.write(b"".join(line + b"\n" for line in self.deferred) + self.pending)
        replay.flush()
        os.set_inheritable(replay.fileno(), True)
        os.environ[REPLAY_FD] = str(replay.fileno())
        self.out.flush()
        os.dup2(self.out.fileno(), 1)  # the new agent writes its protocol to stdout, as this one did
        argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
        os.execv(sys.executable, [sys.executable, *argv[1:]])

    def replay(self):
        """In a restarted agent: run the requests the old one read but did not; False on shutdown."""
        fd = os.environ.pop(REPLAY_FD, None)
        if fd is None:
            return True
        with os.fdopen(int(fd), "rb") as replay:
            replay.seek(0)
            return self._read_requests(replay.read())

    def _fork(self, request_id, method, params, line):
        try:  # no defaults here: the host sends them (jax_lsp/trace/options.py)
            timeout = float(params["timeout"])
            limits = {"timeout": timeout, "memory_mb": int(params["memory_mb"])}
        except (KeyError, TypeError, ValueError):
            message = f"A {method!r} request must give a number `timeout` and `memory_mb`"
            self.send({"id": request_id, "result": {"status": "error", "message": message}})
            return
        read_fd, write_fd = os.pipe()
        agent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            self._child(method, params, write_fd, limits, agent_pid)
        os.close(write_fd)
        try:
            os.setpgid(pid, pid)
        except OSError:  # the child already did it, or has already exited
            pass
        child = Child(request_id, line, pid, read_fd, time.monotonic() + timeout, limits)
        self.children[pid] = child
        self.selector.register(read_fd, selectors.EVENT_READ, child)

    def _child(self, method, params, write_fd, limits, agent_pid):
        try:
            os.setpgid(0, 0)
            _die_with(agent_pid)
            for fd in [self.out.fileno(), *(c.fd for c in self.children.values())]:
                os.close(fd)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            _limit_memory(limits["memory_mb"] * 1024 * 1024)
            result = self.handlers[method](params)
        except MemoryError:
            result = {
                "status": "memory",
                "message": (f"The trace ran out of memory (limit {limits['memory_mb']} MiB) and was stopped"),
            }
        except BaseException as exc:
            result = self.explain(exc, limits["memory_mb"]) if self.explain is not None else None
            result = result or {
                "status": "error",
                "message": "Internal error in the trace agent:\n" + traceback.format_exc(limit=-8),
            }
        try:
            data = json.dumps(result, default=str).encode("utf-8")
            while data:
                data = data[os.write(write_fd, data) :]
            os.close(write_fd)  # the end of the answer now: the exit frees the memory first
        finally:
            os._exit(0)

    def _read_child(self, child):
        chunk = os.read(child.fd, 65536)
        if chunk:
            child.chunks.append(chunk)
            return
        data = b"".join(child.chunks)
        try:
            result = json.loads(data) if data else None
        except ValueError:
            result = None
        if isinstance(result, dict) and self.restart is not None and result.get("status") == self.restart:
            print(f"jax-lsp: {result.get('message')}; restarting the trace agent", file=sys.stderr)
            self._kill(child)
            self.deferred.insert(0, child.line)  # the first request the fresh agent runs
            return
        if isinstance(result, dict):  # sent before the child is reaped: its exit takes a while
            self._send_result(child, result)
            self._kill(child)
        else:
            result = _death_result(self._kill(child), child.limits)
            self._send_result(child, result)
        if self.on_result is not None:
            self.on_result(result)

    def _kill(self, child):
        """Kill the child's whole process group, reap it, and forget it. Returns its wait status."""
        for kill in (os.killpg, os.kill):
            try:
                kill(child.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            _, status = os.waitpid(child.pid, 0)
        except ChildProcessError:
            status = 0
        if self.children.pop(child.pid, None) is not None:
            self.selector.unregister(child.fd)
            os.close(child.fd)
        return status

    def _reply(self, child, result):
        self._send_result(child, result)
        if self.on_result is not None:
            self.on_result(result)

    def _send_result(self, child, result):
        result.update(self.common)
        result["duration_s"] = round(time.monotonic() - child.started, 4)
        if "platform" in result and "status" in result and self.info is None:
            self.info = {"status": "ok", "platform": result["platform"], "device": result.get("device")}
            self.info.update(self.common)
        self.send({"id": child.request_id, "result": result})


def _death_result(status, limits):
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return {
            "status": "crashed",
            "message": (
                f"The trace process died with {name}; most often this is the memory limit "
                f"({limits['memory_mb']} MiB) being hit inside native code"
            ),
        }
    return {
        "status": "crashed",
        "message": (
            f"The trace process exited with code {os.WEXITSTATUS(status)} without a result: the "
            "module may call sys.exit or os._exit at import time, or native code ran out of the "
            f"memory limit ({limits['memory_mb']} MiB) and exited"
        ),
    }


def _limit_memory(limit):
    """Cap the memory the process writes (``RLIMIT_DATA``: its private writable mappings), not its
    address space: accelerator runtimes and XLA reserve far more address space than they use, and
    libtpu dies at start under an address-space limit it would never come near in memory."""
    import resource  # POSIX only: imported here so that the hello can say why not elsewhere

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):  # where it cannot be set, only the timeout bounds a run
        pass


def _die_with(parent_pid):
    """Have the kernel kill this process if the agent dies (Linux), then check it has not already."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def main():
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed by jax or user code goes to stderr, never into the protocol
    common = {"python": sys.executable, "python_version": platform.python_version()}
    hello = dict(common, event="hello", pid=os.getpid())
    if not hasattr(os, "fork"):
        hello.update(
            ok=False,
            status="error",
            error=(f"Tracing needs a POSIX system (Linux or macOS); {sys.executable} runs on {sys.platform}"),
        )
    else:
        try:
            import jax
        except ImportError as exc:
            hello.update(
                ok=False,
                status="no_jax",
                error=(
                    f"jax is not installed in {sys.executable} (Python {platform.python_version()}): {exc}. "
                    f"Install it with `{sys.executable} -m pip install jax`, or set the `interpreter` "
                    "setting to a Python that has jax"
                ),
            )
        except Exception as exc:
            hello.update(
                ok=False,
                status="no_jax",
                error=f"Importing jax failed in {sys.executable}: {type(exc).__name__}: {exc}",
            )
        else:
            common["jax_version"] = jax.__version__
            hello.update(ok=True, jax_version=jax.__version__)
    out.write(json.dumps(hello) + "\n")
    out.flush()
    if not hello["ok"]:
        return 0
    _import_package()
    handlers = importlib.import_module(f"{PACKAGE}.handlers")
    handlers.warm_up()
    try:
        agent = Agent(out, handlers.BY_METHOD, common)
        agent.on_result = handlers.after_result
        agent.stale = handlers.stale
        agent.restart = handlers.RESTART
        agent.explain = importlib.import_module(f"{PACKAGE}.devices").failure
        if agent.replay():
            agent.serve()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

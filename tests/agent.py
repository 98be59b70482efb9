"""What the tests that run the trace agent share: the interpreter it runs in, a service that
uses it, the advisor's model files, and checks that no process is left behind. The folders'
conftests take their fixtures from here."""

import contextlib
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jax_lsp.core.jax_facts import facts_for, installed_jax_version
from jax_lsp.trace import TraceService
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.compile_target import chip_devices
from tests.jax_premises import not_installed

ADVISOR_FIXTURES = Path(__file__).parent / "fixtures" / "advisor"


def descendants(pid: int | None = None) -> set[int]:
    """Every live process below ``pid`` (default: this test process), from /proc."""
    pid = pid or os.getpid()
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, queue = set(), [pid]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.add(child)
            queue.append(child)
    return found


def parent_of(pid: int) -> int | None:
    """The parent of ``pid``, from /proc; None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


# An example for a test of a step after the estimate (a compile, the fit check, the run): the
# estimate's child runs it and writes the mark; every later child spins in it, until killed.
SPINS_AFTER_THE_ESTIMATE = """

def slow_example():
    import os
    mark = os.path.join(os.path.dirname(__file__), "estimated")
    if os.path.exists(mark):
        while True:
            pass
    open(mark, "w").close()
    return example()
"""


def grew(before: set[int], family: set[int], extra: int):
    """A check for `_until`: at least `extra` processes beyond `before` and `family` are alive."""

    async def check():
        return len(descendants() - before - family) >= extra

    return check


def shrank_to(before: set[int], family: set[int]):
    """A check for `_until`: no process beyond `before` and `family` is left."""

    async def check():
        return descendants() - before <= family

    return check


# The Python the trace agent runs in: this one, or JAX_LSP_TEST_INTERPRETER (CI points it at a
# venv holding the oldest or the newest supported JAX: .ci/jax_ends.sh). The tests themselves,
# the server and the CLI run here; only the agent runs there.
AGENT_PYTHON = os.environ.get("JAX_LSP_TEST_INTERPRETER") or sys.executable


class AgentTraceService(TraceService):
    """The service, tracing in AGENT_PYTHON unless a test names another interpreter."""

    def agent(self, interpreter=None, cwd=None, device=False):
        return super().agent(interpreter or AGENT_PYTHON, cwd, device)

    def environment(self, interpreter=None):
        return super().environment(interpreter or AGENT_PYTHON)


AGENT_FACTS = facts_for(installed_jax_version(AGENT_PYTHON))


def skip_unless_agent_runs_this_jax() -> None:
    """Skips a test that compares an advice with what JAX works out in this process
    (`saved_residuals`, a compiled step's memory analysis) where the agent runs another release."""
    here, there = installed_jax_version(None), installed_jax_version(AGENT_PYTHON)
    if here != there:
        pytest.skip(f"compares with jax {here} here; the agent runs jax {there}")


def skip_where_agent_lacks_imports(*paths: str | Path) -> None:
    """Skips the test where AGENT_PYTHON lacks a package that one of ``paths`` imports from outside
    its folder (flax, equinox... in a venv that holds only a JAX release)."""
    missing = sorted(
        {
            name
            for path in map(Path, paths)
            for name in not_installed(path.read_text(encoding="utf-8"), AGENT_PYTHON)
            if not (path.parent / name).is_dir() and not (path.parent / f"{name}.py").is_file()
        }
    )
    if missing:
        pytest.skip(f"{AGENT_PYTHON} lacks {', '.join(missing)}")


def invalid_value_text() -> str:
    """A piece of what a trace reports for a policy that returns None, under the agent's JAX: JAX's
    TypeError, or (older JAX, a bare assert) the agent's own words for it."""
    error = AGENT_FACTS.invalid_return_error
    return error.split(": ", 1)[1][:48] if ": " in error else f"bare {error}"


def agent_options() -> list[str]:
    """The CLI options that trace in AGENT_PYTHON."""
    return ["--interpreter", AGENT_PYTHON]


@pytest.fixture(scope="session")
def service():
    svc = AgentTraceService()
    yield svc
    svc.shutdown()


@pytest.fixture
def write(tmp_path: Path):
    """write("name.py", code) -> path of the written module under tmp_path."""

    def _write(name: str, code: str) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
        return str(path)

    return _write


def jax_kind(description: str) -> str:
    """The advisor's `kind` of a residual that JAX's `saved_residuals` describes so."""
    words = {"from the argument": "argument", "from a literal": "literal", "from a constant": "constant"}
    return next((kind for start, kind in words.items() if description.startswith(start)), "computed")


def line_of(path: str | Path, needle: str = "policy=") -> int:
    """1-based line of the first line containing ``needle``."""
    for number, text in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def advise_fixture(service: TraceService, name: str, *policies: str, **request: Any) -> Advice:
    """`advise` of the site of the fixture ``ADVISOR_FIXTURES/NAME.py`` with its example
    ``NAME.py:example``, for ``policies`` (``request``: ``compile``, ``target``, ``run``,
    ``interpreter``, ``options``)."""
    path = ADVISOR_FIXTURES / f"{name}.py"
    example = f"{name}.py:example"
    return advise(
        service, path, line_of(path), example=example, root=ADVISOR_FIXTURES, policies=policies, **request
    )


# A module with a policy that saves `sin`, after the statements `{extra}` (imports, settings).
POLICY_MODULE = """
import jax

{extra}

def policy(prim, *args, **params):
    return prim.name == "sin"

f = jax.checkpoint(lambda x: x, policy=policy)
"""

needs_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
# A TPU machine (the chips a process may open); run these through the device tool
# (docs/accelerators.md); CI has no TPU.
HAS_TPU = bool(chip_devices())
needs_tpu = pytest.mark.skipif(not HAS_TPU, reason="needs a TPU (/dev/accelN or /dev/vfio/N)")


def find_libtpu_python() -> str:
    """A Python whose JAX has libtpu (jax[tpu], Linux x86-64): JAX_LSP_LIBTPU_PYTHON (the venv
    `.ci/libtpu.sh` makes), else AGENT_PYTHON where it has it. Without one the test skips, or
    fails where JAX_LSP_EXPECT_LIBTPU=1 (as that script sets). The busy-chip tests need it (libtpu
    refuses a chip whose lock file another process holds, on a machine with or without a TPU), and
    so does compiling for a TPU target."""
    import subprocess

    python = os.environ.get("JAX_LSP_LIBTPU_PYTHON") or AGENT_PYTHON
    has = "import importlib.util, sys; sys.exit(importlib.util.find_spec('libtpu') is None)"
    if subprocess.run([python, "-c", has], capture_output=True).returncode != 0:
        reason = (
            f"needs libtpu in {python}: set JAX_LSP_LIBTPU_PYTHON to a Python with jax[tpu] (.ci/libtpu.sh)"
        )
        if os.environ.get("JAX_LSP_EXPECT_LIBTPU") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return python


@pytest.fixture(scope="session")
def libtpu_python() -> str:
    """`find_libtpu_python`, once a session."""
    return find_libtpu_python()


TPU_LOCK_FILE = "/tmp/libtpu_lockfile"  # libtpu's, fixed; never deleted (another process may hold it)
HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def tpu_lock_held():
    """Another process holds libtpu's lock on the chip (`lockf`, as a process using the TPU does)
    while the block runs."""
    import subprocess

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, TPU_LOCK_FILE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()

"""`jax-lsp check` starts fast (issue 8): it imports only what the run at hand needs.

Process start dominates a re-run with nothing changed and a check of one file, so the trace,
the language server, jedi, the notebook reader and the parsers of other subcommands are
imported only by the runs that use them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.runner import REPO

# Imported by no `jax-lsp check` of Python files without --trace or --fix, nor by the server's
# absence: each costs milliseconds at every start.
NEVER_FOR_CHECK = (
    "jedi",
    "parso",
    "pygls",
    "lsprotocol",
    "jax_lsp.server",
    "jax_lsp.cli.commands.rule",
    "jax_lsp.cli.commands.serve",
    "jax_lsp.cli.commands.trace",
    "jax_lsp.cli.tracing",
    "jax_lsp.trace.service",
    "jax_lsp.trace.result",
    "jax_lsp.core.notebooks.notebook",
    "jax_lsp.core.policies.describe",
    "jax_lsp.core.tags.index",
    "jax_lsp.core.text.newer_syntax",  # files that parse need no rewriting
    "jax_lsp.cli.fixing",  # without --fix
    "difflib",
    "multiprocessing",
    "concurrent.futures",
    "configparser",
    "tempfile",
    # Each costs milliseconds: a check that goes well logs nothing (core.logger), and git is
    # asked only in a git work tree.
    "logging",
    "traceback",
    "subprocess",
    "threading",  # the locks come from _thread; a thread is started only for a very deep tree
    # A plain `check` command line is read without argparse (cli.quick_args), which imports
    # gettext, and gettext locale.
    "argparse",
    "gettext",
    "locale",
)

_RUN_AND_LIST_MODULES = """
import sys
from jax_lsp.cli import main

code = main(sys.argv[1:])
imported = sorted(sys.modules)
import json

print()
print(json.dumps(imported))
raise SystemExit(code)
"""


def _modules_after(cwd: Path, *args: str) -> tuple[int, set[str]]:
    """The exit code of `jax-lsp ARGS` run in a fresh interpreter, and the modules it imported."""
    # Below a .git, the check would start git (importing subprocess) to learn what it ignores.
    assert not any((folder / ".git").exists() for folder in (cwd, *cwd.parents)), (
        f"{cwd} is in a git work tree"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return done.returncode, set(json.loads(done.stdout.splitlines()[-1]))


def _unwanted(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in NEVER_FOR_CHECK))


def test_checking_a_file_without_sites_imports_only_what_checking_needs(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import jax\n\n\ndef f(x):\n    return x\n")
    code, modules = _modules_after(tmp_path, "check", "a.py")
    assert code == 0
    assert "jax_lsp.engine.workspace" in modules  # the check did run
    assert _unwanted(modules) == []
    assert not (tmp_path / ".jax-lsp-cache").exists()  # a file named alone is checked without the cache
    assert {"json", "unicodedata"}.isdisjoint(modules)  # no cache to read, no finding's line to show
    code, modules = _modules_after(tmp_path, "check", "--output-format", "json", "a.py")
    assert (code, "json" in modules) == (0, False)  # an empty list is written without it


def test_a_rerun_with_nothing_changed_imports_only_what_checking_needs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "a.py").write_text("import jax\n\nf = jax.checkpoint(lambda x: x, policy=None)\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    assert _modules_after(tmp_path, "check")[0] == 0
    code, modules = _modules_after(tmp_path, "check")
    assert code == 0
    assert _unwanted(modules) == []
    assert "tomllib" not in modules  # its pyproject.toml has no [tool.jax-lsp] table
    # Every result comes from the cache: nothing is parsed or analysed.
    assert {"jax_lsp.core.text.source", "jax_lsp.engine.analysis", "jax_lsp.rules"}.isdisjoint(modules)
    # ... and the classes every check defines are no dataclasses (core.record): importing
    # dataclasses (inspect, ast) and generating their methods cost a third of such a run.
    assert {"dataclasses", "inspect", "ast"}.isdisjoint(modules)


def test_the_help_still_lists_every_subcommand(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jax_lsp", "--help"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    for line in (
        "check files and folders for broken remat policies",
        "show a rule's documentation",
        "run the language server",
        "run a policy under real JAX and show what it decides",
    ):
        assert line in done.stdout


def test_checking_a_policy_defines_no_dataclass(tmp_path: Path) -> None:
    # dataclasses costs ~9 ms to import and ~1 ms a class: the analysis of sites uses records.
    (tmp_path / "a.py").write_text(
        "import jax\n\n\ndef p(prim, *a, **k):\n    return True\n\n\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    )
    code, modules = _modules_after(tmp_path, "check", "--no-cache", "a.py")
    assert code == 0
    assert "jax_lsp.engine.analysis" in modules  # the policy was analysed
    assert {"dataclasses", "inspect"}.isdisjoint(modules)


def test_checking_a_project_with_a_site_imports_no_typing(tmp_path: Path) -> None:
    # typing costs ~5% of checking a small project: the modules a check imports name its
    # types only under `if TYPE_CHECKING:`, with TYPE_CHECKING = False.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "a.py").write_text(
        "import jax\n\n\ndef p(prim, *a, **k):\n    return None\n\n\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    )
    code, modules = _modules_after(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert code == 1  # JAX101: the policy was analysed, and its finding reported
    assert "jax_lsp.rules" in modules
    assert "typing" not in modules


def test_checking_the_names_a_policy_saves_imports_no_dataclass_nor_typing(tmp_path: Path) -> None:
    # A policy that saves names reads every tag in reach (core.tags.index, and the installed
    # packages' tags read beside, engine.forked): dataclasses and typing would cost it ~12 ms.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "a.py").write_text(
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\n\n\n"
        "def g(x):\n    return checkpoint_name(x, 'h')\n\n\n"
        "f = jax.checkpoint(g, policy=jax.checkpoint_policies.save_only_these_names('h'))\n"
    )
    code, modules = _modules_after(tmp_path, "check", "--no-cache", ".")
    assert code == 0
    assert {"jax_lsp.core.tags.index", "jax_lsp.core.tags.flow"} <= modules  # the names were looked up
    # difflib too: every name is tagged, and no close one is looked for
    assert {"dataclasses", "inspect", "typing", "difflib"}.isdisjoint(modules)


@pytest.mark.parametrize(
    "source",
    [
        # A member passed on by a parameter: no site names it.
        "import jax\n\n\ndef wrap(f, policy=jax.checkpoint_policies.nothing_saveable):\n"
        "    return jax.checkpoint(f, policy=policy)\n",
        # A member named at the site, which every supported release has (JAX113).
        "import jax\n\nf = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.nothing_saveable)\n",
    ],
)
def test_a_check_whose_rules_need_no_jax_fact_reads_none(tmp_path: Path, source: str) -> None:
    # Reading the facts of the installed JAX (its metadata on the search path, their JSON) is ~5%
    # of checking a small project: a rule asks for them only where a finding depends on them.
    (tmp_path / "a.py").write_text(source)
    code, modules = _modules_after(tmp_path, "check", "--no-cache", "a.py")
    assert code == 0
    assert "jax_lsp.engine.analysis" in modules  # the site was analysed
    assert {"jax_lsp.core.jax_facts", "json"}.isdisjoint(modules)


_RUN_COUNTING_COLLECTIONS = """
import gc
import os
import sys

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
import jax_lsp.cli

exit_process, started = os._exit, len(collections)


def counted_exit(code):
    print(len(collections) - started, file=sys.stderr)
    sys.stderr.flush()
    exit_process(code)


os._exit = counted_exit
jax_lsp.cli.run()
"""


def test_a_check_never_runs_the_cyclic_gc_from_its_imports_on(tmp_path: Path) -> None:
    # Its imports and its parsed trees live as long as the process: a pass would scan them all.
    (tmp_path / "a.py").write_text(
        "import jax\n\n\ndef p(prim, *a, **k):\n    return True\n\n\nf = jax.checkpoint(lambda x: x, policy=p)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", _RUN_COUNTING_COLLECTIONS, "check", "--no-cache", "a.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "0"


def test_check_ends_at_once_with_its_output_whole_or_cut_by_the_reader(tmp_path: Path) -> None:
    """`check` ends its process without freeing its heap (cli.run): its output is flushed first
    (a short report sits in the buffer until then), and a reader that stops early (`| head`)
    gets no traceback."""
    policy = "def p{n}(prim, *args, **params):\n    return\n\nf{n} = jax.checkpoint(g, policy=p{n})\n\n"
    (tmp_path / "one.py").write_text("import jax\n\n" + policy.format(n=0))
    (tmp_path / "many.py").write_text("import jax\n\n" + "".join(policy.format(n=n) for n in range(2000)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as stdout is by default
    command = [sys.executable, "-m", "jax_lsp", "check", "--output-format", "json"]
    for name, count in (("one.py", 1), ("many.py", 2000)):
        whole = subprocess.run([*command, name], cwd=tmp_path, env=env, capture_output=True, timeout=120)
        assert whole.returncode == 1
        assert len(json.loads(whole.stdout)) == count, whole.stderr
    missing = subprocess.run(
        [*command, "missing.py"], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    assert (missing.returncode, json.loads(missing.stdout)) == (2, [])  # an error's report too
    with subprocess.Popen(
        [*command, "many.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as cut:
        assert cut.stdout is not None and cut.stderr is not None
        assert cut.stdout.read(100).startswith(b"[")
        cut.stdout.close()  # the reader stops
        assert cut.stderr.read() == b""
        assert cut.wait(timeout=120) == 1

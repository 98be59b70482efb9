"""`jax-lsp trace` and `jax-lsp check --trace`, run as the user runs them: `_run` runs the
program, which starts and shuts down its own agent; `run_here` runs its `main` in this process,
tracing in the session's warm agent."""

import gc
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from jax_lsp.cli import main
from tests.agent import AGENT_FACTS, agent_options, invalid_value_text

pytest.importorskip("jax")
pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

BROKEN = """
import jax


def policy(prim, *args, **params):
    if prim.name == "sin":
        return True


def lookup(prim, *args, **params):
    return params["no_such_param"] > 0


f = jax.checkpoint(lambda x: x, policy=policy)
g = jax.checkpoint(lambda x: x, policy=lookup)
"""


def _argv(args):
    return [*args, *agent_options()] if args[0] == "trace" or "--trace" in args else list(args)


def _run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "jax_lsp", *_argv(args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def run_here(service, capsys, monkeypatch):
    """`_run`'s run in this process and the session's agent: the program's own agent would cost
    each run about 3 CPU-s, most of it importing jax."""
    start = Path.cwd()

    def run(*args, cwd=None):
        monkeypatch.chdir(cwd or start)
        try:
            code = main(_argv(args), trace_service=service)
        finally:
            gc.enable()  # `check` leaves it off for the rest of its process, which is this one
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)

    return run


def test_trace_one_line_as_a_table(write):
    path = write("model.py", BROKEN)
    proc = _run("trace", f"{path}:4")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "Status: jax_error" in out
    assert "primitive" in out and "decision" in out
    assert ":4:5: JAX101 Confirmed by trace (jax " in out
    assert invalid_value_text() in out


def test_trace_every_site_as_json(run_here, write):
    path = write("model.py", BROKEN)
    proc = run_here("trace", path, "--output-format", "json")
    assert proc.returncode == 1
    reports = json.loads(proc.stdout)
    assert [r["line"] for r in reports] == [13, 14]
    first, second = reports
    assert first["result"]["error"]["line"] == 4  # fell off the end: the def
    assert [n["code"] for n in first["notes"] if n["severity"] == "error"] == ["JAX101"]
    # No static rule predicts the KeyError: JAX190, on the line that raised.
    [unpredicted] = [n for n in second["notes"] if n["severity"] == "error"]
    assert (unpredicted["code"], unpredicted["line"]) == ("JAX190", 10)
    assert "KeyError: 'no_such_param'" in unpredicted["message"]


def test_trace_clean_policy_exits_zero(run_here, write):
    path = write(
        "model.py",
        """
        import jax
        f = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.dots_saveable)
    """,
    )
    proc = run_here("trace", f"{path}:2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dot_general           saved" in proc.stdout


def test_trace_at_a_checkpoint_without_a_policy_runs_nothing_and_exits_zero(run_here, write):
    path = write(
        "model.py",
        """
        import jax
        def model(x, cfg):
            return jax.checkpoint(cfg.block)(x)
    """,
    )
    proc = run_here("trace", f"{path}:3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Status: no_policy: jax.checkpoint(cfg.block) passes no policy, so JAX's default is used" in (
        proc.stdout
    )


def test_trace_errors_exit_two(run_here, write, tmp_path):
    proc = run_here("trace", str(tmp_path / "missing.py"), "--output-format", "json")
    assert (proc.returncode, json.loads(proc.stdout)) == (2, [])
    assert "no such file" in proc.stderr
    path = write("model.py", "import jax\n")
    proc = run_here("trace", path)
    assert proc.returncode == 2 and "no policy site" in proc.stderr
    proc = run_here("trace", f"{path}:1")
    assert proc.returncode == 2 and "not_found" in proc.stdout


def test_check_with_trace_confirms_and_adds_jax190(write, tmp_path):
    write("model.py", BROKEN)
    plain = _run("check", "--output-format", "json", ".", cwd=tmp_path)
    traced = _run("check", "--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert plain.returncode == traced.returncode == 1, traced.stderr
    before, after = json.loads(plain.stdout), json.loads(traced.stdout)
    assert [f["code"] for f in before] == ["JAX101"]
    assert sorted(f["code"] for f in after) == ["JAX101", "JAX190"]
    [confirmed] = [f for f in after if f["code"] == "JAX101"]
    assert "[Confirmed by trace (jax " in confirmed["message"]


def test_trace_imports_a_package_that_sits_below_the_project_root(run_here, tmp_path):
    """`research/proj/pkg/policies.py` does `from pkg.names import SAVED`: the trace imports it
    from the folder above the outermost package, as Python run from there would."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mono"\n')
    pkg = tmp_path / "research" / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "names.py").write_text('SAVED = ("sin",)\n')
    (pkg / "policies.py").write_text(
        "import jax\nfrom pkg.names import SAVED\n\n\n"
        "def policy(prim, *avals, **params):\n    return prim.name in SAVED\n\n\n"
        "f = jax.checkpoint(lambda x: jax.numpy.sin(x), policy=policy)\n"
    )
    proc = run_here("trace", "research/proj/pkg/policies.py:9", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sin" in proc.stdout and "saved" in proc.stdout


TABLE = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies
POLICIES = dict(dots=cp.dots_saveable, names=cp.save_only_these_names("attn_out"), broken=cp.save_only_these_names)
REMAT = "names"


def get_policy(name):
    return POLICIES[name]


def block(x):
    return jnp.sin(checkpoint_name(jnp.sin(x @ x), "attn_out"))


f = jax.checkpoint(block, policy=POLICIES["dots"])
g = jax.checkpoint(block, policy=get_policy(REMAT))
h = jax.checkpoint(block, policy=cp.save_only_these_names("attn_out"))
"""


def test_trace_a_policy_from_a_table_and_a_name_based_policy(run_here, write):
    """The table holds a broken member (JAX107 reports it statically); the members chosen here
    trace, and JAX saves what they name."""
    path = write("model.py", TABLE)
    proc = run_here("trace", path)  # every site of the file, one report each
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reports = re.split("^== ", proc.stdout, flags=re.M)[1:]  # "== PATH:LINE" heads each
    for report, (line, saved) in zip(
        reports,
        (
            (18, "dot_general           saved"),
            (19, "name:attn_out         saved"),
            (20, "name:attn_out         saved"),
        ),
        strict=True,
    ):
        assert report.startswith(f"{path}:{line}\n") and "Status: ok" in report, proc.stdout
        assert saved in report
    check = run_here("check", "--no-cache", "--output-format", "concise", path)
    assert ":6:91: JAX107" in check.stdout and "(chosen by the key 'broken' of `POLICIES`)" in check.stdout


def test_check_with_trace_from_a_folder_holding_the_agent_lands_only_in_the_checked_files(run_here):
    """Run from this repository's root, the agent's own files (and JAX's) lie under the project
    root: a traceback frame there is never the anchor, and failures the rules predicted
    (JAX101/107/108/110/111 in examples/) are confirmations, not JAX190."""
    root = Path(__file__).resolve().parents[3]
    proc = run_here("check", "--trace", "--output-format", "json", "examples", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = json.loads(proc.stdout)
    examples = root / "examples"
    outside = [f for f in found if not (root / f["path"]).resolve().is_relative_to(examples)]
    assert outside == []
    assert [f for f in found if f["code"] == "JAX190"] == []
    confirmed = {f["code"] for f in found if "[Confirmed by trace (jax " in f["message"]}
    predicted = {"JAX101", "JAX107", "JAX108", "JAX111"}
    if AGENT_FACTS.save_from_both_non_bool_error is not None:  # from jax 0.4.38
        predicted.add("JAX110")
    assert predicted <= confirmed


# A policy JAX rejects that no rule predicts: the file has no static finding.
REJECTED_UNPREDICTED = """
import jax


def policy(prim, *args, **params):
    return prim.no_such_attribute == 1


f = jax.checkpoint(lambda x: x, policy=policy)
"""


def test_check_with_trace_traces_a_file_without_static_findings(run_here, write, tmp_path):
    write("model.py", REJECTED_UNPREDICTED)
    plain = run_here("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert (plain.returncode, plain.stdout) == (0, "[]\n"), plain.stderr
    traced = run_here("check", "--no-cache", "--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert traced.returncode == 1, traced.stdout + traced.stderr
    [unpredicted] = json.loads(traced.stdout)
    assert (unpredicted["code"], unpredicted["line"], unpredicted["severity"]) == ("JAX190", 5, "error")
    assert "AttributeError" in unpredicted["message"]


# Beside it, a policy JAX101 reports: the file is traced whether or not clean files are.
REJECTED_AND_PREDICTED = (
    REJECTED_UNPREDICTED
    + """

def without_return(prim, *args, **params):
    if prim.name == "sin":
        return True


g = jax.checkpoint(lambda x: x, policy=without_return)
"""
)


def test_check_with_trace_reads_noqa_and_severity_of_jax190(run_here, write, tmp_path):
    """The trace's findings pass the filters a rule's pass: `# noqa: JAX190` on the reported line
    hides it, `[tool.jax-lsp.severity]` sets its severity."""
    write("model.py", REJECTED_AND_PREDICTED.replace("== 1\n", "== 1  # noqa: JAX190\n"))
    silenced = run_here("check", "--no-cache", "--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert silenced.returncode == 1, silenced.stdout + silenced.stderr
    [confirmed] = json.loads(silenced.stdout)
    assert confirmed["code"] == "JAX101" and "[Confirmed by trace (jax " in confirmed["message"]
    write("model.py", REJECTED_AND_PREDICTED)
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp.severity]\nJAX190 = "warning"\n')
    warned = run_here("check", "--no-cache", "--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert warned.returncode == 1, warned.stdout + warned.stderr
    found = sorted((f["code"], f["severity"]) for f in json.loads(warned.stdout))
    assert found == [("JAX101", "error"), ("JAX190", "warning")]


def test_the_trace_commands_notes_pass_noqa_ignore_and_severity(run_here, write, tmp_path):
    """`jax-lsp trace` shows the trace's findings as `check` does: `# noqa: JAX190` on the
    reported line or `ignore` hides JAX190; `[tool.jax-lsp.severity]` sets its severity."""

    def jax190(*extra):
        proc = run_here("trace", "model.py", "--output-format", "json", *extra, cwd=tmp_path)
        [report] = json.loads(proc.stdout)
        return proc.returncode, [(n["line"], n["severity"]) for n in report["notes"] if n["code"] == "JAX190"]

    write("model.py", REJECTED_UNPREDICTED)
    assert jax190() == (1, [(5, "error")])
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp.severity]\nJAX190 = "warning"\n')
    assert jax190() == (1, [(5, "warning")])
    (tmp_path / "pyproject.toml").write_text('[tool.jax-lsp]\nignore = ["JAX190"]\n')
    assert jax190() == (0, [])
    (tmp_path / "pyproject.toml").unlink()
    write("model.py", REJECTED_UNPREDICTED.replace("== 1\n", "== 1  # noqa: JAX190\n"))
    assert jax190() == (0, [])

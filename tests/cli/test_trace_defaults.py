"""The trace's timeout and memory limit have one default, `TraceOptions()`: the command line's
options, the server's settings and the editor's (vscode-client/package.json) all say it. And
`--interpreter` is a path from where the command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from jax_lsp.cli.parser import build_parser
from jax_lsp.cli.trace_arguments import trace_options
from jax_lsp.server.settings import resolve
from jax_lsp.trace.options import TraceOptions
from tests.agent import ADVISOR_FIXTURES, line_of
from tests.cli.runner import REPO

DEFAULTS = TraceOptions()


def test_the_editor_settings_default_to_the_record():
    package = json.loads((REPO / "vscode-client" / "package.json").read_text(encoding="utf-8"))
    settings = package["contributes"]["configuration"]["properties"]
    assert settings["jax-lsp.trace.timeout"]["default"] == DEFAULTS.timeout
    assert settings["jax-lsp.trace.memoryLimitMb"]["default"] == DEFAULTS.memory_mb


def test_the_server_settings_default_to_the_record(tmp_path):
    for editor in ({}, {"trace": {"onSave": True}}):
        settings, problems = resolve(editor, [tmp_path])
        assert (settings.trace.options, problems) == (DEFAULTS, [])


def test_the_command_line_defaults_to_the_record():
    for argv in (["trace", "x.py"], ["advise", "x.py"], ["check", "--trace"]):
        args = build_parser(argv).parse_args(argv)
        assert trace_options(args) == DEFAULTS


def test_a_relative_interpreter_is_read_from_where_the_command_runs(tmp_path):
    # the agent starts in --root, elsewhere: the path must not be read from there
    python = os.path.relpath(sys.executable, tmp_path)
    assert os.sep in python
    model = ADVISOR_FIXTURES / "mlp.py"
    done = subprocess.run(
        [sys.executable, "-m", "jax_lsp", "trace", f"{model}:{line_of(model)}", "--root", str(ADVISOR_FIXTURES),
         "--interpreter", python],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert "Cannot start the interpreter" not in done.stdout + done.stderr
    assert done.returncode == 0 and "Status: ok" in done.stdout, done.stdout + done.stderr

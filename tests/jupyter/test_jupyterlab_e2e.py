"""JupyterLab 4 with jupyterlab-lsp, in a real headless Chromium driven by Playwright.

Nothing is configured: jupyter-lsp finds jax-lsp through its `jupyter_lsp_spec_v1` entry point.
The test opens a notebook whose policy (defined in one cell, used in another) returns None on a
path, sees jax-lsp's diagnostic in the cell, edits the cell and sees it go; then it opens a
Python file in the file editor and sees a diagnostic there too. jupyterlab-lsp 5 offers no code
actions (no quick fix; docs/editors.md says so). The screenshot it takes is the one in the docs
(`JAX_LSP_UPDATE_SCREENSHOT=1` writes it to docs/jupyterlab.png).

Debian's chromium is used (`apt-get install chromium`; `.ci/run` installs it): Playwright's own
browser download cannot be reached from here. Without a browser the test is skipped, visibly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.cli.runner import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Looked for, not imported: JupyterLab runs in a process of its own, and importing it here would
# cost every collection of the suite (every xdist worker's) seconds.
for module, project in (("jupyterlab", "jupyterlab"), ("jupyter_lsp", "jupyterlab-lsp")):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{project} is not installed", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = os.environ.get("JAX_LSP_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
LAUNCH_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = REPO / "docs" / "jupyterlab.png"
GROUP = "jupyter_lsp_spec_v1"

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium found (apt-get install chromium)")

POLICY = [
    "import jax\n",
    "import jax.numpy as jnp\n",
    "\n",
    "\n",
    "def save_matmuls(prim, *args, **params):\n",
    '    if prim.name == "dot_general":\n',
    "        return True",
]
SITE = ["%time\n", "layer = jax.checkpoint(jnp.sin, policy=save_matmuls)\n", "layer(1.0)"]
FILE = "import jax\n\n\ndef policy(prim, *args, **params):\n    return\n\n\nf = jax.checkpoint(abs, policy=policy)\n"


def _notebook() -> str:
    def cell(kind: str, source: list[str]) -> dict:
        extra = {"execution_count": None, "outputs": []} if kind == "code" else {}
        return {"cell_type": kind, "metadata": {}, "source": source, **extra}

    return (
        json.dumps(
            {
                "cells": [cell("markdown", ["# A remat policy"]), cell("code", POLICY), cell("code", SITE)],
                "metadata": {
                    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                    "language_info": {"name": "python"},
                },
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )
        + "\n"
    )


def _spec_path(tmp: Path) -> list[str]:
    """Where jupyter-lsp will find jax-lsp's entry point. Installed (`pip install .`), it is in
    the environment's metadata; run from a checkout whose editable install predates it, a
    dist-info written from this checkout's pyproject.toml declares it the same way."""
    if any(ep.name == "jax-lsp" for ep in entry_points(group=GROUP)):
        return []
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    dist = tmp / "entry-point" / "jax_lsp-0.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-lsp-checkout\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items())
    )
    return [str(dist.parent)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path):
    """A JupyterLab server on a project folder, isolated from the user's Jupyter settings."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "model.ipynb").write_text(_notebook())
    (work / "policies.py").write_text(FILE)
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), *_spec_path(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    log = (tmp_path / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--allow-root",
            f"--ServerApp.root_dir={work}",
            "--LabApp.expose_app_in_browser=True",
        ],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/lsp/status", timeout=5) as reply:
                    status = json.load(reply)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        "JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:]
                    )
                time.sleep(0.5)
        assert "jax-lsp" in status["specs"], f"jupyter-lsp did not find jax-lsp: {sorted(status['specs'])}"
        yield url, work, tmp_path / "jupyterlab.log"
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _lint_ranges(cell):
    return cell.locator(".cm-lintRange-error, .cm-lintRange-warning")


def test_jupyterlab_shows_jax_lsp_diagnostics_in_notebook_cells_and_files(lab, tmp_path: Path) -> None:
    url, _, server_log = lab
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=BROWSER, args=LAUNCH_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 640})
            page.goto(f"{url}/lab/tree/model.ipynb")
            cells = page.locator(".jp-Notebook .jp-Cell")
            cells.nth(2).wait_for(timeout=90_000)
            policy_cell = cells.nth(1)

            # The policy's name is underlined in its own cell; the site that uses it is in the next.
            underline = _lint_ranges(policy_cell).first
            try:
                underline.wait_for(timeout=90_000)
            except playwright.TimeoutError:
                pytest.fail("no diagnostic in the cell; server log:\n" + server_log.read_text()[-4000:])
            assert underline.inner_text() == "save_matmuls"
            assert _lint_ranges(cells.nth(2)).count() == 0  # reported where the policy is, not at its use
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            underline.hover()
            tooltip = page.locator(".cm-tooltip-lint").filter(has_text="can reach the end of its body").first
            tooltip.wait_for(timeout=30_000)
            assert (
                tooltip.locator(".cm-diagnosticText")
                .inner_text()
                .startswith("`save_matmuls` can reach the end of its body and return `None`")
            )
            assert tooltip.locator(".cm-diagnosticSource").inner_text() == "jax-lsp"
            shot = tmp_path / "jupyterlab.png"
            page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1100, "height": 400})
            if os.environ.get("JAX_LSP_UPDATE_SCREENSHOT") == "1":
                shutil.copyfile(shot, SCREENSHOT)

            # Fix the policy by typing in the cell: the diagnostic goes.
            page.mouse.move(0, 0)
            policy_cell.locator(".cm-content").click()
            page.keyboard.press("Control+End")
            page.keyboard.insert_text("\n    return False")
            page.wait_for_function(
                "cell => cell.querySelectorAll('.cm-lintRange-error').length === 0",
                arg=policy_cell.element_handle(),
                timeout=60_000,
            )
            assert "return False" in policy_cell.locator(".cm-content").inner_text()

            # A Python file in the file editor is checked too.
            page.goto(f"{url}/lab/tree/policies.py")
            editor = page.locator(".jp-FileEditor").first
            editor.wait_for(timeout=60_000)
            assert _lint_ranges(editor).first.inner_text(timeout=60_000) == "return"
        finally:
            browser.close()

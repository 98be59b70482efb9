"""`advise FILE:LINE` names the site from any line of its checkpoint call, from `jax.remat(` to
its closing parenthesis, as grep finds the call's first line (issue 47: simply's
`model_lib.py:3084` answered "No checkpoint policy" with the `policy=` two lines below)."""

from __future__ import annotations

import json
import textwrap

import pytest

from jax_lsp.cli.site_argument import Project, SiteArgument
from jax_lsp.trace.advisor.sites import advise_anchors, anchor_of_line

# simply's shape (google-deepmind/simply, model_lib.py): the policy chosen by a config string,
# the call spread over lines, inside a loop body that a scan runs; and a checkpoint that passes
# no policy, over two lines.
MODEL = """
import jax
import jax.numpy as jnp

REMAT_POLICY = "dots_saveable"


def block(x, w):
    return jnp.tanh(x @ w)


def stack(x, ws):
    def body(x, w):
        apply_fn = block
        apply_fn = jax.remat(
            apply_fn,
            policy=getattr(
                jax.checkpoint_policies, REMAT_POLICY, None
            ),
        )
        return apply_fn(x, w), None

    return jnp.sum(jax.lax.scan(body, x, ws)[0])


plain = jax.checkpoint(
    block,
)


def example():
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    return {"fn": stack, "args": (x, jax.ShapeDtypeStruct((3, 8, 8), jnp.float32))}
"""


def _lines(text: str, start: str, end: str) -> range:
    """The 1-based lines from the first holding ``start`` to the next holding ``end``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    last = next(i for i in range(first, len(lines)) if lines[i].strip() == end)
    return range(first + 1, last + 2)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MODEL).lstrip(), encoding="utf-8")
    return path


def test_every_line_of_the_call_names_its_site(model):
    text = model.read_text()
    project = Project.open(model, None)
    anchors = {a.line: a for a in advise_anchors(project.workspace, str(model))}
    policy_line = next(line for line in anchors if "policy=getattr" in text.splitlines()[line - 1])
    default_line = next(line for line in anchors if "plain =" in text.splitlines()[line - 1])
    for lines, site in [
        (_lines(text, "jax.remat(", ")"), policy_line),
        (_lines(text, "plain = jax.checkpoint(", ")"), default_line),
    ]:
        for line in lines:
            positions = SiteArgument(model, line, None).positions(
                project.workspace, "advise", advise_anchors, anchor_of_line
            )
            assert positions == [(site, anchors[site].column)], line
    assert anchor_of_line(project.workspace, str(model), 0) is None  # `import jax`


@pytest.mark.jax  # runs the trace agent under real JAX
def test_advise_at_the_first_line_of_the_call(cli, capsys, model):
    first = _lines(model.read_text(), "jax.remat(", ")")[0]
    code = cli(["advise", f"{model}:{first}", "--example", "model.py:example", "--output-format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data
    assert data["status"] == "ok"
    assert data["target"]["line"] == first + 2  # the `policy=` value's line
    assert [p["policy"] for p in data["policies"] if p["current"]] == [
        "jax.checkpoint_policies.dots_saveable"
    ]

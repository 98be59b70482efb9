"""The list of what the current policy keeps, under the table (`trace/advisor/residual_list.py`):
grouped by the line that made it, the largest first, the largest ten shown and the rest summed,
every one on request; the JSON keeps every residual as it was."""

from __future__ import annotations

import re
from pathlib import Path

from jax_lsp.cli.output.advisor_table import advice_table
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.report import format_markdown
from jax_lsp.trace.advisor.sizes import format_bytes

ROOT = Path("/p")
MiB = 2**20
LINES = 13  # lines of the model that make a residual, more than the ten shown


def _residual(line, size, kind="computed", description="output of dot_general", reason="policy"):
    made = {"path": "/p/model.py", "line": line} if line is not None else {}
    return {
        "shape": [size // 4],
        "dtype": "float32",
        "bytes": size,
        "memory": "device",
        "kind": kind,
        "description": description,
        "reason": reason,
        **made,
    }


def _advice():
    """Parameters first (as JAX lists them), then a value per line of the model in an order that is
    not its size's, a Python loop's four alike values on line 30, and the largest value last."""
    residuals = [
        _residual(None, 128 * MiB, "argument", f"from the argument params[{i}]", "argument") for i in range(6)
    ]
    residuals += [_residual(10 + i, (i * 7 % LINES + 1) * MiB) for i in range(LINES)]
    residuals += [_residual(30, 4 * MiB, description="output of tanh", reason="named")] * 4
    residuals += [_residual(40, 1024 * MiB, description="output of exp", reason="default")]
    policy = {
        "policy": "jax.checkpoint_policies.dots_saveable",
        "current": True,
        "device_bytes": sum(r["bytes"] for r in residuals),
        "host_bytes": 0,
        "recompute_flops": 0,
        "peak_bytes": 2**31,
        "residuals": residuals,
    }
    answer = {"status": "ok", "jax_version": "0.10.2", "platform": "cpu", "policies": [policy]}
    return Advice.from_agent({**answer, "target": {"path": "/p/model.py", "line": 5}}, "/p/model.py", 5)


def _listed(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("The current policy keeps"))
    return [line for line in lines[start + 1 :] if line.startswith("  ")]


def test_grouped_by_line_largest_first_ten_shown_the_rest_summed():
    advice = _advice()
    listed = _listed(advice_table(advice, ROOT))
    assert len(listed) == 11
    places = [line.split()[0] for line in listed[:10]]
    assert places[:3] == ["model.py:40", "arguments", "model.py:30"]
    sizes = [line.split()[1:3] for line in listed[:10]]
    assert sizes[:3] == [["1", "GiB"], ["768", "MiB"], ["16", "MiB"]]
    # the loop's four alike values are one line; the parameters another, by name, largest first
    assert listed[2].split(None, 3)[3] == "f32[1048576] x4 output of tanh · saved by name"
    assert (
        "params[0] f32[33554432], params[1] f32[33554432], params[2] f32[33554432], … 3 more · an argument"
        in listed[1]
    )
    per_line = [int(line.split()[1]) for line in listed[3:10]]
    assert per_line == sorted(per_line, reverse=True) == [13, 12, 11, 10, 9, 8, 7]
    rest = sum(range(1, 7)) * MiB
    assert listed[10] == f"  ... 6 more arrays, {format_bytes(rest)} (--residuals all lists them)"


def test_every_one_on_request_and_in_markdown():
    advice = _advice()
    every = _listed(advice_table(advice, ROOT, residuals=None))
    assert len(every) == 3 + LINES and not any(line.lstrip().startswith("...") for line in every)
    assert "params[5]" in every[1] and "more" not in every[1]
    markdown = format_markdown(advice, ROOT)
    items = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert items[0] == "- `model.py:40` 1 GiB: f32[268435456] output of exp · kept whatever the policy"
    assert items[10] == f"- ... 6 more arrays, {format_bytes(sum(range(1, 7)) * MiB)}"
    assert (
        len(
            [
                line
                for line in format_markdown(advice, ROOT, residuals=None).splitlines()
                if line.startswith("- ")
            ]
        )
        == 16
    )


def test_the_json_keeps_every_residual_in_the_agents_order():
    advice = _advice()
    written = advice.to_contract(None)["policies"][0]["residuals"]
    assert [(r["line"], r["bytes"]) for r in written] == [(r.line, r.bytes) for r in advice.current.residuals]
    assert len(written) == 6 + LINES + 4 + 1 and written[0]["kind"] == "argument"
    assert [r["group"] for r in written[6 + LINES :]] == [6 + LINES] * 4 + [None]
    assert re.match(r"^\d+$", str(written[-1]["bytes"]))

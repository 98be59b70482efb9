"""What the agent gives a written policy's search: each residual's span (the expression that made
it, inside the scan that stacks it too), files' texts given by the request (`overlay`) imported
in place of the disk's, and a candidate named by its text (`only`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from jax_lsp.trace.options import TraceOptions
from jax_lsp.trace.service import site_params
from tests.agent import ADVISOR_FIXTURES, AgentTraceService, line_of

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

DOTS = "jax.checkpoint_policies.dots_saveable"


def ask(
    service: AgentTraceService,
    path: Path,
    line: int,
    root: Path,
    example: str,
    import_root: Path | None = None,
    **more: Any,
) -> dict:
    params = {
        **site_params(path, line, None, root, import_root),
        "example": example,
        "cwd": str(root),
        **more,
    }
    job = service.submit(
        "advise", params, TraceOptions(), interpreter=None, cwd=str(root), answer=lambda a: a
    )
    answer = job.future.result()
    assert isinstance(answer, dict) and answer["status"] == "ok", answer
    return answer


def spanned(text: str, span: list[int]) -> str:
    """The text of a one-line span (UTF-8 columns)."""
    line, column, end_line, end_column = span
    assert line == end_line
    return text.splitlines()[line - 1].encode("utf-8")[column:end_column].decode("utf-8")


def computed(answer: dict, policy: str) -> list[dict]:
    entry = next(p for p in answer["policies"] if p["policy"] == policy)
    return [r for r in entry["residuals"] if r["kind"] == "computed"]


def test_each_residual_says_the_expression_that_made_it(service: AgentTraceService, tmp_path: Path) -> None:
    shutil.copy(ADVISOR_FIXTURES / "mlp.py", tmp_path)
    path = tmp_path / "mlp.py"
    answer = ask(service, path, line_of(path), tmp_path, "mlp.py:example", policies=[DOTS])
    text = path.read_text(encoding="utf-8")
    assert sorted(spanned(text, r["span"]) for r in computed(answer, DOTS)) == ["h @ w2", "x @ w1"]


def test_a_scans_residual_says_the_expression_inside_the_layer(
    service: AgentTraceService, tmp_path: Path
) -> None:
    shutil.copy(ADVISOR_FIXTURES / "write_stack.py", tmp_path)
    path = tmp_path / "write_stack.py"
    answer = ask(service, path, line_of(path), tmp_path, "write_stack.py:example", policies=[DOTS])
    text = path.read_text(encoding="utf-8")
    stacked = computed(answer, DOTS)
    made = sorted(spanned(text, r["made_at"]["span"]) for r in stacked if r["reason"] == "policy")
    assert made == ["gate @ w_out", "h @ w_gate", "h @ w_in"]
    assert {spanned(text, r["span"]) for r in stacked if r["reason"] == "policy"} == {
        "jax.lax.scan(block, h, weights)"  # the residual itself: stacked at the scan's call
    }


def test_files_given_by_the_request_are_imported_as_given(service: AgentTraceService, tmp_path: Path) -> None:
    shutil.copytree(ADVISOR_FIXTURES / "library_site", tmp_path, dirs_exist_ok=True)
    installed = tmp_path / "site-packages"  # stacklib as an installed package
    site, user = installed / "stacklib" / "blocks.py", tmp_path / "user_model.py"
    text = user.read_text(encoding="utf-8")
    tagged = "from jax.ad_checkpoint import checkpoint_name\n" + text.replace(
        "return jnp.tanh(jnp.tanh(h @ w) @ w)",
        'return jnp.tanh(checkpoint_name(jnp.tanh(h @ w), "inner") @ w)',
    )
    assert tagged != text
    kept = "jax.checkpoint_policies.save_only_these_names('inner')"
    line = line_of(site, "jax.checkpoint(block, policy=policy)")
    example = "user_model.py:direct_example"
    answer = ask(
        service, site, line, tmp_path, example, installed, policies=[kept], overlay={str(user): tagged}
    )
    assert "inner" in answer["names"]
    assert {r["name"] for r in computed(answer, kept) if r["reason"] == "named"} == {"inner"}
    assert user.read_text(encoding="utf-8") == text  # the disk is untouched
    plain = ask(service, site, line, tmp_path, example, installed, policies=[kept])  # the same agent, warm
    assert "inner" not in plain["names"]
    assert not [r for r in computed(plain, kept) if r["reason"] == "named"]

    # the site's own file given, an import added above the site: its line is the given text's;
    # and a candidate named by its text is the one answered
    site_text = site.read_text(encoding="utf-8")
    moved = "import math\n" + site_text
    only = ask(
        service,
        site,
        line + 1,
        tmp_path,
        example,
        installed,
        policies=[DOTS, kept],
        overlay={str(site): moved},
        only=kept,
    )
    assert [p["policy"] for p in only["policies"]] == [kept]


SITE_WITH_ANNOTATIONS = """
from typing import NamedTuple

import jax
import jax.numpy as jnp

import cache_types


class Out(NamedTuple):
    value: jax.Array


def block(x):
    # as a runtime type checker does: the fields' annotations must be types, not strings
    assert Out.__annotations__["value"] is jax.Array, Out.__annotations__
    assert cache_types.Cache.__annotations__["state"] is jax.Array, cache_types.Cache.__annotations__
    return Out(jnp.sin(x)).value


step = jax.checkpoint(block, policy=jax.checkpoint_policies.nothing_saveable)


def example():
    return (jax.ShapeDtypeStruct((4,), jnp.float32),)
"""
CACHE_TYPES = """
from typing import NamedTuple

import jax


class Cache(NamedTuple):
    state: jax.Array
"""


def test_the_sites_and_the_given_files_own_annotations(service: AgentTraceService, tmp_path: Path) -> None:
    """The site's module and a given file are compiled with their own `from __future__` imports,
    not the agent's (which postpones annotations): a NamedTuple's field types stay types."""
    (tmp_path / "annotated.py").write_text(SITE_WITH_ANNOTATIONS, encoding="utf-8")
    (tmp_path / "cache_types.py").write_text(CACHE_TYPES, encoding="utf-8")
    path = tmp_path / "annotated.py"
    given = {str(tmp_path / "cache_types.py"): CACHE_TYPES + "\n# as a tag's edit leaves it\n"}
    answer = ask(
        service, path, line_of(path), tmp_path, "annotated.py:example", policies=[DOTS], overlay=given
    )
    assert [p["policy"] for p in answer["policies"]][-1] == DOTS

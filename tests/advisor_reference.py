"""JAX's own `saved_residuals` for a fixture project's example, the site's policy replaced by a
candidate, imported the way Python imports it (the project's folder on sys.path, a fresh copy of
it per candidate); and the check that an advice lists exactly that."""

from __future__ import annotations

import ast
import collections
import importlib
import itertools
import math
import shutil
import sys
from pathlib import Path

try:
    from jax.ad_checkpoint import saved_residuals  # type: ignore[attr-defined, unused-ignore]
except ImportError:
    from jax._src.ad_checkpoint import saved_residuals

_fresh = itertools.count()


def reference_residuals(project: Path, site: str, line: int, policy: str, example: str, workdir: Path):
    """``saved_residuals`` of the example ``MODULE:FUNCTION`` of ``project`` (its ``{"fn", "args",
    "kwargs"}``) with the ``policy=`` value at ``line`` of the file ``site`` replaced by ``policy``."""
    copy = workdir / f"reference_{next(_fresh)}"
    shutil.copytree(project, copy)
    text = (copy / site).read_bytes()
    value = next(
        n.value
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.keyword) and n.arg == "policy" and n.value.lineno == line
    )
    lines = text.splitlines(keepends=True)

    def offset(row: int, column: int) -> int:  # ast columns are byte offsets
        return sum(len(r) for r in lines[: row - 1]) + column

    start, end = (
        offset(value.lineno, value.col_offset),
        offset(value.end_lineno or line, value.end_col_offset or 0),
    )
    (copy / site).write_bytes(text[:start] + policy.encode() + text[end:])
    module_name, _, function = example.partition(":")
    sys.path.insert(0, str(copy))
    try:
        made = getattr(importlib.import_module(module_name), function)()
        return saved_residuals(made["fn"], *made["args"], **made.get("kwargs", {}))
    finally:
        sys.path.remove(str(copy))
        for name, module in list(sys.modules.items()):
            places = [getattr(module, "__file__", None) or "", *(getattr(module, "__path__", None) or [])]
            if any(str(place).startswith(str(copy)) for place in places):
                del sys.modules[name]


def assert_lists_what_jax_lists(policies, reference) -> None:
    """Every entry of ``policies`` (an `Advice`'s) keeps what ``reference(policy_text)`` lists:
    the same arrays (shape, dtype, memory) and bytes."""
    assert len(policies) >= 4
    for entry in policies:
        assert entry.error is None, (entry.policy, entry.error)
        expected = reference(entry.policy)
        ours = collections.Counter((r.shape, r.dtype, r.memory) for r in entry.residuals)
        theirs = collections.Counter(
            (
                tuple(a.shape),
                str(a.dtype),
                "host" if "host" in str(getattr(a, "memory_space", "")).lower() else "device",
            )
            for a, _ in expected
        )
        assert ours == theirs, entry.policy
        total = sum(math.prod(a.shape) * a.dtype.itemsize for a, _ in expected)
        assert entry.device_bytes + entry.host_bytes == total, entry.policy

"""Fixtures of the engine's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from jax_lsp.core.text import source
from jax_lsp.engine import module_cache


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The files the core parses, whole or as far as their sites need (the real parser, counted)."""
    parsed: list[str] = []
    real, real_partially = source.parse_bytes, module_cache._parse_for_sites

    def counting(data: bytes, path: str, *args, **kwargs):
        parsed.append(Path(path).name)
        return real(data, path, *args, **kwargs)

    def counting_partially(data: bytes, path: str):
        found = real_partially(data, path)
        if found is not None:  # else the file is parsed whole, and counted there
            parsed.append(Path(path).name)
        return found

    monkeypatch.setattr(source, "parse_bytes", counting)  # the module cache imports it where it parses
    monkeypatch.setattr(module_cache, "_parse_for_sites", counting_partially)
    return parsed

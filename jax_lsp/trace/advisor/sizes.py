"""Sizes and counts for people: ``24GiB`` read as bytes (`parse_size`), bytes and FLOPs written
short (`format_bytes`, `format_flops`), as the advisor's table, hover and settings show them."""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]i?b|b)?\s*$", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """``24GiB``, ``600000B``, ``1.5 GB``, ``4096`` (bytes) as a number of bytes."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size: write e.g. 24GiB, 512MiB or 600000B")
    unit = (match["unit"] or "b").lower()
    return int(float(match["number"]) * _UNITS[unit])


def format_bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{count} B"  # pragma: no cover


def format_flops(count: int | None) -> str:
    if count is None:
        return "?"
    if count == 0:
        return "0"
    value = float(count)
    for unit in ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"):
        if value < 1000 or unit == "PFLOP":
            return f"{value:.3g} {unit}" if unit != "FLOP" else f"{count} FLOP"
        value /= 1000
    return str(count)  # pragma: no cover

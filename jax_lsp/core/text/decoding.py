"""Bytes to text and text to lines, as Python and LSP count them."""

from __future__ import annotations

import codecs
import io
import re

_LINE = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z"  # compiled at its first use (re.findall)


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split only where Python and LSP split (\n, \r\n, \r).

    str.splitlines also splits at form feeds and U+2028, which would shift every line after."""
    # Most files: a split at \n alone, many times faster than the expression (in C, the
    # endings kept).
    lines = io.StringIO(text, newline="\n").readlines() if "\r" not in text else re.findall(_LINE, text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


# tokenize's encoding declaration (its cookie_re), and the names it reads as UTF-8 (_get_normal_name).
_COOKIE = r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)"


def _declares_utf8_or_nothing(line: str) -> bool:
    cookie = re.match(_COOKIE, line, re.ASCII)
    name = cookie.group(1)[:12].lower().replace("_", "-") if cookie else "utf-8"
    return name == "utf-8" or name.startswith("utf-8-")


def _detect_encoding(data: bytes) -> str:
    """tokenize.detect_encoding's encoding for `data` (raising SyntaxError as it does); without
    tokenize (~2 ms to import) when the first two lines are UTF-8 and declare no encoding, or
    UTF-8 (`# coding=utf-8`): whichever line tokenize would read the declaration from, it says
    UTF-8, as no declaration does."""
    first = data.find(b"\n")
    second = -1 if first < 0 else data.find(b"\n", first + 1)
    head = data if second < 0 else data[: second + 1]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        bom = data.startswith(codecs.BOM_UTF8)
        if "coding" not in text:
            return "utf-8-sig" if bom else "utf-8"
        if not bom and all(_declares_utf8_or_nothing(line) for line in text.split("\n")):
            return "utf-8"
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def decode(data: bytes) -> tuple[str, str, str | None]:
    """Bytes -> (text, encoding, problem). Never raises: undecodable bytes become U+FFFD."""
    try:
        encoding = _detect_encoding(data)
    except SyntaxError as exc:
        return data.decode("utf-8", "replace"), "utf-8", f"Cannot detect the encoding: {exc}"
    try:
        codecs.lookup(encoding)
    except LookupError:
        return data.decode("utf-8", "replace"), "utf-8", f"Unknown encoding {encoding!r}"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        text = data.decode(encoding, "replace")
        return text, encoding, f"Not valid {encoding} (line {line}); undecodable bytes were replaced"
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, encoding, None

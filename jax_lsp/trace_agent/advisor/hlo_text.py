"""The text of an optimized HLO module (``compiled.as_text()``), read as far as the step's
cost needs: its computations, each instruction's name, result type (arrays with their memory
space), opcode, operands and attributes, and the computations an instruction calls."""

from __future__ import annotations

import math
import re

# Bytes per element by HLO element type.
_ITEM_BYTES = {
    "pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4,
    "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
}  # fmt: skip
_F8 = re.compile(r"f8e\w+")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([\d,]*)\](\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?")
NAME = r"%?[\w.\-]+"
_HEADER = re.compile(rf"^(ENTRY\s+)?({NAME})\s*\(.*\)\s*->\s*.*\{{\s*$")
_INSTRUCTION = re.compile(rf"^\s*(ROOT\s+)?({NAME})\s*=\s*(.*)$")
CALLED = re.compile(rf"\b(calls|to_apply|body|condition)=({NAME})")


def called_computations(instruction):
    """``{"calls" | "to_apply" | "body" | "condition": computation}`` an instruction names."""
    return {kind: name.lstrip("%") for kind, name in CALLED.findall(instruction.attributes)}


class Instruction:
    """One line of HLO: its name, result type, opcode, operands and the rest of the line."""

    __slots__ = ("name", "type", "opcode", "operands", "attributes", "root", "literal")

    def __init__(self, name, type_text, opcode, operands, attributes, root, literal=None):
        self.name = name
        self.type = type_text
        self.opcode = opcode
        self.operands = operands
        self.attributes = attributes
        self.root = root
        self.literal = literal  # a constant's value, as written


def _balanced(text, start):
    """The index just past the bracket closing the one at ``text[start]``."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = []
    for index in range(start, len(text)):
        char = text[index]
        if char in pairs:
            stack.append(pairs[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return index + 1
    return len(text)


def _instruction(line):
    match = _INSTRUCTION.match(line)
    if match is None:
        return None
    root, name, rest = match.group(1), match.group(2).lstrip("%"), match.group(3)
    if rest.startswith("("):  # a tuple type
        end = _balanced(rest, 0)
    else:
        end = rest.find(" ")
        end = len(rest) if end < 0 else end
    type_text, rest = rest[:end], rest[end:].lstrip()
    paren = rest.find("(")
    if paren < 0:
        return None
    opcode = rest[:paren].strip()
    close = _balanced(rest, paren)
    inside = rest[paren + 1 : close - 1]
    operands = [token.lstrip("%") for token in re.findall(NAME, inside) if token.startswith("%")]
    literal = inside.strip() if opcode in ("constant", "parameter") else None
    return Instruction(name, type_text, opcode, operands, rest[close:], bool(root), literal)


def parse_module(text):
    """``({computation: [Instruction]}, entry)`` of an HLO module's text."""
    computations, entry, current = {}, None, None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header is not None and not line.startswith(" "):
            current = header.group(2).lstrip("%")
            computations[current] = []
            if header.group(1):
                entry = current
            continue
        if current is None:
            continue
        if line.startswith("}"):
            current = None
            continue
        instruction = _instruction(line)
        if instruction is not None:
            computations[current].append(instruction)
    return computations, entry


def arrays(type_text):
    """``[(element type, dims, memory space)]`` of a result type (a tuple's arrays in order)."""
    found = []
    for match in _ARRAY.finditer(type_text):
        dtype, dims, layout = match.group(1), match.group(2), match.group(3) or ""
        space = re.search(r"S\((\d+)\)", layout)
        shape = tuple(int(d) for d in dims.split(",") if d)
        found.append((dtype, shape, space.group(1) if space else "0"))
    return found


def bytes_of(array):
    dtype, shape, _ = array
    size = _ITEM_BYTES.get(dtype, 1 if _F8.fullmatch(dtype) else 0)
    return int(size * math.prod(shape))

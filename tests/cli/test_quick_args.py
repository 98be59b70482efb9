"""A plain `jax-lsp check` command line is read without argparse (cli.quick_args): into the
same values argparse gives, or not at all, leaving argparse its result or its error."""

from __future__ import annotations

import pytest

from jax_lsp.cli.parser import build_parser
from jax_lsp.cli.quick_args import quick_args

READ_QUICKLY = [
    ["check"],
    ["check", "a.py"],
    ["check", "a.py", "src", ""],
    ["check", "--no-cache", "a.py", "b.py"],
    ["check", "a.py", "b.py", "--no-cache", "--verbose"],
    ["check", "--output-format", "json", "--select", "JAX101,JAX102", "--ignore", "JAX110", "."],
    ["check", "--jobs", "3", "--cache-dir", "cache", "--config", "p/pyproject.toml", "x"],
    ["check", "--fix", "--unsafe-fixes", "--output-format", "concise", "--output-format", "github"],
    ["check", "--trace", "--interpreter", "/usr/bin/python3", "--trace-timeout", "2.5"],
    ["check", "--trace-memory-limit-mb", "100", "check", "trace"],
]

LEFT_TO_ARGPARSE = [
    ["check", "--help"],
    ["check", "-h"],
    ["check", "--no-c", "a.py"],  # an abbreviation
    ["check", "--output-format=json", "a.py"],
    ["check", "--output-format", "yaml"],  # not a choice
    ["check", "--jobs", "many"],  # not an int
    ["check", "--jobs"],  # no value
    ["check", "--select", "-JAX101"],  # a value that looks like an option
    ["check", "a.py", "--no-cache", "b.py"],  # argparse refuses the second run of paths
    ["check", "--", "a.py"],
    ["check", "-"],
    ["check", "--version"],
    ["--version"],
    ["trace", "x.py"],
    [],
]


def _argparse_values(argv: list[str]) -> dict[str, object]:
    return vars(build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", READ_QUICKLY)
def test_a_plain_check_gets_the_values_argparse_gives(argv: list[str]) -> None:
    quick = quick_args(argv)
    assert quick is not None
    assert vars(quick) == _argparse_values(argv)


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_any_other_command_line_is_left_to_argparse(argv: list[str]) -> None:
    assert quick_args(argv) is None


def test_argparse_reads_the_command_lines_left_to_it_otherwise() -> None:
    # Each is left to argparse for a reason of its own: argparse accepts it, or refuses it.
    assert _argparse_values(["check", "--no-c", "a.py"])["no_cache"] is True
    assert _argparse_values(["check", "--output-format=json"])["output_format"] == "json"
    for refused in (["check", "--output-format", "yaml"], ["check", "a.py", "--no-cache", "b.py"]):
        with pytest.raises(SystemExit):
            build_parser(refused).parse_args(refused)

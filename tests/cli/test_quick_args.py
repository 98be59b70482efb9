"""A plain `jax-lsp check` command line is read without argparse (cli.quick_args): into the
same values argparse gives, or not at all, leaving argparse its result or its error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _check_options() -> list[str]:
    parser = build_parser(["check"])
    (subparsers,) = [action for action in parser._actions if action.choices and "check" in action.choices]
    check = subparsers.choices["check"]
    return [flag for action in check._actions for flag in action.option_strings]


# Tokens of a `check` command line: every option of the command, values of each kind its options
# take or refuse, paths, and the spellings argparse reads otherwise (abbreviated, `=`, `-`, `--`).
TOKENS = [
    *_check_options(),
    *("json", "full", "yaml", "3", "0", "-1", "2.5", "JAX101,JAX1", "a.py", "src", "", "é.py"),
    *("--no-c", "--output-format=json", "--sel", "-", "--", "-x", "trace", "check", "--version"),
]


def _argparse_result(argv: list[str]) -> dict[str, object] | None:
    """argparse's values for `argv`, or None where it refuses it."""
    try:
        return _argparse_values(argv)
    except SystemExit:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_a_command_line_read_quickly_is_read_as_argparse_reads_it(tokens: list[str]) -> None:
    argv = ["check", *tokens]
    quick = quick_args(argv)
    if quick is not None:
        assert vars(quick) == _argparse_result(argv)


@settings(max_examples=150, deadline=None)
@given(
    paths=st.lists(st.sampled_from(["a.py", "src", "", "é.py", "check"]), max_size=3),
    options=st.lists(
        st.sampled_from(
            [
                ["--no-cache"],
                ["--fix"],
                ["--verbose"],
                ["--output-format", "json"],
                ["--select", "JAX101"],
                ["--jobs", "2"],
                ["--trace-timeout", "1.5"],
            ]
        ),
        max_size=4,
    ),
    paths_first=st.booleans(),
)
def test_paths_and_full_options_with_valid_values_are_read_quickly(
    paths: list[str], options: list[list[str]], paths_first: bool
) -> None:
    flat = [token for option in options for token in option]
    argv = ["check", *(paths + flat if paths_first else flat + paths)]
    quick = quick_args(argv)
    assert quick is not None
    assert vars(quick) == _argparse_result(argv)

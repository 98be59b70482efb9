"""How a command says what went wrong: one line on stderr, `jax-lsp: error: MESSAGE`, whatever
the command; and a command that cannot go on exits 2 (1 is "findings"), leaving on stdout
what a script that parses it can still read: the command's empty answer in the format asked
for (`[]` of `trace --output-format json`), where it has one."""

from __future__ import annotations

import sys
from collections.abc import Callable

ERROR_EXIT = 2


def say_error(message: str) -> None:
    print(f"jax-lsp: error: {message}", file=sys.stderr)


def fail(output_format: str, message: str, empty_answer: Callable[[str], str | None]) -> int:
    """Say `message` and give the exit status of an error; `empty_answer(output_format)`: the
    answer to print first (None: nothing), such as a mapping's `get` (`{"json": "[]\\n"}.get`)."""
    answer = empty_answer(output_format)
    if answer is not None:
        sys.stdout.write(answer)
    say_error(message)
    return ERROR_EXIT

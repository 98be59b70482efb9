"""Write docs/rules/JAX1xx.md and examples/JAX1xx_*.py from the rules themselves.

    python -m jax_lsp.rules.generate [REPO_ROOT]

The test suite checks that the committed files match, so docs and examples never drift
from the rules they describe."""

from __future__ import annotations

import sys
from pathlib import Path

from jax_lsp.rules import ALL_RULES


def rule_files() -> dict[str, str]:
    """Relative path -> content of every generated file."""
    files: dict[str, str] = {}
    index = ["# Rules", "", "| code | name | severity | summary |", "|---|---|---|---|"]
    for rule in ALL_RULES:
        files[f"docs/rules/{rule.code}.md"] = rule.docs()
        index.append(
            f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.severity.value} | {rule.summary} |"
        )
        header = (
            f"# {rule.code} ({rule.name}): {rule.summary}.\n# `jax-lsp check examples/` reports this file.\n"
        )
        files[f"examples/{rule.code.lower()}_{rule.name.replace('-', '_')}.py"] = (
            header + rule.INVALID[0].code
        )
    files["docs/rules/README.md"] = "\n".join(index) + "\n"
    return files


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path.cwd()
    for relative, content in rule_files().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Write docs/rules/JAX1xx.md and examples/JAX1xx_*.py from the rules themselves, and the
index of every code, docs/rules/README.md, and the rules' table in README.md from the registry
of codes.

The pages of the codes that are not rules (JAX001, JAX002, JAX190, JAX191) are written by hand.

    python -m jax_lsp.rules.generate [REPO_ROOT]

The test suite checks that the committed files match, so docs and examples never drift
from the rules they describe."""

from __future__ import annotations

import sys
from pathlib import Path

from jax_lsp.core.codes import CODES, Family
from jax_lsp.rules import ALL_RULES


def rule_files() -> dict[str, str]:
    """Relative path -> content of every generated file."""
    files: dict[str, str] = {}
    for rule in ALL_RULES:
        files[f"docs/rules/{rule.code}.md"] = rule.docs()
        header = (
            f"# {rule.code} ({rule.name}): {rule.summary}.\n# `jax-lsp check examples/` reports this file.\n"
        )
        files[f"examples/{rule.code.lower()}_{rule.name.replace('-', '_')}.py"] = (
            header + rule.INVALID[0].code
        )
    index = ["# Codes", "", "| code | name | family | severity | summary |", "|---|---|---|---|---|"]
    for code in CODES.values():
        index.append(
            f"| [{code.code}]({code.code}.md) | {code.name} | {code.family.value} "
            f"| {code.severity.value} | {code.summary} |"
        )
    files["docs/rules/README.md"] = "\n".join(index) + "\n"
    return files


TABLE_START = "<!-- The rules' table: written by `python -m jax_lsp.rules.generate` from the registry. -->\n"
TABLE_END = "\n<!-- End of the rules' table. -->"


def readme_with_rules_table(readme: str) -> str:
    """README.md with its table of what jax-lsp finds (between the two markers) written from the
    registry: the rules, then what running under JAX finds (the file problems are left out)."""
    start = readme.index(TABLE_START) + len(TABLE_START)
    end = readme.index(TABLE_END, start)
    rows = ["| code | name | severity | finding |", "|---|---|---|---|"]
    for code in CODES.values():
        if code.family is not Family.FILE:
            rows.append(
                f"| [{code.code}](docs/rules/{code.code}.md) | {code.name} | {code.severity.value} "
                f"| {code.summary} |"
            )
    return readme[:start] + "\n".join(rows) + readme[end:]


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path.cwd()
    files = rule_files()
    files["README.md"] = readme_with_rules_table((root / "README.md").read_text(encoding="utf-8"))
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

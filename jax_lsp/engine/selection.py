"""The one selection step between every producer of findings and the user: the rules' pass,
`check --trace`, and the editor's trace and advisor all hand their findings to `admitted`.

It owns the `# noqa` comment, `select`/`ignore`, the `severity` overrides and what is admitted:
a file problem (family `file`) always; a rule's or the trace's finding when its code is
selected and no `# noqa` naming it (or a bare one) is on its first line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from jax_lsp.core.codes import Family, family_of
from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Finding

# A noqa comment, with the codes it names. Compiled at its first use (re keeps it): it costs
# ~1 ms, and is read only where something was found.
NOQA_COMMENT = r"(?i)#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?"

# The text of a 0-based line of a file, as the user sees it: (path, line) -> text.
LineText = Callable[[str, int], str]


def noqa_codes(line: str) -> set[str] | None:
    """None: no noqa; empty set: a bare `# noqa`; else the codes it names."""
    match = re.search(NOQA_COMMENT, line)
    if not match:
        return None
    codes = match.group("codes")
    return set(re.split(r"[,\s]+", codes.upper().strip())) if codes else set()


def silenced(line: str, code: str) -> bool:
    """Whether a `# noqa` on ``line`` silences ``code``."""
    codes = noqa_codes(line)
    return codes is not None and (not codes or code in codes)


def admitted(findings: Iterable[Finding], settings: Settings, line_text: LineText) -> list[Finding]:
    """The findings the user sees, in their order, each once, with its severity as the settings
    say."""
    result = []
    seen = set()
    for finding in findings:
        if family_of(finding.code) is not Family.FILE and (
            not settings.enabled(finding.code)
            or silenced(line_text(finding.path, finding.span.start.line), finding.code)
        ):
            continue
        severity = settings.severity_of(finding.code, finding.severity)
        finding = finding.replace(severity=severity) if severity != finding.severity else finding
        identity = (finding.code, finding.span, finding.message)
        if identity not in seen:
            seen.add(identity)
            result.append(finding)
    return result

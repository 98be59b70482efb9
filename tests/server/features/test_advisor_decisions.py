"""The advisor's decisions, free of LSP (issue 49, item 6): what the lens, hover and hints show
and what the quick fix suggests are decided in modules that import no LSP type, and answer here
without a server or JAX; the LSP adapter (`feature.py`) only converts them."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from jax_lsp.core.findings import Edit, Position, Span
from jax_lsp.server.features.advisor import shown, suggested
from jax_lsp.server.features.advisor.advised import EDITED, FROM_DISK, Advised, AdvisedFiles, advised
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.compiled import Compiled
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice, Residual, Select, Selector, Setting
from jax_lsp.trace.advisor.sites import DEFAULT
from jax_lsp.trace.mapping import LineEdit

FOLDER = Path(__file__).resolve().parents[3] / "jax_lsp" / "server" / "features" / "advisor"
# the LSP adapter (writing.py: its part for the written policy) and its registration
ADAPTERS = {"feature.py", "writing.py", "quick_fixes.py", "__init__.py"}  # those that talk to the server
LSP = ("lsprotocol", "pygls", "jax_lsp.server.")
READY = "jax.checkpoint_policies."
PATH = Path("/project/model.py")
SITE = Span(Position(9, 30), Position(9, 58))  # line 10's policy= value


def _lsp_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    own = "jax_lsp.server.features.advisor"
    return [name for name in names if name.startswith(LSP) and not name.startswith(own)]


def test_the_decisions_import_no_lsp_type():
    modules = sorted(p.name for p in FOLDER.glob("*.py"))
    assert set(modules) > ADAPTERS | {"shown.py", "suggested.py", "advised.py"}
    assert {
        m: _lsp_imports(FOLDER / m) for m in modules if m not in ADAPTERS and _lsp_imports(FOLDER / m)
    } == {}
    assert "lsprotocol" in _lsp_imports(FOLDER / "feature.py")  # the check sees an import


def _residual(line: int, nbytes: int) -> Residual:
    return Residual((nbytes,), "uint8", nbytes, "device", "computed", str(PATH), line, None, None, "output")


def _policy(name: str, nbytes: int, flops: int, current: bool = False, temp: int | None = None):
    compiled = Compiled(temp, 0, 0, 0) if temp is not None else None
    return PolicyAdvice(
        READY + name,
        current,
        nbytes,
        0,
        flops,
        (_residual(12, nbytes),),
        peak_bytes=2 * nbytes,
        compiled=compiled,
    )


def _advice(compiled: bool = True) -> Advice:
    temps = (4000, 1000) if compiled else (None, None)
    return Advice(
        "ok",
        "",
        str(PATH),
        10,
        jax_version="0.10.2",
        platform="cpu",
        policies=(
            _policy("everything_saveable", 2000, 0, current=True, temp=temps[0]),
            _policy("nothing_saveable", 0, 5000, temp=temps[1]),
        ),
    )


def _advised(advice: Advice | None = None, stale: str | None = None) -> Advised:
    return Advised(advice or _advice(), SITE, (11,), "site", "text", stale)


def test_the_lens_says_what_the_advice_holds():
    assert shown.lens(None, "site", has_example=False) == shown.Lens(
        "Advise policy: give an example (see docs/advise.md)", shown.ADVISE
    )
    assert shown.lens(None, DEFAULT, has_example=True).title == "Advise policy (none given: JAX's default)"
    stale = shown.lens(_advised(stale=EDITED), "site", has_example=True)
    assert stale == shown.Lens(f"Advise policy again: {EDITED}", shown.ADVISE)
    fresh = shown.lens(_advised(), "site", has_example=True)
    assert fresh.command == shown.COMPARE and fresh.title.endswith(" · Compare policies")


def test_a_suggestion_needs_a_budget_and_the_compiled_figures():
    assert suggested.suggestion(_advice(), None) is None
    assert suggested.suggestion(_advice(compiled=False), 2000) is None  # the fit check has not answered
    chosen = suggested.suggestion(_advice(), 2000)
    assert chosen is not None and chosen.policy == READY + "nothing_saveable"
    assert suggested.suggestion(_advice(), 10_000) is None  # the current fits: nothing better


def test_the_site_fix_writes_the_suggestion_over_the_policy_value():
    chosen = suggested.suggestion(_advice(), 2000)
    assert chosen is not None
    line = "f = jax.checkpoint(g, policy=jax.checkpoint_policies.everything_saveable)\n"
    lines = ["\n"] * 9 + [line]
    start = line.index("jax.checkpoint_policies")
    span = Span(Position(9, start), Position(9, line.index(")")))
    site = Advised(_advice(), span, (11,), "site", "text")
    fix = suggested.site_fix(PATH, lines, "".join(lines), site, chosen, "(why)")
    assert fix.note is None
    assert fix.title == "Use the suggested policy: nothing_saveable (why)"
    assert fix.edits == (Edit(str(PATH), span, READY + "nothing_saveable"),)


def test_the_hover_says_why_there_is_no_suggestion():
    text = shown.hover_markdown(_advised(), None)
    assert "no suggestion: set `advise.budget`" in text
    assert "suggested `nothing_saveable`" in shown.hover_markdown(_advised(), 2000)
    assert "Outdated: " in shown.hover_markdown(_advised(stale=EDITED), 2000)


def test_advice_follows_its_lines_and_goes_stale_when_they_change():
    files = AdvisedFiles()
    files.keep(PATH, _advised())
    # two lines inserted above the site: it and its residual's line move down
    assert files.follow(PATH, [LineEdit.of((2, 0), (2, 0), "a\nb\n")]) == []
    moved = files.at(PATH, 11)
    assert moved is not None and moved.span.start.line == 11 and moved.residual_lines == (13,)
    assert moved.stale is None
    # the residual's line edited: stale, said once
    made_stale = files.follow(PATH, [LineEdit.of((13, 0), (13, 1), "x")])
    assert [a.stale for a in made_stale] == [EDITED]
    assert files.follow(PATH, [LineEdit.of((13, 0), (13, 1), "y")]) == []
    assert files.at(PATH, 11) is not None and files.at(PATH, 11).current is None


def test_advice_of_another_text_than_the_buffer_is_stale_at_once():
    assert advised(PATH, SITE, "site", _advice(), "on disk", "in the buffer").stale == FROM_DISK
    assert advised(PATH, SITE, "site", _advice(), "same", "same").stale is None
    failed = Advice("example_error", "no", str(PATH), 10)
    assert advised(PATH, SITE, "site", failed, "same", "same") is None


def test_the_key_fix_edits_the_default_or_says_what_to_set():
    """Where a key chooses the policy (EasyLM's `config.remat_policy = '...'`): the fix rewrites
    the default's literal; where the default already holds the suggested key (EasyLM's example
    overrides it), or there is none, no edit: a note says what to set and where."""
    select = Select("nothing_saveable", "self.config.remat_policy")
    chosen = replace(_policy("nothing_saveable", 0, 5000, temp=1000), select=select)
    config = "/project/config.py"
    line = "    config.remat_policy = 'checkpoint_dots'"
    literal = Setting(config, 3, line.index("'"), len(line), "'checkpoint_dots'")
    selector = Selector(
        "self.config.remat_policy", "checkpoint_dots", ("checkpoint_dots", "nothing_saveable")
    )
    advice = replace(_advice(), selector=selector, setting=literal)

    def lines_of(text):
        return lambda path: ["", "", text] if path == config else []

    fix = suggested.key_fix(advice, chosen, "(why)", lines_of(line))
    assert fix.title == "Use the suggested policy: set remat_policy to 'nothing_saveable' (config.py:3) (why)"
    assert fix.edits == (
        Edit(config, Span(Position(2, literal.column), Position(2, len(line))), "'nothing_saveable'"),
    )
    already = replace(literal, text="'nothing_saveable'", end_column=literal.column + 18)
    same = suggested.key_fix(
        replace(advice, setting=already),
        chosen,
        "(why)",
        lines_of(line.replace("checkpoint_dots", "nothing_saveable")),
    )
    assert same.edits == () and same.note == (
        "config.py:3 already sets remat_policy to 'nothing_saveable'; the example ran with "
        "'checkpoint_dots': your run keeps that default unless it sets remat_policy"
    )
    none = suggested.key_fix(
        replace(advice, setting=None, setting_note="no literal default"), chosen, "(why)", lines_of(line)
    )
    assert (
        none.edits == ()
        and none.note == "Set self.config.remat_policy to 'nothing_saveable': no literal default"
    )

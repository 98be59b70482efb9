"""Bad input: syntax errors, encodings, NUL bytes, unicode, line endings."""

from __future__ import annotations

import ast
import threading

from jax_lsp.core import Settings
from jax_lsp.core.text.decoding import split_lines
from jax_lsp.core.text.edits import apply_edits
from jax_lsp.core.text.source import parse_bytes
from jax_lsp.engine import analyze_text

POLICY = "import jax\n\ndef bad(prim, *a, **k):\n    return None\n\nf = jax.checkpoint(g, policy=bad)\n"


def test_syntax_error_in_one_function_keeps_findings_in_the_rest(tmp_path):
    text = "def broken(:\n    pass\n\n" + POLICY + "\ndef half(x):\n    return (x +\n"
    findings = analyze_text(text, str(tmp_path / "m.py"))
    assert [(f.code, f.span.start.line) for f in findings] == [("JAX001", 0), ("JAX101", 6)]


def test_unicode_identifiers_and_text_give_code_point_columns(tmp_path):
    text = "import jax\n\ndef pólítica(prim, *a, **k):\n    x = '中文🙂'; return None\n\nf = jax.checkpoint(g, policy=pólítica)\n"
    (finding,) = analyze_text(text, str(tmp_path / "m.py"))
    line = text.splitlines()[3]
    assert line[finding.span.start.column : finding.span.end.column] == "None"


def test_non_utf8_bytes_are_reported_and_the_rest_analysed(tmp_path):
    data = POLICY.encode() + b"# caf\xe9\n"
    module = parse_bytes(data, "m.py")
    assert [p.code for p in module.problems] == ["JAX002"]
    assert len(module.tree.body) == 3


def test_latin1_file_with_coding_cookie_decodes_cleanly():
    data = "# -*- coding: latin-1 -*-\n# café\n".encode("latin-1") + POLICY.encode()
    module = parse_bytes(data, "m.py")
    assert module.problems == [] and module.encoding == "iso-8859-1"


def test_nul_bytes_are_reported_not_fatal(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(POLICY.encode() + b"x = 1\0\n")
    from jax_lsp.engine import Workspace

    findings = Workspace([tmp_path]).check_file(path)
    assert [(f.code, f.span.start.line) for f in findings] == [("JAX101", 3), ("JAX002", 6)]


def test_form_feed_does_not_shift_lines(tmp_path):
    text = "\x0c\n" + POLICY
    (finding,) = analyze_text(text, str(tmp_path / "m.py"))
    assert finding.span.start.line == 4
    assert split_lines("a\x0cb\r\nc\rd") == ["a\x0cb\r\n", "c\r", "d"]


def test_crlf_fix_keeps_line_endings(tmp_path):
    text = POLICY.replace("\n", "\r\n")
    (finding,) = analyze_text(text, str(tmp_path / "m.py"))
    fixed = apply_edits(text, finding.fixes[0].edits)
    assert fixed == text.replace("return None", "return False")


def test_noqa_on_the_anchor_line(tmp_path):
    text = POLICY.replace("return None", "return None  # noqa: JAX101")
    assert analyze_text(text, str(tmp_path / "m.py")) == []
    text = POLICY.replace("return None", "return None  # noqa: JAX104")
    assert [f.code for f in analyze_text(text, str(tmp_path / "m.py"))] == ["JAX101"]
    text = POLICY.replace("return None", "return None  # noqa")
    assert analyze_text(text, str(tmp_path / "m.py")) == []


def test_select_and_ignore(tmp_path):
    path = str(tmp_path / "m.py")
    assert analyze_text(POLICY, path, Settings(ignore=("JAX1",))) == []
    assert [f.code for f in analyze_text(POLICY, path, Settings(ignore=("JAX1",), select=("JAX101",)))] == [
        "JAX101"
    ]


def test_huge_file_is_analysed(tmp_path):
    filler = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(33_000))
    text = filler + POLICY
    findings = analyze_text(text, str(tmp_path / "m.py"))
    assert [f.code for f in findings] == ["JAX101"]
    assert text.count("\n") > 99_000


def test_a_name_bound_in_each_of_thousands_of_branches(tmp_path):
    # Found by the crash hunt: each binding of `f` searched the whole text for `f` again and
    # counted lines from the start for each use, so 2,600 branches took hours.
    branches = "".join(
        f"elif MODE == {i}:\n    f = jax.checkpoint(abs, policy=jax.checkpoint_policies.dots_saveable())\n"
        for i in range(2_600)
    )
    text = "import jax\nMODE = 0\nif MODE < 0:\n    pass\n" + branches
    found: list = []
    worker = threading.Thread(
        target=lambda: found.extend(analyze_text(text, str(tmp_path / "m.py"))), daemon=True
    )
    worker.start()
    worker.join(120)  # about a second now
    assert not worker.is_alive()
    assert [(f.code, f.span.start.line) for f in found] == [("JAX106", 5 + 2 * i) for i in range(2_600)]


TRICKY = [
    POLICY,
    'x = """\nnot a statement\n"""\n' + POLICY,
    "y = 1 + \\\n2\n" + POLICY,
    "z = foo(\n1,\n)\n" + POLICY,
    "@decorator\n\n@other\ndef f():\n    pass\nif a:\n    pass\nelse:\n    pass\n" + POLICY,
    "try:\n    import x\nexcept ImportError:\n    x = None\nfinally:\n    pass\n" + POLICY,
    "def f():\n    return 1\n" * 3 + POLICY,  # identical statements
    POLICY + "def broken(:\n",
    # Being typed: balanced statements that do not parse, and brackets left open.
    POLICY + "def g(x):\n    if x:\n#        return 1\n    return 2\n",
    "x = \n" + POLICY,
    POLICY + "def h(x)\n    return x\n",
    POLICY.replace("return None", "return foo(") + "def later():\n    pass\n",
    'x = """\ndef f(:\n"""\n' + POLICY + "if a\n    pass\n",
    "y = 1 + \\\n" + POLICY,
]


def test_parse_cache_gives_the_whole_file_parse_across_edits():
    from jax_lsp.core.text.source import ParseCache, parse_text

    cache = ParseCache()
    for text in [*TRICKY, *reversed(TRICKY), POLICY.replace("None", "Nonee"), "\n\n" + POLICY]:
        cached = parse_text(text, "m.py", cache=cache)
        fresh = parse_text(text, "m.py")
        assert ast.dump(cached.tree, include_attributes=True) == ast.dump(fresh.tree, include_attributes=True)
        assert cached.problems == fresh.problems

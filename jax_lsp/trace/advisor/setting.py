"""Where the project sets the key that chooses a site's policy: the one literal default of it.

A site written ``policy=get_gradient_checkpoint_policy(self.config.remat_policy)`` is tuned by
setting ``remat_policy``, not by replacing the site. Its literal default is looked for in the
project's Python files, statically, wherever the project writes one whose value is one of the
table's keys: a parameter default (``remat_policy='nothing_saveable'``), a class-level field
(``remat_policy: str = 'nothing_saveable'``, a dataclass's included), an attribute assignment
(EasyLM's ``config.remat_policy = 'nothing_saveable'`` on an ``ml_collections.ConfigDict``,
``self.remat_policy = ...``), an entry of a dict literal (``{'remat_policy': ...}``) or a keyword
of a call (``dict(remat_policy=...)``, ``LLaMAConfig(remat_policy=...)`` at the construction).
The example's own file, where it is not the site's, is left out where the project writes one
elsewhere (the example mirrors the configuration for the advice; a run reads the project's). One such literal is the setting;
several are narrowed to those equal to the key the example used; none or several left give no
setting, and say what to set and where.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from jax_lsp.engine.files import discover
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.contract import relative
from jax_lsp.trace.advisor.policy_advice import Setting, setting_name


def _literals(tree: ast.AST, name: str) -> Iterator[ast.Constant]:
    """The literal values ``name`` is given by default in a module's syntax tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults) :], node.defaults))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
            yield from (d for a, d in pairs if a.arg == name and isinstance(d, ast.Constant))
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                target: ast.expr
                value: ast.expr | None
                if isinstance(statement, ast.AnnAssign):
                    target, value = statement.target, statement.value
                elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                    target, value = statement.targets[0], statement.value
                else:
                    continue
                if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Constant):
                    yield value
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if any(isinstance(t, ast.Attribute) and t.attr == name for t in node.targets):
                yield node.value
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == name and isinstance(value, ast.Constant):
                    yield value
        elif isinstance(node, ast.Call):
            yield from (k.value for k in node.keywords if k.arg == name and isinstance(k.value, ast.Constant))


def _setting(path: Path, text: str, literal: ast.Constant) -> Setting:
    line = text.splitlines()[literal.lineno - 1]
    encoded = line.encode("utf-8")
    column = len(encoded[: literal.col_offset].decode("utf-8", "replace"))
    end = len(encoded[: literal.end_col_offset].decode("utf-8", "replace"))
    return Setting(str(path), literal.lineno, column, end, line[column:end])


def literal_settings(root: Path, name: str, keys: tuple[str | int, ...]) -> list[tuple[Setting, object]]:
    """Every literal default of ``name`` among ``keys`` in the Python files under ``root``, with
    its value."""
    found: list[tuple[Setting, object]] = []
    for path in discover([root]):
        if path.suffix != ".py":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if name not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for literal in _literals(tree, name):
            if literal.value in keys and not isinstance(literal.value, bool):
                found.append((_setting(path, text, literal), literal.value))
    return found


def _note(name: str, found: list[Setting], root: Path) -> str:
    if not found:
        return (
            f"no literal default of {name} in the project: set {name} where your run's configuration "
            "gives it (a flag, a config file)"
        )
    places = ", ".join(f"{relative(s.path, root)}:{s.line}" for s in found)
    return f"{len(found)} literal settings of {name} in the project ({places}): set the one your run reads"


def _in_example(path: str, example: str | None) -> bool:
    """Whether ``path`` is the file of the example ``example`` (``dir/file.py:FUNCTION`` or
    ``package.module:FUNCTION``)."""
    if not example or ":" not in example:
        return False
    where = example.rsplit(":", 1)[0]
    written = where if where.endswith(".py") else where.replace(".", "/") + ".py"
    return Path(path).as_posix().endswith("/" + written.lstrip("./"))


def with_setting(advice: Advice, root: Path | None) -> Advice:
    """``advice`` with the literal default of its site's key (or why there is none), where a key
    chooses the site's policy."""
    selector = advice.selector
    if selector is None or root is None:
        return advice
    name = setting_name(selector.expression)
    if name is None:
        note = f"{selector.expression} is not a name a configuration sets"
        return replace(advice, setting_note=note)
    found = literal_settings(root, name, selector.keys)
    if not _in_example(advice.path, advice.example):
        found = [(s, v) for s, v in found if not _in_example(s.path, advice.example)] or found
    if len(found) > 1 and selector.current is not None:
        found = [(s, v) for s, v in found if v == selector.current] or found
    if len(found) == 1:
        return replace(advice, setting=found[0][0])
    return replace(advice, setting_note=_note(name, [s for s, _ in found], root))

"""A site whose policy a key chooses: ``getattr(jax.checkpoint_policies, KEY[, default])``,
``TABLE[KEY]``, ``TABLE.get(KEY[, default])``, or ``helper(KEY)`` where the helper returns one of
those of its parameter. The key is the knob a user sets (``self.config.remat_policy``); the
table, evaluated, maps each key to its policy."""

from __future__ import annotations

import ast
import inspect
import textwrap

import jax

from .candidates import READY_MADE, same_policy

KEY = "__jax_lsp_advise_key__"


def key_lookup(node):
    """(table expression, key expression) of ``TABLE[KEY]``, ``TABLE.get(KEY[, d])``,
    ``getattr(TABLE, KEY[, d])``; None for anything else."""
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return node.value, node.slice
    if not isinstance(node, ast.Call) or node.keywords or not 1 <= len(node.args) <= 3:
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "get" and len(node.args) <= 2:
        return func.value, node.args[0]
    if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
        return node.args[0], node.args[1]
    return None


def key_node(value):
    """The key expression of a site's ``policy=`` value that a key chooses, else None (a literal
    key is the site's own choice, not a setting)."""
    found = key_lookup(value)
    if found is not None:
        key = found[1]
    elif isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        key = value.args[0]  # `helper(KEY)`: a selector if the helper turns out to be one
    else:
        return None
    return None if isinstance(key, ast.Constant) else key


def _keyed(table, key_is_attribute):
    """``{key: policy}`` of a live table: a mapping, or the names of ``jax.checkpoint_policies``
    (read with ``getattr``) that are ready-made policies, aliases included."""
    if key_is_attribute:
        if table is not jax.checkpoint_policies:
            return None
        ready = [getattr(table, name) for name in READY_MADE]
        return {
            name: value
            for name in dir(table)
            if not name.startswith("_")
            for value in [getattr(table, name)]
            if any(value is r for r in ready)
        }
    if not hasattr(table, "keys") or not hasattr(table, "__getitem__"):
        return None
    try:
        return {k: table[k] for k in table.keys() if isinstance(k, (str, int)) and not isinstance(k, bool)}
    except Exception:
        return None


def _evaluate(node, namespace):
    try:
        return eval(compile(ast.Expression(node), "<selector>", "eval"), dict(namespace))
    except Exception:
        return None


def _helper_table(helper):
    """The table a helper of one parameter returns a member of: ``return {...}[name]``,
    ``return TABLE.get(name)``, ``return getattr(jax.checkpoint_policies, name)``, or a local
    ``table = dict(...)`` then ``return table[name]``."""
    try:
        source = textwrap.dedent(inspect.getsource(helper))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.args.args:
        return None
    parameter = function.args.args[0].arg
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        return None
    found = key_lookup(returns[0].value)
    if found is None or not (isinstance(found[1], ast.Name) and found[1].id == parameter):
        return None
    table_node = found[0]
    if isinstance(table_node, ast.Name):  # a local table, assigned once
        local = [
            n.value
            for n in ast.walk(function)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == table_node.id
        ]
        if len(local) == 1:
            table_node = local[0]
    table = _evaluate(table_node, getattr(helper, "__globals__", {}))
    return _keyed(table, isinstance(returns[0].value, ast.Call) and _is_getattr(returns[0].value))


def _is_getattr(node):
    return isinstance(node.func, ast.Name) and node.func.id == "getattr"


class Selector:
    """How a site's key chooses its policy: the key as written, the table, the keys seen."""

    def __init__(self, expression, table, entry_text, seen):
        self.expression = expression  # the key as written at the site: "self.config.remat_policy"
        self.table = table  # {key: policy}
        self.entry_text = entry_text  # key -> a policy expression of the site's module for it
        self.seen = seen  # the keys the site was given while the module loaded and the example ran

    @property
    def current(self):
        """The key the example's trace gave the site (None when none, or several)."""
        if len({repr(k) for k in self.seen}) != 1 or not isinstance(self.seen[0], (str, int)):
            return None
        return self.seen[0] if self.seen[0] in self.table else None

    def key_of(self, value, text):
        """The key that selects ``value`` (a candidate written ``text``): the current key if it
        does, else the one named as the policy (``dots_saveable``), else the table's first."""
        keys = [k for k, v in self.table.items() if same_policy(v, value)]
        if not keys:
            return None
        current = self.current
        if current in keys:
            return current
        name = text.rpartition(".")[2]
        return name if name in keys else keys[0]

    def select(self, key):
        """A candidate's ``select`` in the answer: None when no key selects it."""
        return None if key is None else {"key": key, "expression": self.expression}

    def to_json(self):
        return {"expression": self.expression, "current": self.current, "keys": list(self.table)}


def find_selector(site):
    """The `Selector` of a site (`site.Site`) whose policy a key chooses; None when none does or
    its table cannot be evaluated in the module's namespace."""
    if site.key is None:
        return None
    site_text, value, namespace = site.text, site.value, site.namespace
    expression = (ast.get_source_segment(site_text, site.key) or "").strip()
    found = key_lookup(value)
    if found is not None:
        table_text = ast.get_source_segment(site_text, found[0]) or ""
        attribute = isinstance(value, ast.Call) and _is_getattr(value)
        table = _keyed(_evaluate(found[0], namespace), attribute)
        if attribute:
            entry_text = lambda k: f"jax.checkpoint_policies.{k}"  # noqa: E731
        else:
            entry_text = lambda k: f"{table_text}[{k!r}]"  # noqa: E731
    else:
        helper = _evaluate(value.func, namespace)
        table = _helper_table(helper) if callable(helper) else None
        helper_text = ast.get_source_segment(site_text, value.func) or ""
        entry_text = lambda k: f"{helper_text}({k!r})"  # noqa: E731
    if not table or not expression:
        return None
    return Selector(expression, table, entry_text, site.keys)

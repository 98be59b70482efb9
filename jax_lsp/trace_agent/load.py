"""Agent side: load a user's module with as few side effects as possible and find a policy in it.

Runs inside the trace agent (the user's interpreter): standard library only here.
Only imports, ``def``/``class`` statements and the assignments the policy needs are executed;
other top-level statements (calls, loops, ``if __name__ == "__main__":``) never run.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
import types

from .errors import AgentError
from .import_path import add_import_folders, import_parent, module_name

ALWAYS_RUN = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Policy:
    """The callable found at the requested line, and where it came from."""

    def __init__(self, kind, path, node, namespace, text):
        self.value = None
        self.text = text  # the module's source (a notebook's code cells, joined)
        self.kind = kind  # "def", "lambda", "site" or "assignment"
        self.path = path
        self.node = node
        self.namespace = namespace
        self.origin_line = None  # where a name-valued policy was assigned
        self.functions = []  # the `def`/lambda nodes of this file that the policy value runs
        self.skipped = []  # (line, text) of statements that failed while loading

    @property
    def line(self):
        return self.node.lineno

    def source_lines(self):
        return source_lines(self.text)

    def describe(self):
        segment = ast.get_source_segment(self.text, self.node) or ""
        first = segment.strip().splitlines()[0] if segment.strip() else ""
        return first[:120]


def read_source(path):
    """The text of the file at ``path`` (UTF-8)."""
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def names_in(node):
    """The names ``node`` reads or binds, anywhere inside it."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _targets(stmt):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def kept_statements(body):
    """Top-level statements that define things; ``try`` blocks keep only such statements."""
    for stmt in body:
        if isinstance(stmt, ALWAYS_RUN + (ast.Assign,)) or (
            isinstance(stmt, ast.AnnAssign) and stmt.value is not None
        ):
            yield stmt
        elif isinstance(stmt, ast.Try):
            inner = list(kept_statements(stmt.body))
            if inner:
                handlers = [
                    ast.ExceptHandler(h.type, h.name, list(kept_statements(h.body)) or [ast.Pass()])
                    for h in stmt.handlers
                ]
                new = ast.Try(
                    inner,
                    handlers,
                    list(kept_statements(stmt.orelse)),
                    list(kept_statements(stmt.finalbody)),
                )
                yield ast.copy_location(new, stmt)


def _fills_sys_modules(stmt):
    """``sys.modules["name"] = stub``: what the module's later imports of that name get."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "sys.modules" for t in targets)


def needed_assignments(statements, roots):
    """Assignments whose targets the policy reaches, directly or through definitions, and those
    that put a stub in ``sys.modules`` (the imports after them need it, as an import would)."""
    defs = {}
    assigns = []
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs.setdefault(node.name, []).append(node)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            assigns.append(stmt)
    stubs = [s for s in assigns if _fills_sys_modules(s)]
    needed, queue = set(), [*roots, *(name for s in stubs for name in names_in(s))]
    while queue:
        name = queue.pop()
        if name in needed:
            continue
        needed.add(name)
        for node in defs.get(name, ()):
            queue.extend(names_in(node))
        for stmt in assigns:
            if name in _targets(stmt):
                queue.extend(names_in(stmt))
    return {id(s) for s in assigns if _targets(s) & needed} | {id(s) for s in stubs}


def _frame_in(tb, path):
    line = None
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def execute(statements, path, namespace, needed, skipped):
    """Run ``statements`` in ``namespace``, assignments only where their ``id`` is in ``needed``.

    A failing import raises; any other failing statement is added to ``skipped`` as (line, text)."""
    for stmt in statements:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and id(stmt) not in needed:
            continue
        code = compile(ast.Module([stmt], []), path, "exec")
        try:
            exec(code, namespace)
        except (ImportError, SyntaxError) as exc:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Try)):
                where = _innermost_user_frame(exc)
                detail = f" (raised in {where[0]}:{where[1]})" if where and where[0] != path else ""
                raise AgentError(
                    "import_error",
                    f"{os.path.basename(path)}:{stmt.lineno}: {type(exc).__name__}: {exc}{detail}",
                    path,
                    stmt.lineno,
                ) from None
            skipped.append((stmt.lineno, f"{type(exc).__name__}: {exc}"))
        except MemoryError:
            raise
        except Exception as exc:
            skipped.append((stmt.lineno, f"{type(exc).__name__}: {exc}"))


def _innermost_user_frame(exc):
    tb, found = exc.__traceback__, None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if "site-packages" not in filename and not filename.startswith("<"):
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename:
        found = (exc.filename, exc.lineno)
    return found


def parents_of(tree):
    """Each node of ``tree`` mapped to the node that holds it."""
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def policy_nodes_at(tree, line, column):
    """Nodes at ``line`` that can name a policy, the innermost (by column) first."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "policy"
            and (node.lineno <= line <= node.end_lineno)
        ):
            found.append(("site", node.value, node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and line in (
            node.lineno,
            *[d.lineno for d in node.decorator_list],
        ):
            found.append(("def", node, node))
        elif isinstance(node, ast.Lambda) and node.lineno == line:
            found.append(("lambda", node, node))
        elif (
            isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno == line and (node.value is not None)
        ):
            found.append(("assignment", node.value, node))
    if column is not None:
        inside = [c for c in found if _contains(c[2], line, column)]
        found = inside or found
    order = {"site": 0, "assignment": 1, "def": 2, "lambda": 3}
    return sorted(found, key=lambda c: (order[c[0]], -c[2].col_offset))


def _contains(node, line, column):
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (line, column) <= end


def _code_of(value, depth=0):
    """Code objects reachable from a policy value (partials, closures, dataclass policies)."""
    if depth > 3 or value is None:
        return []
    code = getattr(value, "__code__", None)
    if code is not None:
        return [code]
    if isinstance(value, functools.partial):
        return _code_of(value.func, depth + 1)
    call = getattr(type(value), "__call__", None)  # noqa: B004 (the method itself, not a test)
    return _code_of(call, depth + 1) if isinstance(call, types.FunctionType) else []


def _find_code(namespace, tree, node, path):
    """What JAX receives at a ``policy=`` site of this file that reaches this ``def``/``lambda``
    (itself, a ``functools.partial`` of it, a factory's closure, a combination)."""
    first = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
    for other in ast.walk(tree):
        if isinstance(other, ast.keyword) and other.arg == "policy":
            try:
                value = _evaluate(other.value, namespace, path)
            except Exception:
                continue
            for candidate in (value, *_cell_values(value)):
                for code in _code_of(candidate):
                    if code.co_filename == path and code.co_firstlineno == first:
                        return value
    return None


def _cell_values(value):
    """What a closure (e.g. ``save_from_both_policies(p1, p2)``) holds."""
    found = []
    for cell in getattr(value, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    return found


def _evaluate(expr, namespace, path):
    return eval(compile(ast.Expression(expr), path, "eval"), namespace)


def source_lines(text):
    """Lines as Python numbers them (str.splitlines also splits at form feeds and U+2028)."""
    return re.split(r"\r\n|\r|\n", text)


def byte_column(text, line, column):
    """The 0-based character ``column`` of 1-based ``line`` as a UTF-8 byte offset (``ast``'s)."""
    if column is None:
        return None
    lines = source_lines(text)
    if not 1 <= line <= len(lines):
        return column
    return len(lines[line - 1][:column].encode("utf-8"))


def parse_module(path, source=None, unreadable="error"):
    """The text of the module at ``path`` (``source`` when given) and its tree.

    Raises ``AgentError`` with the status ``unreadable`` when the file cannot be read, and
    ``import_error`` on a syntax error."""
    try:
        text = read_source(path) if source is None else source
        return text, ast.parse(text, filename=path)
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentError(unreadable, f"cannot read {path}: {exc}", path) from None
    except SyntaxError as exc:
        raise AgentError(
            "import_error", f"{os.path.basename(path)}:{exc.lineno}: SyntaxError: {exc.msg}", path, exc.lineno
        ) from None


def load_policy(path, line, column=None, root=None, source=None, project=None):
    """Load ``path`` as a module and return the ``Policy`` at 1-based ``line``.

    ``column`` is 0-based, in characters; it only chooses between several candidates on the line.
    ``source`` is the module's text when it is not the file's (a notebook's code cells, joined).
    ``root``: the folder above the site's outermost package; ``project``: the project root, first
    on ``sys.path``.
    """
    path = os.path.realpath(path)
    text, tree = parse_module(path, source)
    candidates = policy_nodes_at(tree, line, byte_column(text, line, column))
    if not candidates:
        raise AgentError(
            "not_found",
            f"No policy at {os.path.basename(path)}:{line}: put the cursor on a `policy=` argument, "
            "a policy `def` or a lambda",
            path,
            line,
        )
    kind, expr, node = candidates[0]

    add_import_folders(None, project, root, path)
    name = module_name(path, None, project, root)
    import_parent(name)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0] if not path.endswith("__init__.py") else name
    sys.modules[name] = module
    namespace = module.__dict__

    statements = list(kept_statements(tree.body))
    roots = names_in(node)
    if kind == "def":
        roots.add(node.name)
    policy = Policy(kind, path, node, namespace, text)
    execute(statements, path, namespace, needed_assignments(statements, roots), policy.skipped)
    parents = parents_of(tree)

    if kind == "def":
        value = _find_code(namespace, tree, node, path)
        if value is None:
            value = namespace.get(node.name) if node in tree.body else _method(tree, node, namespace)
        if value is None:
            raise AgentError(
                "not_found",
                f"`{node.name}` at line {node.lineno} is nested in another function and no "
                "`policy=` argument in this file builds it: trace the `policy=` site instead",
                path,
                node.lineno,
            )
    elif kind == "lambda":
        value = _find_code(namespace, tree, node, path)
        if value is None:
            value = _evaluate_policy(node, namespace, path, parents.get(node), parents)
    else:
        value = _evaluate_policy(expr, namespace, path, parents.get(node), parents)
        if kind == "site":
            _check_decorator(parents.get(node), parents, namespace, path)
        if isinstance(expr, ast.Name):
            policy.origin_line = next(
                (
                    s.lineno
                    for s in tree.body
                    if isinstance(s, (ast.Assign, ast.AnnAssign)) and expr.id in _targets(s)
                ),
                None,
            )
    policy.value = value
    policy.functions = _functions_of(value, tree, path)
    return policy


def _functions_of(value, tree, path):
    """The ``def``/lambda nodes of ``tree`` whose code ``value`` runs (through partials, closures)."""
    codes = []
    for candidate in (value, *_cell_values(value)):
        codes += [c for c in _code_of(candidate) if c.co_filename == path]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
            if any(
                c.co_firstlineno == first and c.co_name == getattr(node, "name", "<lambda>") for c in codes
            ):
                found.append(node)
    return found


def _check_decorator(call, parents, namespace, path):
    """``@jax.checkpoint(policy=p)`` without the function: make the call, as Python will."""
    owner = parents.get(call)
    if not (isinstance(call, ast.Call) and not call.args and call in getattr(owner, "decorator_list", ())):
        return
    try:
        callee = _evaluate(call.func, namespace, path)
    except Exception:
        return
    if (getattr(callee, "__module__", None) or "").split(".")[0] not in ("jax", "flax", "equinox"):
        return
    try:
        _evaluate(call, namespace, path)
    except Exception as exc:
        raise AgentError("policy_error", str(exc), path, call.lineno, type(exc).__name__) from None


def _parameter_default(call, parents, expr):
    """The default of the enclosing function's parameter ``expr`` names, if it has one."""
    function = call
    while function is not None and not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    ):
        function = parents.get(function)
    if function is None or not isinstance(expr, ast.Name):
        return None
    args = function.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return next((default for arg, default in pairs if arg.arg == expr.id), None)


def _function_name(node, parents):
    """``inside `Block.setup```: where ``node`` is, by the functions and classes around it."""
    names = []
    while node is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        node = parents.get(node)
    return f"inside `{'.'.join(reversed(names))}`" if names else "inside a function"


def _method(tree, node, namespace):
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and node in cls.body and cls.name in namespace:
            return getattr(namespace[cls.name], node.name, None)
    return None


def _evaluate_policy(expr, namespace, path, call=None, parents=None):
    try:
        return _evaluate(expr, namespace, path)
    except NameError as exc:
        default = _parameter_default(call, parents or {}, expr) if call is not None else None
        if default is not None:
            return _evaluate_policy(default, namespace, path)
        where = _function_name(call, parents or {})
        raise AgentError(
            "needs_run",
            f"The policy at line {expr.lineno} is made {where} as your code runs ({exc} outside it): "
            "a trace evaluates a policy on its own, without running your model. Advise the site "
            "(its lens, or `jax-lsp advise`) to see what the policy keeps: it runs the site's "
            "example (docs/advise.md); or trace a module-level policy, or the `def` one names",
            path,
            expr.lineno,
        ) from None
    except MemoryError:
        raise
    except Exception as exc:
        line = _frame_in(exc.__traceback__, path) or expr.lineno
        raise AgentError("policy_error", str(exc), path, line, type(exc).__name__) from None

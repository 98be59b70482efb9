"""Whether jedi could name a callee a checkpoint function at all: asked before jedi is.

jedi names a callee `jax._src.ad_checkpoint.checkpoint` (or Flax's, Equinox's) only by reading
that package's source, and it reaches a source only through an import: of the file, of the
modules it imports (which jedi follows), or of the project files its dynamic-parameter search
reads for the callers of a function (and pytest's `conftest.py`, for a test's fixtures). So:

- A module *reaches JAX* when its text names a JAX package (a literal in `import_module("jax")`
  counts: any mention does), or it imports (in any scope, or by a literal name in
  `import_module`) a project module that reaches JAX, or a package installed for this Python
  whose distribution is or requires a JAX package (extras included), or one whose distribution
  cannot be told (a namespace package). A package that is not installed is one jedi cannot read
  either; a relative import above the top package finds nothing. Where jedi reads another
  environment (`interpreter` set, another virtual environment active), every import from
  outside the project and the standard library counts. A project module named like a standard
  module (a `test/` folder) is the project's.
- A callee in a module that does not reach JAX needs no jedi when no project file that reaches
  JAX mentions a function or class the module defines (a caller passing a JAX function in) and
  no `conftest.py` that reaches JAX could give its tests a fixture.
- In any module, a callee that is a parameter of a `def` with no default, annotation or mention
  in the docstring needs no jedi when nothing else names that function (only its `def`, in
  this module; no project file that reaches JAX) and no fixture of the parameter's name is in
  reach: jedi would search for its callers and find none (`test_x(self, remat)` under a
  parameterizing decorator, in JAX's own tests).
- In any module, a callee `self.name` (`self` the first parameter of a method, not a static
  one) needs no jedi when nothing in reach can bind `name`: the module writes the word only as
  an attribute it reads (`x.name`, not assigned) or a keyword argument (`name=` in a call), and
  each base of the class is one of the module's own classes (likewise), a builtin, or a class
  from an installed package that does not lead to JAX or whose files never write the word.
  A base from another project module, or a metaclass, leaves it to jedi (`self.policy(...)`
  in a Flax module whose fields are declared elsewhere).

What is left (a callee whose value a caller in a module that does not reach JAX passes on from
its own caller in one that does) is what jedi's search, limited to a few files, finds rarely.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from jax_lsp.core.logger import logger
from jax_lsp.core.text.words import WORD_BYTES, has_word, word_starts
from jax_lsp.engine.installed_packages import JAX_PACKAGES, InstalledPackages, Listings

if TYPE_CHECKING:
    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.binding.scopes import Binding, Scope

log = logger(__name__)

_JAX_WORDS = tuple(name.encode() for name in sorted(JAX_PACKAGES))
# A module imported by name at run time: jedi follows a literal one (`import_module("pkg.mod")`,
# read as an import; one naming JAX is a mention), never one computed.
_IMPORT_BY_NAME = re.compile(rb"""(?:__import__|import_module)\(\s*(?:['"]([\w.]*)['"])?""")
# Import statements, found in the text (in every scope, in deferred definitions too); what
# strings and comments add can only make a module reach JAX, never the other way.
_IMPORTS = re.compile(
    r"\bfrom(?:[ \t]+|(?=\.))(\.*)[ \t]*([\w.]*)[ \t]+import\b[ \t]*(\([^)]*\)|[^\n;#]*)"
    r"|\bimport[ \t]+([^\n;#]*)"
)
_DEFINED = re.compile(rb"\b(?:def|class)[ \t]+(\w+)|\b(\w+)[ \t]*=[ \t]*lambda\b")


def imported_modules(data: bytes, name: str, is_package: bool) -> set[str]:
    """The absolute dotted names of the modules the text imports, and of what could be a
    submodule (`from pkg import mod`), as the module `name` sees them. Lines holding `import`
    are read, with their continuation lines."""
    found: set[str] = set()
    package = name.split(".") if name else []
    if not is_package:
        package = package[:-1]
    position = 0
    while (at := data.find(b"import", position)) >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = _logical_line_end(data, at)
        position = end + 1
        line = data[start:end].replace(b"\\\n", b" ").replace(b"\\\r\n", b" ").decode("utf-8", "replace")
        for match in _IMPORTS.finditer(line):
            _add_imports(found, match, package)
    return found


def _logical_line_end(data: bytes, at: int) -> int:
    """Where the line holding `at` ends, with a backslash's continuation and, after `import (`,
    the lines up to the closing parenthesis."""
    size = len(data)
    end = data.find(b"\n", at)
    end = size if end < 0 else end
    while end < size:
        last = end - 1 - (data[end - 1 : end] == b"\r")
        if data[last : last + 1] != b"\\":
            break
        end = data.find(b"\n", end + 1)
        end = size if end < 0 else end
    opened = data.find(b"(", at, end)
    if opened >= 0 and data.find(b")", opened, end) < 0:
        closed = data.find(b")", opened)
        end = size if closed < 0 else data.find(b"\n", closed)
        end = size if end < 0 else end
    return end


def _add_imports(found: set[str], match: re.Match[str], package: list[str]) -> None:
    dots, base, names, plain = match.groups()
    if plain is not None:
        for item in plain.split(","):
            words = item.strip("() \t\r\n").split()
            if words and _is_dotted(words[0]):
                found.add(words[0])
        return
    if dots:
        up = len(dots) - 1
        if up > len(package):
            return  # above the top package: nothing jedi can find either ("from ... import *" in prose)
        prefix = package[: len(package) - up]
        base = ".".join([*prefix, base] if base else prefix)
    if base and not _is_dotted(base):
        return
    if base:
        found.add(base)
    for item in names.strip("() \t\r\n").split(","):
        words = item.strip("() \t\r\n").split()
        if words and words[0].isidentifier():
            found.add(f"{base}.{words[0]}" if base else words[0])


def _is_dotted(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


class JaxReach:
    """Per workspace: which modules reach JAX, and whether jedi could name a callee one.

    `read(path)` gives a file's bytes (an open buffer wins), `import_folders(path)` where the
    imports of a file are looked for (as ImportResolver.find looks), `is_buffer(path)` whether
    an open buffer is at `path`, `project_files()` every project file, `module_name(path)` its
    dotted name and whether it is a package."""

    def __init__(
        self,
        read: Callable[[str], bytes | None],
        import_folders: Callable[[str], list[str]],
        is_buffer: Callable[[str], bool],
        project_files: Callable[[], list[str]],
        module_name: Callable[[str], tuple[str, bool]],
        interpreter: str | None,
    ) -> None:
        self._read = read
        self._import_folders = import_folders
        self._is_buffer = is_buffer
        self._folders: dict[str, list[str]] = {}  # a file's folder -> where its imports are found
        self._listings = Listings()
        self._found: dict[tuple[str, str], str | None] = {}  # (importer's folder, module) -> file
        self._packages: dict[str, list[str]] = {}  # a folder -> the dotted package its modules are in
        self._project_files = project_files
        self._module_name = module_name
        self._interpreter = interpreter
        # path -> (reaches JAX by itself, the project modules it imports)
        self._local: dict[str, tuple[bool, tuple[str, ...]]] = {}
        self._reaches: dict[str, bool] = {}
        self._project_texts: dict[str, bytes] | None = None
        self._reaching_files: list[str] | None = None
        self._installed: InstalledPackages | None = None

    def forget(self, path: str | None = None) -> None:
        """A file's content changed (None: any file may have, or been added or deleted): what
        was concluded from it goes. An edit that leaves a module's own facts (its imports, its
        mentions of JAX) as they were keeps what was concluded of the others (each keystroke in
        the server comes here)."""
        if path is None:
            self._local.clear()
            self._folders.clear()
            self._listings.clear()
            self._found.clear()
            self._packages.clear()
            self._reaches.clear()
            self._project_texts = self._reaching_files = None
            return
        if self._project_texts is not None and path in self._project_texts:
            data = self._read(path)
            if data is None:
                del self._project_texts[path]
            else:
                self._project_texts[path] = data
        before = self._local.pop(path, None)
        if before is not None and self._local_facts(path) == before:
            return
        self._reaches.clear()
        self._reaching_files = None

    # Whether jedi is needed ----------------------------------------------------------
    def jedi_could_name(self, module: Module, node: ast.expr) -> bool:
        """Whether jedi could name the callee `node` of `module` a checkpoint function."""
        from jax_lsp.core.binding.scopes import dotted

        try:
            parts = dotted(node)
            if not parts:
                return True
            scope = _scope_at(module, node)
            binding, owner = scope.lookup(parts[0]) if scope is not None else (None, None)
            if binding is not None and owner is not None and binding.kind == "param":
                if self._param_has_no_caller(module, binding, owner):
                    return False
                if len(parts) > 1 and self._attribute_nothing_binds(module, binding, owner, parts[1]):
                    return False
            return self.reaches_jax(module.path) or self._reached_from_callers(module)
        except (OSError, ValueError, RecursionError) as exc:  # then jedi decides, as before
            log.debug("cannot tell whether %s reaches JAX: %s", module.path, exc)
            return True

    def reaches_jax(self, path: str) -> bool:
        """Whether the module, or a module it imports (through project modules), reaches JAX."""
        if path in self._reaches:
            return self._reaches[path]
        seen = {path}
        todo = [path]
        reaches = False
        while todo and not reaches:
            current = todo.pop()
            if self._reaches.get(current) is False:
                continue
            by_itself, imports = self._local_facts(current)
            reaches = by_itself or self._reaches.get(current, False)
            for imported in imports:
                if imported not in seen:
                    seen.add(imported)
                    todo.append(imported)
        if reaches:
            self._reaches[path] = True
        else:  # the whole closure reaches nothing
            for member in seen:
                self._reaches[member] = False
        return reaches

    # Callers and fixtures ------------------------------------------------------------
    def _reached_from_callers(self, module: Module) -> bool:
        """Whether a project file that reaches JAX could hand `module` a value (jedi's search
        for the callers of its functions and classes), or a `conftest.py` a fixture."""
        data = self._read(module.path) or b""
        names = {(m.group(1) or m.group(2)).decode() for m in _DEFINED.finditer(data)}
        names = {name for name in names if len(name) > 2}  # jedi searches no shorter name
        texts = self._texts()
        for path in self._reaching():
            if path == module.path:
                continue
            if os.path.basename(path) == "conftest.py" or (names and _mentions_any(texts[path], names)):
                return True
        return False

    def _param_has_no_caller(self, module: Module, binding: Binding, owner: Scope) -> bool:
        """A parameter jedi could only infer from callers of its function, which has none."""
        function = owner.node
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False  # a lambda: jedi searches for the name it is assigned to
        arguments = function.args
        parameter = binding.node
        if not isinstance(parameter, ast.arg) or parameter.annotation is not None:
            return False
        positional = [*arguments.posonlyargs, *arguments.args]
        if (
            positional
            and positional[0] is parameter
            and isinstance(owner.parent and owner.parent.node, ast.ClassDef)
        ):
            return False  # `self`: its attributes come from the class
        if _has_default(arguments, parameter):
            return False
        docstring = ast.get_docstring(function, clean=False) or ""
        if re.search(rf"\b{re.escape(parameter.arg)}\b", docstring):
            return False
        own = self._read(module.path) or b""
        if _word_count(own, function.name, 2) != 1:
            return False  # called (or named) in its own module
        if _defines(own, parameter.arg):
            return False  # a fixture of that name here
        for path, text in self._texts().items():
            if path == module.path:
                continue
            fixture = os.path.basename(path) == "conftest.py" and _mentions_any(text, {parameter.arg})
            if (fixture or _mentions_any(text, {function.name})) and self.reaches_jax(path):
                return False
        return True

    def _attribute_nothing_binds(self, module: Module, binding: Binding, owner: Scope, name: str) -> bool:
        """`self.name` in a method, where nothing jedi could read binds `name` (the docstring)."""
        function = owner.node
        parent = owner.parent.node if owner.parent is not None else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(
            parent, ast.ClassDef
        ):
            return False
        positional = [*function.args.posonlyargs, *function.args.args]
        if not positional or positional[0] is not binding.node:
            return False
        if any((_dotted_name(d) or "").endswith("staticmethod") for d in function.decorator_list):
            return False
        if _may_bind_attribute(module.source.text, name):
            return False
        outer = owner.parent.parent if owner.parent is not None else None  # where the class is defined
        return outer is not None and self._bases_bind_nothing(module, parent, outer, name, set())

    def _bases_bind_nothing(
        self, module: Module, cls: ast.ClassDef, scope: Scope, name: str, seen: set[int]
    ) -> bool:
        """Whether no base of `cls` (defined in `scope`) can bind `name` (the docstring)."""
        if id(cls) in seen:
            return True
        seen.add(id(cls))
        if cls.keywords:  # a metaclass (or its arguments) may add anything
            return False
        for base in cls.bases:
            written = _dotted_name(base.value if isinstance(base, ast.Subscript) else base)
            if written is None:
                return False
            first = written.split(".", 1)[0]
            found, found_in = scope.lookup(first)
            if found is None or found_in is None:
                if found_in is not None or first not in _BUILTIN_NAMES:
                    return False
            elif found.kind == "class" and first == written:
                if not isinstance(found.node, ast.ClassDef) or not self._bases_bind_nothing(
                    module, found.node, found_in, name, seen
                ):
                    return False
            elif found.kind == "import" and found.target:
                if not self._package_binds_nothing(found.target.split(".", 1)[0], module.path, name):
                    return False
            else:
                return False
        return True

    def _package_binds_nothing(self, top: str, importer: str, name: str) -> bool:
        """Whether no class jedi finds in the installed package `top` can bind `name` as a
        checkpoint function: one outside the project that does not lead to JAX, or whose
        files never write the word."""
        if self._project_modules(top, importer) or not self._jedi_reads_this_environment():
            return False
        if top in sys.stdlib_module_names or not self._leads_to_jax(top):
            return True
        if self._installed is None:
            self._installed = InstalledPackages()
        return not self._installed.binds_word(top, name)

    def _reaching(self) -> list[str]:
        """The project files that reach JAX."""
        if self._reaching_files is None:
            self._reaching_files = [path for path in self._texts() if self.reaches_jax(path)]
        return self._reaching_files

    def _texts(self) -> dict[str, bytes]:
        """Every project file's bytes, read once (what jedi's search for callers reads)."""
        if self._project_texts is None:
            self._project_texts = {}
            for path in self._project_files():
                data = self._read(path)
                if data is not None:
                    self._project_texts[path] = data
        return self._project_texts

    # One module's own facts ----------------------------------------------------------
    def _local_facts(self, path: str) -> tuple[bool, tuple[str, ...]]:
        if path in self._local:
            return self._local[path]
        data = self._project_texts.get(path) if self._project_texts is not None else None
        data = self._read(path) if data is None else data
        facts: tuple[bool, tuple[str, ...]]
        if data is None:
            facts = (False, ())
        elif _mentions_jax(data):
            facts = (True, ())
        else:
            facts = self._imports_facts(path, data)
        self._local[path] = facts
        return facts

    def _imports_facts(self, path: str, data: bytes) -> tuple[bool, tuple[str, ...]]:
        name, is_package = self._name_of(path)
        modules = imported_modules(data, name, is_package)
        by_name = b"__import__" in data or b"import_module" in data
        for match in _IMPORT_BY_NAME.finditer(data) if by_name else ():
            if match.group(1) is None or match.group(1).startswith(b"."):
                continue  # computed, or relative to a package given at run time: jedi cannot tell
            modules.add(match.group(1).decode())
        project: list[str] = []
        for imported in sorted(modules):
            found = self._project_modules(imported, path)
            if found:
                project += found
            elif self._leads_to_jax(imported.split(".", 1)[0]):
                return True, ()
        return False, tuple(dict.fromkeys(project))

    def _name_of(self, path: str) -> tuple[str, bool]:
        """`module_name(path)`, its package's part found once per folder (it depends on the
        folder alone)."""
        folder, base = os.path.split(path)
        stem = os.path.splitext(base)[0]  # may hold dots (`math.filecheck.py`), as the name then does
        package = self._packages.get(folder)
        if package is None:
            name, is_package = self._module_name(path)
            prefix = name if is_package else name[: len(name) - len(stem)].rstrip(".")
            self._packages[folder] = prefix.split(".") if prefix else []
            return name, is_package
        if base == "__init__.py":
            return ".".join(package), True
        return ".".join([*package, stem]), False

    def _project_modules(self, name: str, importer: str) -> list[str]:
        """The project files that importing `name` runs (each package on the way)."""
        parts = name.split(".")
        found = []
        for end in range(1, len(parts) + 1):
            path = self._module_file(parts[:end], importer)
            if path is None:
                break
            found.append(path)
        return found

    def _module_file(self, parts: list[str], importer: str) -> str | None:
        """ImportResolver.find, from cached folder listings (a stat per import costs more
        than reading the project)."""
        folder_of = os.path.dirname(importer)
        key = (folder_of, ".".join(parts))
        if key in self._found:
            return self._found[key]
        folders = self._folders.get(folder_of)
        if folders is None:
            folders = self._folders[folder_of] = self._import_folders(importer)
        found = None
        for folder in folders:
            module = os.sep.join([folder, *parts])
            if self._is_buffer(module + ".py") or self._is_buffer(module + os.sep + "__init__.py"):
                found = module + ".py" if self._is_buffer(module + ".py") else module + os.sep + "__init__.py"
                break
            current = folder
            for part in parts[:-1]:
                if part not in self._listings.of(current):
                    break
                current += os.sep + part
            else:
                listing = self._listings.of(current)
                if parts[-1] + ".py" in listing:
                    found = module + ".py"
                    break
                if parts[-1] in listing and "__init__.py" in self._listings.of(module):
                    found = module + os.sep + "__init__.py"
                    break
        self._found[key] = found
        return found

    def _leads_to_jax(self, top: str) -> bool:
        """Whether a module outside the project, by its top-level name, could lead to JAX."""
        if top in sys.stdlib_module_names:
            return False
        if top in JAX_PACKAGES or not self._jedi_reads_this_environment():
            return True
        if self._installed is None:
            self._installed = InstalledPackages()
        return self._installed.leads_to_jax(top)

    def _jedi_reads_this_environment(self) -> bool:
        """Whether jedi reads the packages installed for this Python (no other interpreter
        named, no other virtual environment active), whose metadata tell what leads to JAX."""
        if self._interpreter is not None:
            return False
        active = os.environ.get("VIRTUAL_ENV") or os.environ.get("CONDA_PREFIX")
        return active is None or os.path.realpath(active) == os.path.realpath(sys.prefix)


def _mentions_jax(data: bytes) -> bool:
    return any(word in data for word in _JAX_WORDS)


def _mentions_any(text: bytes, names: Iterable[str]) -> bool:
    """Whether `text` holds one of `names` as a word (bytes.find for each: a regular expression
    of alternatives reads the text far slower)."""
    return any(has_word(name.encode(), text) for name in names)


def _word_count(text: bytes, name: str, most: int) -> int:
    """How many times `text` holds the identifier `name` as a word, counted up to `most`."""
    if not name.isascii():  # a non-ASCII letter is no word character to a bytes expression
        return min(most, len(re.findall(rb"\b" + re.escape(name.encode()) + rb"\b", text)))
    return sum(1 for _ in itertools.islice(word_starts(name.encode(), text), most))


def _defines(text: bytes, name: str) -> bool:
    """Whether `text` holds `def name` (`\bdef[ \t]+name\b`): a function of that name."""
    if not name.isascii():
        return re.search(rb"\bdef[ \t]+" + re.escape(name.encode()) + rb"\b", text) is not None
    for at in word_starts(name.encode(), text):
        keyword = at  # where the blanks before the name start: `def` ends there
        while keyword and text[keyword - 1] in b" \t":
            keyword -= 1
        if (
            keyword < at
            and text.endswith(b"def", 0, keyword)
            and not (keyword > 3 and text[keyword - 4] in WORD_BYTES)
        ):
            return True
    return False


_BUILTIN_NAMES = frozenset(dir(builtins))


def _may_bind_attribute(text: str, name: str) -> bool:
    """Whether `text` holds the word `name` other than as an attribute read (`x.name`, not
    assigned or annotated) or a keyword argument (`name=` after `(` or `,`)."""
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        at = match.start() - 1
        while at >= 0 and text[at] in " \t\r\n\\":
            at -= 1
        before = text[at] if at >= 0 else ""
        after = _AFTER_NAME.match(text, match.end())
        plain, other = after.groups() if after is not None else (None, None)
        if before == "." and plain is None and other is None:
            continue
        if before and before in ",(" and plain is not None:
            continue
        return True
    return False


# What follows a name: `=` (1: an assignment, or a keyword argument's), another assignment or
# an annotation (2).
_AFTER_NAME = re.compile(r"[ \t]*(?:(=)(?!=)|((?:[-+*/%&|^@]|//|\*\*|<<|>>)=|:(?!=)))?")


def _dotted_name(node: ast.expr) -> str | None:
    from jax_lsp.core.binding.scopes import dotted

    parts = dotted(node)
    return ".".join(parts) if parts else None


def _has_default(arguments: ast.arguments, parameter: ast.arg) -> bool:
    positional = [*arguments.posonlyargs, *arguments.args]
    if parameter in positional:
        return positional.index(parameter) >= len(positional) - len(arguments.defaults)
    if parameter in arguments.kwonlyargs:
        return arguments.kw_defaults[arguments.kwonlyargs.index(parameter)] is not None
    return False  # *args, **kwargs


def _scope_at(module: Module, node: ast.expr) -> Scope | None:
    """The scope the call of `node` was found in (module.calls)."""
    for call, scope in module.calls:
        if call.func is node:
            return scope
    return None

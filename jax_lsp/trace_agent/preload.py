"""Warm children: what the agent imports after a child's answer so that the next child forks with
it loaded, and what each child may use of it.

- Installed packages a child imported (flax, equinox: seconds each) are imported in the agent and
  kept for good.
- The project's own modules a child imported through the import system (files under the project's
  root, never the site's or the example's file) are imported in the agent too, each recorded with
  its file's (mtime_ns, size) and the modules its import statements name or its import loaded.
  A child takes one only where a cold import would have loaded it: the same file, unchanged,
  found on the child's own ``sys.path``, and none of the project modules it imports
  (transitively) is the site's file or was loaded afresh by the child. Everything else the child
  imports afresh, as a cold agent would.
- An installed package the agent preloaded that holds the site's file (flax, for a site in
  ``flax/core/lift.py``) is imported afresh by the child, as are the preloaded installed packages
  and the project's modules that import it: they hold the copy of the site's module they
  imported, which the site's marks are not in. Compiled extensions are kept (they cannot be
  loaded twice).
- Once a preloaded file changed or was deleted, the agent must not fork from its copy of it:
  ``stale()`` says so, and the agent restarts itself (``agent.py``). The file a request marks
  is the exception for that request: its child loads it, and whatever imports it, afresh anyway.
- A module's code runs once in a process, as in a fresh interpreter: projects fill registries
  at import and refuse a name twice, define JAX options and absl flags. So a child never runs a
  project module the agent already ran (the site's, one that imports it, an edited one): it
  stops at that import (`Rerun`) and answers ``restart``, and the agent replaces itself with a
  fresh one that runs the request again. To keep that rare, the agent does not preload the
  request's site and example, nor the modules that import them (by their import statements);
  a module whose import still loaded one of them (by name, at run time) is never preloaded
  again (`NOT_PRELOADED`, kept across the restart), nor is one whose import failed.

Preloading stops for good if an import starts a thread or a JAX backend, which would make forking
unsafe.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import time
import types

_PRELOAD = {"enabled": True}
_WARM: dict[str, _WarmModule] = {}  # the project's modules imported in the agent, by name
_PRELOADED: set[str] = set()  # top-level packages the agent imported for its children
_CLOCK_SLACK_NS = 50_000_000  # file times come from a coarser clock than time.time_ns()
# The project's modules whose import in the agent loaded a module a child must run itself, or
# failed: never preloaded again, by this agent or the fresh one that replaces it.
NOT_PRELOADED = "JAX_LSP_AGENT_NOT_PRELOADED"
_UNSAFE: list[str] = []  # in the agent: why it must not fork from its modules any more
_RERUN: list[str] = []  # in a child: the agent's modules it would have run again


class Rerun(BaseException):
    """In a child: the import of a module whose code the agent already ran (its import-time
    effects are in this process). A BaseException, as `MemoryError` is treated: the user's
    ``except Exception`` must not take it for an import error."""


RESTART = "restart"  # a child's status: run the request again, in a fresh agent


def restart_answer():
    """In a child: the answer that has the agent run the request again in a fresh agent, where the
    child imported a module whose code the agent already ran (`Rerun`, even one the user's code
    caught); else None."""
    if not _RERUN:
        return None
    return {"status": RESTART, "message": f"{_RERUN[0]} must run again in a fresh process"}


class _WarmModule:
    def __init__(self, name, module, file, loaded, since_ns):
        self.name = name
        self.module = module
        self.file = file  # None for a namespace package
        stamp = _stamp(file) if file else None
        if file and (stamp is None or since_ns - _CLOCK_SLACK_NS <= stamp[0] <= time.time_ns()):
            stamp = ()  # gone, or written while it was imported (maybe after): stale from the start
        self.stamp = stamp
        # what its import statements name, and what its import loaded (`importlib.import_module`)
        imports = _imports_of(file, name, hasattr(module, "__path__")) if file else set()
        self.imports = None if imports is None else imports | loaded


def _stamp(file):
    try:
        status = os.stat(file)
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size)


def _installed(filename):
    return "site-packages" in filename or "dist-packages" in filename


def _under(filename, folders):
    real = os.path.realpath(filename)
    return any(real.startswith(os.path.realpath(folder) + os.sep) for folder in folders if folder)


def installed_imports(before, root):
    """Top-level installed packages (site-packages, never the project) imported since ``before``."""
    names = set()
    for name in set(sys.modules) - before:
        top = name.partition(".")[0]
        module = sys.modules.get(top)
        if top not in before and module is not None and not top.startswith("_"):
            filename = getattr(module, "__file__", None) or ""
            if _installed(filename) and not _under(filename, [root]):
                names.add(top)
    return sorted(names)


def _loaded_file(module):
    """The file the import system loaded ``module`` from, unless an installed package's; else None."""
    filename = getattr(module, "__file__", None)
    if not filename or getattr(module, "__spec__", None) is None or _installed(filename):
        return None
    return os.path.realpath(filename)


def _namespace(module):
    """Whether ``module`` is a namespace package outside the installed packages."""
    path = getattr(module, "__path__", None)
    if getattr(module, "__file__", None) is not None or path is None:
        return False
    try:
        return not all(_installed(p) for p in path)
    except KeyError:  # its path reads its parent, whose import failed after importing it: not reused
        return False


def project_imports(before, folders, loaded_files):
    """In a child: what the agent needs to import the project's modules imported since ``before``
    as the child did (``loaded_files``, the site's and the example's, are the advisor's own: the
    agent must not run them)."""
    skip = {os.path.realpath(f) for f in loaded_files if f}
    files, fresh = {}, set()
    for name in set(sys.modules) - before:
        filename = _loaded_file(sys.modules[name])
        if filename is not None and _under(filename, folders):
            if filename in skip:
                fresh.add(name)
            else:
                files[name] = filename
    return {
        "modules": sorted(files),
        "files": files,
        "fresh": sorted(fresh),
        "fresh_files": sorted(skip),
        "sys_path": list(sys.path),
        "cwd": os.getcwd(),
    }


def preload_from(result):
    """In the agent, after a child's answer: import what it used (see the module's docstring)."""
    installed = result.pop("preload", None) or ()
    project = result.pop("preload_project", None)
    if not _PRELOAD["enabled"] or _UNSAFE:
        return
    before = set(sys.modules)
    try:
        for name in installed:
            if not _import(name):
                return
        if project:
            _preload_project(project)
    finally:
        # only packages new to the agent: never JAX, whose submodules it may import here
        _PRELOADED.update({n.partition(".")[0] for n in set(sys.modules) - before} - before)


def _import(name):
    """Import ``name`` unless loaded; False (and no more preloading) where that failed, leaving
    what its code did so far in the agent (`unsafe`), or made forking unsafe."""
    if name in sys.modules:
        return True
    try:
        importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001 (a failing import is the user's; the child saw it)
        _unsafe(name, f"importing {name} in the agent failed ({type(exc).__name__})")
        return False
    if not fork_safe():
        _PRELOAD["enabled"] = False
        print(f"jax-lsp advise: importing {name} started a thread; no more preloading", file=sys.stderr)
        return False
    return True


def _unsafe(name, why):
    """The agent ran part of what a child must run itself: it forks no more child (`stale`), and
    neither it nor the agent that replaces it preloads ``name`` again."""
    _UNSAFE.append(why)
    os.environ[NOT_PRELOADED] = os.pathsep.join(sorted(_not_preloaded() | {name}))


def _not_preloaded():
    return {name for name in os.environ.get(NOT_PRELOADED, "").split(os.pathsep) if name}


def _preload_project(project):
    """Import the project's modules under the child's ``sys.path`` and folder, then put the agent's
    back: the agent's own ``sys.path`` never changes, so each child builds its own as a cold one.
    A module whose import statements lead to one the child must run itself is left out."""
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    before, since_ns = set(sys.modules), time.time_ns()
    loaded_by = {}  # each module imported here -> the modules its import loaded, dynamic ones too
    avoid = set(project.get("fresh") or ()) | _not_preloaded()
    fresh_files = set(project.get("fresh_files") or ())
    leads = _Leads(project.get("files") or {}, avoid)
    sys.path[:] = project["sys_path"]
    try:
        os.chdir(project["cwd"])
        for name in project["modules"]:
            if leads.to_avoided(name):
                continue
            loaded = set(sys.modules)
            safe = _import(name)
            loaded_by[name] = set(sys.modules) - loaded - {name}
            ran = [n for n in loaded_by[name] | {name} if _loaded_file(sys.modules.get(n)) in fresh_files]
            if ran:
                _unsafe(name, f"importing {name} in the agent ran {ran[0]}, which a child runs itself")
            if not safe or ran:
                break
    except OSError:  # the child's folder is gone
        pass
    finally:
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        # every module but the installed ones, wherever its file is: where the agent already held
        # a package of that name (another project's), a submodule came from that package's folder
        for name in set(sys.modules) - before:
            module = sys.modules[name]
            file = _loaded_file(module)
            if file is not None or _namespace(module):
                _WARM[name] = _WarmModule(name, module, file, loaded_by.get(name, set()), since_ns)


class _Leads:
    """Whether a module's import would import one of ``avoid``: its parent packages' and its own
    import statements, followed through the child's modules (``files``: name -> file)."""

    def __init__(self, files, avoid):
        self.files = files
        self.avoid = avoid
        self.imports = {}

    def to_avoided(self, name):
        parts = name.split(".")
        queue = [".".join(parts[: i + 1]) for i in range(len(parts))]
        seen = set(queue)
        while queue:
            current = queue.pop()
            imports = self._imports(current)
            if current in self.avoid or imports is None:  # unreadable: it may import anything
                return True
            queue.extend(other for other in imports if other not in seen)
            seen.update(imports)
        return False

    def _imports(self, name):
        file = self.files.get(name)
        if file is None:
            return set()  # not the project's, or not imported by the child
        if name not in self.imports:
            self.imports[name] = _imports_of(file, name, os.path.basename(file) == "__init__.py")
        return self.imports[name]


def stale(site_file):
    """In the agent: why it must not fork from its modules (a preloaded project file, other than
    ``site_file``, that changed or is gone since it was imported; a preload that ran what a child
    must run itself), or None."""
    if _UNSAFE:
        return _UNSAFE[0]
    site_file = os.path.realpath(site_file) if site_file else None
    for warm in _WARM.values():
        if warm.file and warm.file != site_file and _stamp(warm.file) != warm.stamp:
            return f"{warm.file} changed since the agent imported it"
    return None


def _imports_of(file, name, is_package):
    """The modules that the import statements of ``file`` (module ``name``) name, their packages
    included; None when the file cannot be read (then its module is never reused)."""
    try:
        with open(file, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_with_packages(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                kept = parts[: len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else []
                base = ".".join([*kept, base] if base else kept)
            if base:
                found.add(_with_packages(base))
                found.update(
                    _with_packages(f"{base}.{alias.name}") for alias in node.names if alias.name != "*"
                )
    return set().union(*found) if found else set()


def _with_packages(dotted):
    parts = dotted.split(".")
    return frozenset(".".join(parts[: i + 1]) for i in range(len(parts)))


def enter_child(site_file, given_files=()):
    """In a child, before it loads anything: take the preloaded project modules out of
    ``sys.modules``; an import gets one back only where a cold import would load that same module
    (``_WarmFinder``). ``site_file`` (the file the request marks) is always loaded afresh, and so
    is the preloaded installed package that holds it; so are ``given_files``, the files whose
    text the request gives (`advisor.overlay`)."""
    site_file = os.path.realpath(site_file) if site_file else None
    own_files = {site_file, *(os.path.realpath(f) for f in given_files)} - {None}
    held = next((name for name, warm in _WARM.items() if warm.file in own_files), None)
    if held is not None:  # the site's module is marked, a given file runs its text: afresh
        _RERUN.append(held)
        raise Rerun(held)
    package = _preloaded_package(site_file) if site_file else None
    fresh = _with_importers(package) if package is not None else set()
    for name in fresh:
        _forget_package(name)
    if not _WARM:
        return
    for name, warm in _WARM.items():
        if sys.modules.get(name) is warm.module:
            del sys.modules[name]
    sys.meta_path.insert(0, _WarmFinder(own_files, fresh))


def _preloaded_package(file):
    """The installed package that holds ``file`` (its outermost folder with an ``__init__.py``
    under site-packages, a namespace package's part), where the agent preloaded it; else None."""
    parts = file.split(os.sep)
    markers = [i for i, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
    if not markers or parts[markers[-1] + 1] not in _PRELOADED:
        return None
    start = markers[-1] + 1
    for end in range(start + 1, len(parts)):
        if os.path.isfile(os.sep.join([*parts[:end], "__init__.py"])):
            return ".".join(parts[start:end])
    return None


def _with_importers(package):
    """``package`` and the preloaded installed packages whose loaded modules import it, directly
    or through one another (levanter, for a site in haliax): their files' import lines, as text."""
    files = {}  # top-level package -> its loaded modules' source files
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if top not in _PRELOADED:
            continue  # JAX's thousand modules stay unread (reading copies their pages in a fork)
        file = getattr(sys.modules[name], "__dict__", {}).get("__file__")  # no module __getattr__
        if isinstance(file, str) and file.endswith(".py"):
            files.setdefault(top, []).append(file)
    fresh, added = {package}, [package]
    while added:
        names = "|".join(re.escape(name) for name in added)
        imports = re.compile(rf"^[ \t]*(?:from|import)[ \t]+(?:{names})\b", re.MULTILINE)
        added = [top for top in files if top not in fresh and any(_matches(imports, f) for f in files[top])]
        fresh.update(added)
    return fresh


def _matches(pattern, file):
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            return pattern.search(handle.read()) is not None
    except OSError:
        return False


def _forget_package(package):
    """Take ``package``'s modules out of ``sys.modules`` (not its compiled extensions), so that
    the child imports them afresh."""
    extensions = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        file = getattr(sys.modules[name], "__dict__", {}).get("__file__")  # no module __getattr__
        if not (isinstance(file, str) and file.endswith(extensions)):
            del sys.modules[name]


class _WarmLoader:
    """Gives the import system the preloaded module as it is: nothing runs again."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec


class _WarmFinder:
    def __init__(self, own_files, fresh_packages):
        self.own_files = own_files  # the site's file and the given ones: run afresh here
        self.fresh_packages = fresh_packages  # imported afresh: a module that imports one is too
        self.found = {}  # (name, search path) -> where a cold import finds it
        self.unchanged = {}  # name -> whether its file is as the agent imported it

    def find_spec(self, name, path=None, target=None):
        warm = _WARM.get(name)
        if warm is None:
            return None
        closure = _closure(name)
        if closure is None or not all(self._reusable(_WARM[member]) for member in closure):
            if self._runs_again(warm, closure):
                _RERUN.append(name)
                raise Rerun(name)
            return None
        for member in sorted(closure - {name}):
            _reinstate(_WARM[member].module, member, closure)
        _drop_other_submodules(warm.module, name, closure)
        return importlib.util.spec_from_loader(
            name,
            _WarmLoader(warm.module),
            origin=warm.module.__spec__.origin,
            is_package=hasattr(warm.module, "__path__"),
        )

    def _reusable(self, warm):
        loaded = sys.modules.get(warm.name)
        if loaded is not None:
            return loaded is warm.module
        if warm.file is not None and (warm.file in self.own_files or not self._unchanged(warm)):
            return False
        if not self.fresh_packages.isdisjoint(warm.imports):
            return False
        return self._same_file(warm)

    def _same_file(self, warm):
        """Whether a cold import of ``warm``'s name here would load the module the agent holds."""
        try:
            kept = _where_of(warm.module.__spec__)
        except KeyError:  # a namespace package's path reads its parent, not imported here yet
            return False
        return self._where(warm.name) == kept

    def _runs_again(self, warm, closure):
        """Whether importing ``warm``, which cannot be reused, would run its file's code a second
        time in this process. A module that imports the installed package holding the site does
        (`enter_child` imports that afresh, with its importers: docs/advise.md)."""
        if warm.file is None or not self._same_file(warm):
            return False  # a namespace package (no code), or another file of that name
        members = [_WARM[member] for member in closure or ()]
        return all(
            member.imports is None or self.fresh_packages.isdisjoint(member.imports) for member in members
        )

    def _unchanged(self, warm):
        if warm.name not in self.unchanged:
            self.unchanged[warm.name] = _stamp(warm.file) == warm.stamp
        return self.unchanged[warm.name]

    def _where(self, name):
        parent, _, _ = name.rpartition(".")
        if parent:
            holder = sys.modules.get(parent) or getattr(_WARM.get(parent), "module", None)
            search = getattr(holder, "__path__", None)
            if search is None:
                return None
        else:
            search = sys.path
        # A namespace package's path reads its parent in sys.modules, which may not be there yet:
        # reading it (here, or where Python 3.12 makes a namespace spec) raises KeyError.
        try:
            key = (name, tuple(search))
            if key not in self.found:
                spec = importlib.machinery.PathFinder.find_spec(name, list(key[1]))
                self.found[key] = _where_of(spec)
        except KeyError:
            return None
        return self.found[key]


def _where_of(spec):
    """Where a module spec points: its file, and its package's folders."""
    if spec is None:
        return None
    origin = os.path.realpath(spec.origin) if spec.origin and spec.has_location else None
    return origin, tuple(os.path.realpath(p) for p in spec.submodule_search_locations or ())


def _closure(name):
    """``name`` and the preloaded modules it imports, transitively; None if one cannot be read."""
    found, queue = {name}, [name]
    while queue:
        imports = _WARM[queue.pop()].imports
        if imports is None:
            return None
        for other in imports:
            if other in _WARM and other not in found:
                found.add(other)
                queue.append(other)
    return found


def _reinstate(module, name, closure):
    if name in sys.modules:
        return
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    _drop_other_submodules(module, name, closure)


def _drop_other_submodules(module, name, closure):
    """A package keeps as attributes only the preloaded submodules that come back with it: the
    others are loaded afresh, and set again, when imported."""
    for attribute, value in list(vars(module).items()):
        full = f"{name}.{attribute}"
        if isinstance(value, types.ModuleType) and full in _WARM and full not in closure:
            delattr(module, attribute)


def fork_safe():
    """Whether forking this process is safe: no thread but the main one, and no JAX backend
    started (a fork has none of its threads, and hangs in it)."""
    import threading

    return threading.active_count() == 1 and not _backend_started()


def _backend_started():
    try:
        from jax._src import xla_bridge

        return bool(getattr(xla_bridge, "_backends", {}))
    except Exception:
        return False

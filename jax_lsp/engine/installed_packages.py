"""What is installed for this Python, read only as far as `engine.jax_reach` asks: whether a
top-level module is there, whether its distribution is or requires a JAX package, and whether
its files may bind a word."""

from __future__ import annotations

import os
import re
import sys

from jax_lsp.core.jax_api import CHECKPOINT_FUNCTIONS
from jax_lsp.core.packages import read_file

# The packages that define a checkpoint function: jedi names one only by reading them.
JAX_PACKAGES = frozenset(name.split(".", 1)[0] for name in CHECKPOINT_FUNCTIONS)


class Listings(dict[str, set[str]]):
    """The names in each folder asked about, each folder read once (none where it cannot be)."""

    def of(self, folder: str) -> set[str]:
        names = self.get(folder)
        if names is None:
            try:
                names = set(os.listdir(folder))
            except OSError:
                names = set()
            self[folder] = names
        return names


class InstalledPackages:
    """What is installed for this Python (its sys.path), read only as far as asked: whether a
    top-level module is there, and whether its distribution is or requires (extras included)
    a JAX package. The distribution is the one named like the module; none such: it may be."""

    def __init__(self) -> None:
        import sysconfig

        # sys.path as jedi's environment has it: without this process's own first entry (the
        # script's folder, or the current one under `-m`).
        self._entries = [entry for entry in sys.path[1:] if entry and os.path.isdir(entry)]
        paths = sysconfig.get_paths()
        self._standard = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
        self._listings = Listings()
        self._dists: dict[str, str] | None = None  # normalized name -> its .dist-info folder
        self._leads: dict[str, bool] = {}
        self._texts: dict[str, list[bytes] | None] = {}  # top-level module -> its files' bytes

    def binds_word(self, top: str, word: str) -> bool:
        """Whether a source file of the installed top-level module `top` may bind `word`
        (`_BINDS_WORD`; True when one cannot be read). Each package's files are read once."""
        if top not in self._texts:
            self._texts[top] = self._read_package(top)
        texts = self._texts[top]
        if texts is None:
            return True
        binds = re.compile(_BINDS_WORD.replace("NAME", re.escape(word)).encode())
        return any(word.encode() in text and binds.search(text) for text in texts)

    def _read_package(self, top: str) -> list[bytes] | None:
        for entry in self._entries:
            listing = self._listings.of(entry)
            if f"{top}.py" in listing:
                paths = [os.path.join(entry, f"{top}.py")]
            elif top in listing:
                paths = [
                    os.path.join(folder, file)
                    for folder, _, files in os.walk(os.path.join(entry, top))
                    for file in files
                    if file.endswith((".py", ".pyi"))
                ]
            else:
                continue
            texts = []
            for path in paths:
                data = read_file(path)
                if data is None:
                    return None
                texts.append(data)
            return texts
        return None

    def leads_to_jax(self, top: str) -> bool:
        for entry in self._entries:
            listing = self._listings.of(entry)
            if top in listing or f"{top}.py" in listing:
                if os.path.realpath(entry) in self._standard:
                    return False  # the standard library's (`test`, which stdlib_module_names omits)
                return self._requires_jax(_normalized(top), set())
        return False  # not installed: jedi cannot read it either

    def _requires_jax(self, name: str, seen: set[str]) -> bool:
        if name in _JAX_DISTRIBUTIONS:
            return True
        if name in self._leads:
            return self._leads[name]
        folder = self._distributions().get(name)
        if folder is None:
            return True  # cannot tell what it needs
        seen.add(name)
        try:
            with open(os.path.join(folder, "METADATA"), "rb") as handle:
                metadata = handle.read()
        except OSError:
            return True
        needed = {_normalized(m.decode()) for m in _REQUIRES.findall(metadata)}
        leads = any(n in _JAX_DISTRIBUTIONS or (n not in seen and self._needs(n, seen)) for n in needed)
        self._leads[name] = leads
        return leads

    def _needs(self, name: str, seen: set[str]) -> bool:
        """A requirement leads to JAX; one not installed does not (it cannot be read)."""
        if name not in self._distributions():
            return False
        return self._requires_jax(name, seen)

    def _distributions(self) -> dict[str, str]:
        if self._dists is None:
            self._dists = {}
            for entry in self._entries:
                for item in self._listings.of(entry):
                    if item.endswith(".dist-info"):
                        name = _normalized(item[: -len(".dist-info")].split("-", 1)[0])
                        self._dists.setdefault(name, os.path.join(entry, item))
        return self._dists


_JAX_DISTRIBUTIONS = frozenset(JAX_PACKAGES)
# Where a file may bind NAME (as a class's attribute, or a name a class takes): a `def` or
# `class`, an assignment or annotation (`self.NAME = `, `NAME: T`, a keyword's `NAME=` too),
# an import, `as`, `for`, or a tuple of targets (`NAME, x = `); prose (a docstring's "NAME
# the function") does not match.
_BINDS_WORD = (
    r"\b(?:def|class)[ \t]+NAME\b|\bNAME[ \t]*(?:=(?!=)|:(?!=)|(?:[-+*/%&|^@]|//|\*\*|<<|>>)=)"
    r"|\bimport\b[^\n]*\bNAME\b|\b(?:as|for)[ \t]+NAME\b|\bNAME[ \t]*,[^\n]*=(?!=)"
)
_REQUIRES = re.compile(rb"(?m)^Requires-Dist:[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()

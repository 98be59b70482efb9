"""What the rules know of the project beside its code: the JAX release installed for it, that
release's facts, and where the project turns on JAX's new remat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from jax_lsp.core.config import Settings
from jax_lsp.core.guard import WorkLock
from jax_lsp.core.notebooks.files import is_notebook
from jax_lsp.core.packages import read_file
from jax_lsp.engine.project_files import ProjectFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.core.binding.module import Module
    from jax_lsp.core.jax_facts import JaxFacts
    from jax_lsp.core.policies.new_remat import NewRematSwitch


# JAX's facts are imported when first asked for: a check that asks none reads no release data.
def _installed_jax_version(interpreter: str | None) -> str | None:
    from jax_lsp.core.jax_facts import installed_jax_version

    return installed_jax_version(interpreter)


def _facts_for(version: str | None) -> JaxFacts:
    from jax_lsp.core.jax_facts import facts_for

    return facts_for(version)


# The switch's finder imports the parser (and `ast`): only a check that asks for the switch, one
# of a callable policy, imports it.
def _could_switch(data: bytes) -> bool:
    from jax_lsp.core.policies.new_remat import could_turn_on

    return could_turn_on(data)


def _first_switch(
    files: Iterable[str], text: Callable[[str], str | None], load: Callable[[str], Module | None]
) -> NewRematSwitch | None:
    """The first new-remat switch in `files`, each read from its open buffer (`text`) else from
    disk; a notebook is loaded whole (`load`): its cells place the switch."""
    from jax_lsp.core.policies.new_remat import NewRematSwitch, could_turn_on, first_switch, switches_in
    from jax_lsp.core.text.decoding import decode

    for key in files:
        # A byte search of each file, as the prefilter's: not a read for the analysis.
        overlay = text(key)
        data = overlay.encode() if overlay is not None else read_file(key)
        if data is None or not could_turn_on(data):
            continue
        if is_notebook(key):
            module = load(key)
            switches = [] if module is None else switches_in(module.source.tree, module.source.text)
            span = module.source.span(switches[0]) if module is not None and switches else None
        else:
            span = first_switch(overlay if overlay is not None else decode(data)[0], key)
        if span is not None:
            return NewRematSwitch(key, span)
    return None


def _switch_setting() -> NewRematSwitch:
    """The switch of the setting `new-remat = "always"`."""
    from jax_lsp.core.policies.new_remat import NewRematSwitch

    return NewRematSwitch(None, None)


class ProjectFacts:
    """Each fact read once, when first asked for; the switch again when a file that may hold
    one changes. Shares the workspace's lock."""

    def __init__(
        self,
        lock: WorkLock,
        settings: Settings,
        interpreter: str | None,
        files: ProjectFiles,
        load: Callable[[str], Module | None],
    ):
        self._lock = lock
        self._settings = settings
        self._interpreter = interpreter
        self._files = files
        self._load = load
        self._new_remat: tuple[NewRematSwitch | None] | None = None  # (the answer,) once asked
        self._jax_facts: JaxFacts | None = None
        self._jax_version: tuple[str | None] | None = None  # (the version,) once read

    def jax_version(self) -> str | None:
        """The JAX release installed for the project (the interpreter's), from its metadata."""
        if self._jax_version is None:
            self._jax_version = (_installed_jax_version(self._interpreter),)
        return self._jax_version[0]

    def jax_facts(self) -> JaxFacts:
        """The facts of the JAX release installed for the project (the newest when none is)."""
        if self._jax_facts is None:
            self._jax_facts = _facts_for(self.jax_version())
        return self._jax_facts

    def new_remat_switch(self) -> NewRematSwitch | None:
        """Where the project turns on JAX's new remat (`jax_remat3`): the first switch in its
        files (read once, and again when one that may hold a switch changes), else None; with
        the setting `new-remat = "always"`, that setting. A check that asks depends on every
        file: any may come to hold a switch (the result cache is told so)."""
        if self._settings.new_remat == "always":
            return _switch_setting()
        with self._lock:
            if self._new_remat is None:
                self._new_remat = (_first_switch(self._files.python_files(), self._files.text, self._load),)
            self._files.depends_on_every_file()
            return self._new_remat[0]

    def forget(self, key: str) -> None:
        """The file at `key` changed (with the lock held): the switch is looked for again if it
        was found, or if the file may hold one now."""
        if self._new_remat is not None and (self._new_remat[0] is not None or self._may_switch(key)):
            self._new_remat = None

    def _may_switch(self, key: str) -> bool:
        data = self._files.read(key)
        return data is not None and _could_switch(data)

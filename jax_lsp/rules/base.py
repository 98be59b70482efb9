"""What every rule is made of: code, severity, docs, examples, and checks over the core's contexts."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from jax_lsp.core.binding.module import Module
from jax_lsp.core.binding.return_paths import ReturnPaths
from jax_lsp.core.binding.scopes import FunctionNode
from jax_lsp.core.binding.values import Kind, classify, leaves
from jax_lsp.core.codes import CODES, Family
from jax_lsp.core.findings import Edit, Finding, Fix, Located, Severity, Span
from jax_lsp.core.policies.resolve import PolicyFunction, ResolvedPolicy
from jax_lsp.core.policies.sites import Site
from jax_lsp.core.policies.tables import TableChoice
from jax_lsp.core.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from jax_lsp.core.jax_facts import JaxFacts
    from jax_lsp.core.policies.new_remat import NewRematSwitch
    from jax_lsp.core.tags.index import NameIndex  # annotations only: it imports difflib


class Example(Record):
    """A complete module. Runtime tests exec it and take `jax.grad` of its `f` at ones((4, 4)).

    `code` and `fixed` may be written indented, inside the rule module: they are given flush
    left, without the blank lines around them (when asked: the docs and the tests read them,
    and every check imports every rule). For INVALID examples, `fixed` is the text after
    applying every fix of this rule (None when the rule has no fix for it) and `error` a piece
    of the exception JAX raises; a silent mistake names instead a `misbehaves` check that
    proves it."""

    __slots__ = ("written", "written_fixed", "error", "misbehaves", "lines")
    written: str  # `code` as written in the rule module
    written_fixed: str | None
    error: str | None
    misbehaves: Callable[[dict[str, Any]], None] | None  # given the module's globals
    lines: tuple[int, ...]  # 1-based lines where the rule must fire (INVALID)

    def __init__(
        self,
        code: str,
        fixed: str | None = None,
        error: str | None = None,
        misbehaves: Callable[[dict[str, Any]], None] | None = None,
        lines: tuple[int, ...] = (),
    ) -> None:
        self._assign(code, fixed, error, misbehaves, lines)

    @property
    def code(self) -> str:
        return dedent_code(self.written)

    @property
    def fixed(self) -> str | None:
        return None if self.written_fixed is None else dedent_code(self.written_fixed)


class PolicyContext:
    """One user-written policy function, reached from one or more sites."""

    def __init__(
        self,
        function: PolicyFunction,
        paths: ReturnPaths,
        in_save_from_both: bool,
        project: Project,
        reached_from: list[tuple[str, Span]] | None = None,
        chosen_by: list[TableChoice] | None = None,
    ) -> None:
        self.function = function
        self.project = project
        self.paths = paths
        self.in_save_from_both = in_save_from_both
        self.reached_from: list[tuple[str, Span]] = [] if reached_from is None else reached_from
        self.chosen_by: list[TableChoice] = (
            [] if chosen_by is None else chosen_by
        )  # entries it is looked up from

    @property
    def module(self) -> Module:
        return self.function.module

    @property
    def node(self) -> FunctionNode:
        return self.function.node

    @property
    def prim_name(self) -> str | None:
        """The parameter that receives the primitive (after functools.partial's bound ones)."""
        args = self.node.args
        positional = [*args.posonlyargs, *args.args]
        index = self.function.bound_positional
        return positional[index].arg if index < len(positional) else None

    def returned_values(self) -> Iterator[tuple[ast.expr, Kind]]:
        """Every expression the policy can return (each branch of `a if c else b`), with its kind."""
        scope = self.module.function_scope(self.node)
        for _, value in self.paths.values():
            for leaf in leaves(value) if value is not None else ():
                yield leaf, classify(self.module, leaf, scope)

    def anchor_span(self) -> Span:
        """The function name on the `def` line, or the whole lambda."""
        if isinstance(self.node, ast.Lambda):
            return self.module.source.span(self.node)
        return self.module.source.name_span(self.node)


class SiteContext:
    def __init__(self, site: Site, targets: list[ResolvedPolicy], project: Project) -> None:
        self.site = site
        self.targets = targets
        self.project = project

    @property
    def module(self) -> Module:
        return self.site.module

    def anchor(self, module: Module, expr: ast.expr) -> ast.expr:
        """Where a finding about `expr` (written in `module`) goes: there when that is this
        site's module, else on the site's value, so that a file's findings stay in that file."""
        value = self.site.value
        return expr if module is self.module or value is None else value

    def chosen(self, target: ResolvedPolicy) -> str:
        """For a target looked up in a table with an unknown key: which key chooses it."""
        return target.chosen_by.note(self.module.path) if target.chosen_by else ""


class Project:
    """What a check knows of the project beyond the file at hand, each computed when a rule
    first asks: the checkpoint-name tags in reach, the facts of the JAX release it runs on, and
    where JAX's new remat is turned on."""

    def __init__(
        self,
        tags: Callable[[], NameIndex],
        jax: Callable[[], JaxFacts],
        new_remat: Callable[[], NewRematSwitch | None],
    ) -> None:
        self._tags = tags
        self._jax = jax
        self._new_remat = new_remat

    def jax(self) -> JaxFacts:
        """The facts of the JAX installed for the project (the `interpreter` setting's, else
        this Python's; the newest supported release when none is found)."""
        return self._jax()

    def tags(self) -> NameIndex:
        """Every checkpoint-name tag in reach: the workspace's and its installed packages'."""
        return self._tags()

    def new_remat(self) -> NewRematSwitch | None:
        """Where the project turns on `jax_remat3` (or the setting that says to assume it)."""
        return self._new_remat()


class ModuleContext:
    """One file, for checks that are not about a `policy=` site, and the project around it."""

    def __init__(self, module: Module, project: Project) -> None:
        self.module = module
        self.project = project


class Rule:
    code: ClassVar[str]
    # Taken from the registry of codes (core.codes) by `code`: one place to keep them.
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []
    # Whether a trace (the policy run under JAX on a probe function) can show the mistake; not
    # when it lies in the user's model, which a trace does not run.
    traceable: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        entry = CODES.get(cls.code)
        if entry is None or entry.family is not Family.RULE:
            raise TypeError(f"{cls.__name__}: {cls.code} is not a rule code of jax_lsp.core.codes")
        cls.name, cls.severity, cls.summary = entry.name, entry.severity, entry.summary

    # Checks: override the ones the rule needs.
    def check_policy(self, policy: PolicyContext) -> Iterable[Finding]:
        return ()

    def check_site(self, site: SiteContext) -> Iterable[Finding]:
        return ()

    def check_module(self, context: ModuleContext) -> Iterable[Finding]:
        return ()

    # Helpers ---------------------------------------------------------------
    def finding(
        self,
        module: Module,
        where: Located | Span,
        message: str,
        fixes: Iterable[Fix] = (),
        severity: Severity | None = None,
    ) -> Finding:
        span = where if isinstance(where, Span) else module.source.span(where)
        return Finding(module.path, self.code, severity or self.severity, message, span, tuple(fixes))

    def safe_fix(self, title: str, *edits: Edit) -> Fix:
        """A fix that cannot change what the program computes beyond the mistake (applied by
        `check --fix`, preferred in the editor)."""
        return Fix(title, True, tuple(edits))

    def unsafe_fix(self, title: str, *edits: Edit) -> Fix:
        """A fix that may change what the program computes: offered, applied only on request."""
        return Fix(title, False, tuple(edits))

    @staticmethod
    def replace(module: Module, where: Located | Span, new_text: str) -> Edit:
        span = where if isinstance(where, Span) else module.source.span(where)
        return Edit(module.path, span, new_text)

    # Documentation ---------------------------------------------------------
    @classmethod
    def doc_url(cls) -> str:
        return CODES[cls.code].doc_url

    @classmethod
    def docs(cls) -> str:
        """Markdown: the module docstring (What it does / Why is this bad? / Fix safety) with
        the first INVALID and VALID examples as Example / Use instead."""
        import inspect  # here: only the documentation needs it (start-up time)

        doc = inspect.getdoc(inspect.getmodule(cls)) or ""
        example = cls.INVALID[0].code.strip() if cls.INVALID else ""
        instead = (cls.INVALID[0].fixed or (cls.VALID[0].code if cls.VALID else "")).strip()
        blocks = f"## Example\n```python\n{example}\n```\n\n## Use instead\n```python\n{instead}\n```\n"
        head = f"# {cls.code} ({cls.name})\n\n{cls.summary}. Severity: {cls.severity.value}.\n\n"
        if "## Fix safety" in doc:
            before, after = doc.split("## Fix safety", 1)
            return head + before.rstrip() + "\n\n" + blocks + "\n## Fix safety" + after + "\n"
        return head + doc + "\n\n" + blocks


def saved_residuals_of_f(namespace: dict[str, Any]) -> str:
    """What `print_saved_residuals` lists for an example's `f` at ones((4, 4)): what JAX keeps for
    the backward pass (`named 'h'`, `output of sin`...), for `misbehaves` checks. The tests run it
    in another interpreter too, by its source: it imports what it uses."""
    import contextlib
    import io

    import jax.numpy as jnp
    from jax.ad_checkpoint import print_saved_residuals

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(namespace["f"], jnp.ones((4, 4)))  # type: ignore[no-untyped-call, unused-ignore]  # unannotated in jax 0.10
    return printed.getvalue()


def dedent_code(text: str) -> str:
    """Examples are written indented inside the rule module; store them flush left."""
    lines = text.strip("\n").splitlines()
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return "\n".join(l[indent:] for l in lines) + "\n"

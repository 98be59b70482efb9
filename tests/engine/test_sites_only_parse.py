"""Loading a file only to find its sites (`Workspace.load(only_if_site=True)`, as `check FILE`
indexes the files that import it): top-level `def`s and `class`es, and the methods of top-level
classes, without a trigger word are parsed when their name is looked up, and the sites and what
they reach are those of a whole parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jax_lsp.core.policies.resolve import PolicyFunction
from jax_lsp.core.text.deferred import parse_for_sites
from jax_lsp.engine import Workspace

KEEP = '\ndef keep(prim, *args, **params):\n    if prim.name == "sin":\n        return True\n'

CASES = {
    # The policy is defined in a statement that holds no trigger word.
    "defined_apart": ("import jax\n" + KEEP + "f = jax.checkpoint(lambda x: x, policy=keep)\n", ["keep"]),
    # The same text inside a string is no definition.
    "inside_a_string": (
        'import jax\nDOC = """\n' + KEEP + '"""\nf = jax.checkpoint(lambda x: x, policy=keep)\n',
        [],
    ),
    # `ck` is marked by a line above `g`, so `g` is walked for sites as a whole parse walks it.
    "alias_marked_above": (
        "import jax\nck = jax.checkpoint\n" + KEEP + "\ndef g(x):\n    return ck(lambda y: y, keep)\n",
        ["keep", "g"],
    ),
    # ... and not when the alias comes after `g` (the whole parse does not walk it either).
    "alias_marked_below": (
        KEEP + "\ndef g(x):\n    return ck(lambda y: y, keep)\n\nimport jax\nck = jax.checkpoint\n",
        ["keep", "g"],
    ),
    # A method holding no trigger word is left out of a class that holds a site, and parsed
    # when a site elsewhere leads to it.
    "method_policy": (
        "import jax\n\nclass Policies:\n    @staticmethod"
        + KEEP.replace("\n", "\n    ")
        + "\n    def other(self):\n        return 1\n\n"
        "    def apply(self, x):\n        return jax.checkpoint(lambda y: y, policy=None)(x)\n\n"
        "f = jax.checkpoint(lambda x: x, policy=Policies.keep)\n",
        ["keep", "other"],
    ),
    # A method that uses an alias marked above it is walked for sites in its turn.
    "method_alias_marked_above": (
        "import jax\nck = jax.checkpoint\n\nclass Model:\n    def g(self, x):\n        return ck(lambda y: y, x)\n\n"
        "    def apply(self, x):\n        return jax.checkpoint(lambda y: y, policy=None)(x)\n",
        ["g"],
    ),
    # A class that holds a tag and no site has its methods left out one by one: the names
    # index parses only the method holding the tag.
    "class_of_tags": (
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\n\nclass Block:\n    size = 4\n\n"
        "    def tagged(self, x):\n        return checkpoint_name(x, 'attn_out')\n\n"
        "    def other(self):\n        return 1\n\n"
        "f = jax.checkpoint(lambda x: x, policy=None)\n",
        ["tagged", "other"],
    ),
    # A decorator over several lines (as JAX code writes `functools.partial(jax.jit, ...)`, and
    # tests `parameterized.parameters` with a case a line) is no reason to parse what it decorates.
    "decorator_over_lines": (
        "import functools, jax\n\n@functools.partial(\n    jax.jit,\n    static_argnums=0,\n)\n"
        "def helper(n, x):\n    return x * n\n\nclass Test:\n    @parameters(\n        dict(n=1),\n"
        "        dict(n=2),\n    )\n    def test_n(self, n):\n        return helper(n, 1.0)\n\n"
        "    def test_site(self):\n        return jax.checkpoint(lambda y: y, policy=None)(1.0)\n",
        ["helper", "test_n"],
    ),
    "class_attribute": (
        "import jax\n\nclass Policies:\n    keep = staticmethod(lambda prim, *a, **k: None)\n\n"
        "f = jax.checkpoint(lambda x: x, policy=Policies.keep)\n",
        ["Policies"],
    ),
}


def _sites(workspace: Workspace, module) -> list[tuple[int, list[tuple[str, int]]]]:
    return [
        (
            site.call.lineno,
            [
                (type(target).__name__, target.node.lineno if isinstance(target, PolicyFunction) else 0)
                for target in targets
            ],
        )
        for site, targets in workspace.sites(module)
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_sites_are_those_of_a_whole_parse(tmp_path: Path, name: str):
    text, deferred = CASES[name]
    path = tmp_path / "mod.py"
    path.write_text(text)
    parsed = parse_for_sites(text, str(path))
    assert ([] if parsed is None else [d.name for d in parsed[1]]) == deferred

    partial_workspace, whole_workspace = Workspace([tmp_path]), Workspace([tmp_path])
    partial = partial_workspace.load(path, only_if_site=True)
    whole = whole_workspace.load(path)
    assert partial is not None and whole is not None
    assert _sites(partial_workspace, partial) == _sites(whole_workspace, whole)
    assert bool(_sites(whole_workspace, whole)) == (name != "alias_marked_below")
    # Asked whole later, the same module object becomes the module a whole parse gives.
    completed = partial_workspace.load(path)
    assert completed is partial
    assert ast.dump(completed.source.tree, include_attributes=True) == ast.dump(
        whole.source.tree, include_attributes=True
    )


def test_a_deferred_definition_found_by_name_is_parsed_in_place(tmp_path: Path):
    (tmp_path / "mod.py").write_text(CASES["defined_apart"][0])
    workspace = Workspace([tmp_path])
    module = workspace.load(tmp_path / "mod.py", only_if_site=True)
    assert [type(s).__name__ for s in module.source.tree.body] == ["Import", "Assign"]
    [(_, [policy])] = workspace.sites(module)
    assert isinstance(policy.node, ast.FunctionDef) and policy.node.name == "keep"
    assert module.source.segment(policy.node).startswith("def keep(prim")
    assert [type(s).__name__ for s in module.source.tree.body] == ["Import", "FunctionDef", "Assign"]


def test_the_deferred_definitions_naming_a_word_are_parsed_in_place(tmp_path: Path):
    """What follows the uses of a name through the tree (JAX119's roads) asks for the
    definitions that name it, in a class or in the whole module; the others stay unparsed."""
    text = (
        "import jax\n\nclass Model:\n    def setup(self):\n"
        "        self.layers = jax.checkpoint(lambda x: x)\n\n"
        "    def __call__(self, x):\n        return self.layers(x)\n\n"
        "    def other(self):\n        return self.layers_count\n\n"
        "def run(model, x):\n    return model.layers(x)\n"
    )
    (tmp_path / "mod.py").write_text(text)
    module = Workspace([tmp_path]).load(tmp_path / "mod.py", only_if_site=True)
    tree = module.source.tree
    [model] = [s for s in tree.body if isinstance(s, ast.ClassDef)]

    def names(node: ast.Module | ast.ClassDef) -> list[str]:
        return [s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))]

    assert names(model) == ["setup"] and names(tree) == ["Model"]
    assert module.parse_deferred_naming("layers", model)
    assert names(model) == ["setup", "__call__"] and names(tree) == ["Model"]
    assert not module.parse_deferred_naming("layers", model)
    assert module.parse_deferred_naming("layers", tree)
    assert names(tree) == ["Model", "run"] and names(model) == ["setup", "__call__"]


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n    return (\n1)\n",  # a line at the margin inside brackets: not a statement
        "def f():\n    return '''\nx = 1\n'''\n",  # ... or inside a string
        "def f():\n    return 1 + \\\n2\n",  # ... or after a line continuation
        "x = 1\n",  # nothing to leave out
    ],
)
def test_only_whole_statements_are_left_out(text: str):
    assert parse_for_sites(text, "mod.py") is None


SITE = "        return jax.checkpoint(lambda y: y, policy=None)(x)\n"


@pytest.mark.parametrize(
    "text",
    [
        # A header over several lines.
        "import jax\nclass A(\n    object,\n):\n    def f(self):\n        return 1\n\n    def g(self, x):\n"
        + SITE,
        # A `def` line inside the class's docstring.
        'import jax\nclass A:\n    """\n    def f(self):\n    """\n    def g(self, x):\n' + SITE,
        # Its only statement: a class body cannot be empty.
        "import functools, jax\n@functools.partial(jax.remat, policy=None)\nclass A:\n    def f(self):\n        return 1\n",
    ],
)
def test_methods_are_left_out_only_of_plainly_laid_out_classes(text: str):
    assert parse_for_sites(text, "mod.py") is None
    ast.parse(text)


def test_a_deferred_definition_that_does_not_parse_binds_nothing_and_is_a_syntax_error():
    tree, deferred = parse_for_sites("x = 0\ndef f() -> :\n    pass\nx = 1\n", "mod.py")
    assert [d.name for d in deferred] == ["f"]
    assert [type(s).__name__ for s in tree.body] == ["Assign", "Assign"]
    parsed = deferred[0].parse("mod.py")
    assert parsed.tree.body == []
    assert [(p.code, p.span.start.line) for p in parsed.problems] == [("JAX001", 1)]


# A long import beside a marker (`save_only_these_names`) and an alias of a checkpoint function,
# as axlearn's modules import from its `utils`: only the names on a marker's line are markers.
LONG_IMPORT = (
    "import jax\nfrom jax import (\n    numpy as jnp,\n    checkpoint as ck,\n)\n"
    "from utils import (\n    Tensor,\n    save_only_these_names,\n)\n"
    "\ndef shape(x: Tensor):\n    return jnp.shape(x)\n"
    + KEEP
    + "\ndef g(x: Tensor):\n    return ck(lambda y: y, keep)(x)\n"
    "\nf = jax.checkpoint(lambda x: x, policy=save_only_these_names('a'))\n"
)


def test_a_long_import_marks_only_the_names_beside_a_marker(tmp_path: Path):
    """A definition that only uses a name of the import (`Tensor`) waits for its name; one that
    calls the alias (`ck`) is walked (and `keep`, which its site reaches, parsed), and the sites
    are those of a whole parse."""
    path = tmp_path / "mod.py"
    path.write_text(LONG_IMPORT)
    partial_workspace, whole_workspace = Workspace([tmp_path]), Workspace([tmp_path])
    partial = partial_workspace.load(path, only_if_site=True)
    whole = whole_workspace.load(path)
    assert partial is not None and whole is not None
    assert _sites(partial_workspace, partial) == _sites(whole_workspace, whole)
    assert [line for line, _ in _sites(whole_workspace, whole)] == [19, 21]
    walked = [s.name for s in partial.source.tree.body if isinstance(s, ast.FunctionDef)]
    assert walked == ["keep", "g"]

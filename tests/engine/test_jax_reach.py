"""jedi is asked about a callee only where something in reach leads to JAX (engine.jax_reach).

Real jedi throughout: `jedi.Script` is wrapped only to count what the analysis asks of it.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from jax_lsp.core import Settings
from jax_lsp.engine import Workspace, jax_reach
from jax_lsp.engine.jax_reach import imported_modules

jedi = pytest.importorskip("jedi")
pytest.importorskip("jax")  # jedi names `jax.checkpoint` by reading jax's own source

ROOMY = Settings(jedi_budget=60)

BROKEN = "def bad(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n"


@pytest.fixture
def inferred(monkeypatch) -> list[int]:
    """How many real inferences jedi made (one entry each)."""
    made: list[int] = []

    class CountingScript(jedi.Script):
        def infer(self, *args, **kwargs):
            made.append(1)
            return super().infer(*args, **kwargs)

    monkeypatch.setattr(jedi, "Script", CountingScript)
    return made


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def test_a_stdlib_callee_with_policy_asks_no_jedi(tmp_path, inferred):
    # As in CPython's email package: `policy=` is its keyword, and every import is standard.
    write(
        tmp_path,
        {
            "mail.py": "import email\nfrom email import policy as policies\n\n"
            "def fold(value, policy):\n    return value.fold(policy=policy)\n\n"
            "def parse(text, factory):\n    part = factory(text)\n"
            "    return part.as_string(policy=policies.default)\n\n"
            "message = email.message_from_string('x', policy=policies.default)\n",
            "caller.py": "import mail\n\nprint(mail.fold('x', None))\n",
        },
    )
    workspace = Workspace([tmp_path], ROOMY)
    assert workspace.check_file(tmp_path / "mail.py") == []
    assert inferred == []
    assert workspace.jedi.stats[str(tmp_path / "mail.py")].not_needed == 2
    # An edit that imports JAX (an open buffer) leaves the callees to jedi again.
    text = (tmp_path / "mail.py").read_text()
    workspace.set_document(tmp_path / "mail.py", "import jax\n" + text)
    assert workspace.check_file(tmp_path / "mail.py") == []
    assert len(inferred) == 2


def test_a_checkpoint_re_exported_through_project_modules_is_found_without_jedi(tmp_path, inferred):
    # Neither the file nor the module it star-imports names JAX; the module below them does.
    # The star imports are followed into the workspace's modules (as macrogpt-jax's chain of
    # them leads to `nnx`): jedi, which took a second there, is not asked.
    write(
        tmp_path,
        {
            "layers.py": "import jax\nremat = jax.checkpoint\n",
            "helpers.py": "from layers import *\n",
            "model.py": BROKEN + "\nfrom helpers import *\n\nf = remat(g, policy=bad)\n",
        },
    )
    found = Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py")
    assert [(f.code, f.span.start.line) for f in found] == [("JAX101", 0)]
    assert inferred == []


def test_a_checkpoint_passed_in_by_a_caller_elsewhere_is_still_found(tmp_path, inferred):
    # util.py imports nothing; jedi names `remat` from the call in model.py, which imports JAX.
    write(
        tmp_path,
        {
            "util.py": BROKEN + "\n\ndef build(remat, g):\n    return remat(g, policy=bad)\n",
            "model.py": "import jax\nfrom util import build\n\nf = build(jax.checkpoint, abs)\n",
        },
    )
    found = Workspace([tmp_path], ROOMY).check_file(tmp_path / "util.py")
    assert [(f.code, f.span.start.line) for f in found] == [("JAX101", 0)]
    assert inferred == [1]


def test_a_parameter_of_a_function_nothing_calls_asks_no_jedi(tmp_path, inferred):
    # As in JAX's own tests: a parameterizing decorator passes `remat`; no call names the test.
    test = (
        "import jax\nfrom absl.testing import parameterized\n\n"
        "class Test(parameterized.TestCase):\n"
        "    @parameterized.parameters(jax.checkpoint, jax.remat)\n"
        "    def test_remat_policy(self, remat):\n"
        "        f = remat(abs, policy=lambda *_, **__: True)\n"
    )
    write(tmp_path, {"tests/api_test.py": test, "tests/other_test.py": "import jax\nprint(jax)\n"})
    workspace = Workspace([tmp_path], ROOMY)
    assert workspace.check_file(tmp_path / "tests/api_test.py") == []
    assert inferred == []
    # Named anywhere else (a caller, in a module that reaches JAX): jedi is asked again.
    write(
        tmp_path, {"tests/other_test.py": "import jax\nfrom api_test import Test\nTest().test_remat_policy\n"}
    )
    workspace = Workspace([tmp_path], ROOMY)
    workspace.check_file(tmp_path / "tests/api_test.py")
    assert inferred == [1]


def test_a_fixture_or_a_default_leaves_the_parameter_to_jedi(tmp_path, inferred):
    write(
        tmp_path,
        {
            "conftest.py": "import jax, pytest\n\n@pytest.fixture\ndef remat():\n    return jax.checkpoint\n",
            "test_model.py": BROKEN + "\n\ndef test_remat(remat):\n    remat(abs, policy=bad)\n",
        },
    )
    found = Workspace([tmp_path], ROOMY).check_file(tmp_path / "test_model.py")
    assert [f.code for f in found] == ["JAX101"]  # jedi reads the fixture's return value
    assert inferred == [1]


# As in a Flax model: a method calls an attribute of `self` with `policy=`; jedi reads the
# class, its methods and flax's Module for it.
FLAX_STACK = (
    "import jax\nimport flax.linen as nn\n\n" + BROKEN + "\n\n"
    "class Stack(nn.Module):\n"
    "    layers: int\n\n"
    "    def setup(self):\n"
    "        self.blocks = [nn.Dense(8) for _ in range(self.layers)]\n{setup}\n"
    "    def __call__(self, x):\n"
    "        for block in self.blocks:\n"
    "            x = self.remat_block(block, policy=bad)(x)\n"
    "        return x\n"
)


def test_an_attribute_of_self_nothing_binds_asks_no_jedi(tmp_path, inferred):
    pytest.importorskip("flax")
    write(tmp_path, {"model.py": FLAX_STACK.format(setup="")})
    assert Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py") == []
    assert inferred == []


def test_an_attribute_of_self_bound_in_reach_is_left_to_jedi(tmp_path, inferred):
    pytest.importorskip("flax")
    # Bound in a method of the class: jedi names it JAX's checkpoint, and the policy is checked.
    write(tmp_path, {"model.py": FLAX_STACK.format(setup="        self.remat_block = jax.checkpoint\n")})
    found = Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py")
    assert [f.code for f in found] == ["JAX101"]
    assert inferred == [1]
    # Bound by a base class in another project module: jedi reads it there.
    base = "import jax\nimport flax.linen as nn\n\nclass Base(nn.Module):\n    remat_block = jax.checkpoint\n"
    model = FLAX_STACK.format(setup="").replace("class Stack(nn.Module)", "class Stack(Base)")
    write(
        tmp_path,
        {
            "base.py": base,
            "model.py": model.replace("import jax\n", "import jax\nfrom base import Base\n", 1),
        },
    )
    found = Workspace([tmp_path], ROOMY).check_file(tmp_path / "model.py")
    assert [f.code for f in found] == ["JAX101"]
    assert inferred == [1, 1]


def test_imports_are_read_from_the_text_in_every_scope():
    text = (
        b"import os, a.b as c\nfrom . import (x,\n    y)\nfrom ..q import z\n"
        b"def f():\n    x = 1; import jax\nfrom foo import \\\n    bar\n"
        b'"""Safe to use in "from ... import *" mode."""\n'
    )
    assert imported_modules(text, "p.m.n", False) == {
        "os", "a.b", "p.m", "p.m.x", "p.m.y", "p.q", "p.q.z", "jax", "foo", "foo.bar"
    }  # fmt: skip


def test_module_names_found_once_per_folder_are_the_workspace_s(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/math.filecheck.py": "", "pkg/mod.py": "", "top.py": ""})
    workspace = Workspace([tmp_path])
    for name in ("pkg/math.filecheck.py", "pkg/mod.py", "pkg/__init__.py", "top.py"):
        path = str(tmp_path / name)
        assert workspace.callees.reach._name_of(path) == workspace.imports.module_name(path)


def test_the_word_searches_answer_as_their_expressions():
    """A function named once in its module, and a `def` of a parameter's name, are found by
    bytes.find: as `\\bname\\b` counted and `\\bdef[ \\t]+name\\b` searched would find them."""
    pieces = ["def", "f", "fx", "xf", "_f", " ", "\t", "\n", "(", ".", "def f", "é", "fé", "1"]
    chooser = random.Random(0)
    for _ in range(20_000):
        data = "".join(chooser.choice(pieces) for _ in range(chooser.randint(0, 8))).encode()
        for name in ("f", "fé", "def"):
            word = re.escape(name.encode())
            counted = min(2, len(re.findall(rb"\b" + word + rb"\b", data)))
            assert jax_reach._word_count(data, name, 2) == counted, (data, name)
            defined = re.search(rb"\bdef[ \t]+" + word + rb"\b", data) is not None
            assert jax_reach._defines(data, name) == defined, (data, name)

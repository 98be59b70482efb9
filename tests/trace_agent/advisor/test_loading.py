"""The site's module is imported as Python imports it: every module-level statement runs (a
`defvjp`, a pytree registration, a registry), `if __name__ == "__main__":` does not, and every
import of the file, under any name, gets the one marked module. Each fixture is advised, its
residuals equal JAX's `saved_residuals`, and it is shown to fail the old way."""

from __future__ import annotations

import ast
import functools
import runpy
import shutil
import textwrap
from pathlib import Path

import pytest

from jax_lsp.trace.advisor.request import advise
from jax_lsp.trace.options import TraceOptions
from tests.advisor_reference import assert_lists_what_jax_lists, reference_residuals
from tests.agent import ADVISOR_FIXTURES, line_of, skip_unless_agent_runs_this_jax

pytestmark = pytest.mark.jax  # runs the trace agent under real JAX

jax = pytest.importorskip("jax")


def _project(tmp_path: Path, name: str) -> Path:
    """A copy of the fixture folder ``name``, outside any repository."""
    return Path(shutil.copytree(ADVISOR_FIXTURES / name, tmp_path / name))


def _advise(service, project: Path, site: str, example: str, **request):
    path = project / site
    return advise(service, path, line_of(path), example=example, options=TraceOptions(timeout=120), **request)


def _advise_written(service, tmp_path: Path, text: str):
    """Advise the site of a ``model.py`` of ``text`` with its ``example``."""
    site = tmp_path / "model.py"
    site.write_text(text)
    return site, _advise(service, tmp_path, "model.py", "model.py:example", root=tmp_path)


def _assert_advised_as_jax_lists(service, tmp_path, project: Path, site: str, example: str, **request):
    """Advise the site of ``project/site`` with the example ``path/to/file.py:FUNCTION``; every
    candidate keeps what `saved_residuals` lists for it."""
    skip_unless_agent_runs_this_jax()
    advice = _advise(service, project, site, example, root=project, **request)
    assert advice.ok, advice.message
    file, _, function = example.partition(":")
    reference = functools.partial(
        reference_residuals,
        project,
        site,
        line_of(project / site),
        example=f"{file.removesuffix('.py').replace('/', '.')}:{function}",
        workdir=tmp_path,
    )
    assert_lists_what_jax_lists(advice.policies, reference)


def _without_module_level_calls(path: Path) -> dict:
    """The module as the advisor loaded it before: its top-level calls dropped."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tree.body = [s for s in tree.body if not isinstance(s, ast.Expr)]
    namespace: dict = {"__name__": "old_loading"}
    exec(compile(tree, str(path), "exec"), namespace)
    return namespace


def test_a_namespace_package_imported_by_its_package_name(service, tmp_path):
    repo = _project(tmp_path, "namespace_repo")
    assert not (repo / "vit_lab" / "__init__.py").exists() and not (repo / "pyproject.toml").exists()
    _assert_advised_as_jax_lists(
        service,
        tmp_path,
        repo,
        "vit_lab/model.py",
        "examples/advise_example.py:example",
        cwd=repo,
        import_root=repo / "vit_lab",  # the CLI's: the folder above the file's package
    )


def test_every_name_of_the_site_is_the_one_marked_module(service, tmp_path):
    """The old loading registered the site under the name its folder gives (`model`); the
    example's `from vit_lab import model` then made a second, unmarked copy (`not_reached`)."""
    repo = _project(tmp_path, "namespace_repo")
    (repo / "examples" / "both_names.py").write_text(
        textwrap.dedent(
            """
            import model as by_folder  # the site's folder is on sys.path, as for a script there
            from vit_lab import model as by_package
            from examples.advise_example import example as made

            assert by_folder is by_package, (by_folder, by_package)
            assert by_package.__name__ == "model"


            def example():
                return made()
            """
        )
    )
    advice = _advise(
        service,
        repo,
        "vit_lab/model.py",
        "examples/both_names.py:example",
        root=repo,
        cwd=repo,
        import_root=repo / "vit_lab",
    )
    assert advice.ok, advice.message


def test_a_custom_vjp_whose_defvjp_is_a_module_level_call(service, tmp_path):
    project = _project(tmp_path, "custom_vjp")
    site = project / "ring_attention.py"
    old = _without_module_level_calls(site)
    with pytest.raises(Exception, match="No VJP defined"):
        made = old["example"]()
        jax.make_jaxpr(lambda *a: jax.vjp(old["loss"], *a))(*made["args"])

    _assert_advised_as_jax_lists(service, tmp_path, project, "ring_attention.py", "ring_attention.py:example")


def test_a_pytree_registration_and_a_registry_filled_at_import(service, tmp_path):
    project = _project(tmp_path, "registrations")
    site = project / "registered.py"
    old = _without_module_level_calls(site)
    assert old["ACTIVATIONS"] == {}
    with pytest.raises(TypeError, match="as an abstract array"):
        jax.make_jaxpr(old["loss"])(*old["example"]()["args"])

    _assert_advised_as_jax_lists(service, tmp_path, project, "registered.py", "registered.py:example")


def test_a_main_block_does_not_run(service, tmp_path, monkeypatch):
    project = _project(tmp_path, "main_guard")
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit, match="no dataset"):
        runpy.run_path(str(project / "train.py"), run_name="__main__")
    (project / "training_started.txt").unlink()

    _assert_advised_as_jax_lists(service, tmp_path, project, "train.py", "train.py:example", cwd=project)
    assert not (project / "training_started.txt").exists()


def test_a_module_level_statement_that_raises_is_an_import_error_where_it_raised(service, tmp_path):
    (tmp_path / "settings.py").write_text(
        "import os\n\n\ndef load():\n    return {'d_model': int(os.environ['NO_SUCH_SETTING_HERE'])}\n"
    )
    _, advice = _advise_written(
        service,
        tmp_path,
        "import jax\nimport settings\n\nCONFIG = settings.load()\n\n"
        "block = jax.checkpoint(jax.numpy.sin, policy=jax.checkpoint_policies.dots_saveable)\n\n\n"
        "def example():\n    return (jax.ShapeDtypeStruct((4,), jax.numpy.float32),)\n",
    )
    assert advice.status == "import_error", advice.message
    assert "KeyError" in advice.message and "NO_SUCH_SETTING_HERE" in advice.message
    assert (advice.error_path, advice.error_line) == (str(tmp_path / "settings.py"), 5)


def test_a_trace_error_is_anchored_where_it_raised_in_the_project(service, tmp_path):
    """A kernel module of the project whose custom_vjp has no `defvjp`: the error names the
    kernel's line, not the example's or the site's call."""
    (tmp_path / "kernel.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_vjp\ndef attend(x):\n    return jnp.sin(x)\n\n\n"
        "def layer(x):\n    return attend(x) * 2\n"
    )
    _, advice = _advise_written(
        service,
        tmp_path,
        "import jax\nimport jax.numpy as jnp\n\nimport kernel\n\n"
        "block = jax.checkpoint(kernel.layer, policy=jax.checkpoint_policies.dots_saveable)\n\n\n"
        "def example():\n    return {'fn': lambda x: jnp.sum(block(x)), "
        "'args': (jax.ShapeDtypeStruct((4,), jnp.float32),)}\n",
    )
    assert advice.status == "trace_error", advice.message
    assert "No VJP defined" in advice.message
    assert (advice.error_path, advice.error_line) == (
        str(tmp_path / "kernel.py"),
        line_of(tmp_path / "kernel.py", "attend(x) * 2"),
    )


def test_an_error_raised_in_a_library_names_its_line_too(service, tmp_path):
    site, advice = _advise_written(
        service,
        tmp_path,
        "import json\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
        "def layer(x):\n    width = json.loads('{\"width\": ')\n    return x * width\n\n\n"
        "block = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)\n\n\n"
        "def example():\n    return (jax.ShapeDtypeStruct((4,), jnp.float32),)\n",
    )
    assert advice.status == "trace_error", advice.message
    assert (advice.error_path, advice.error_line) == (str(site), line_of(site, "json.loads"))
    assert "JSONDecodeError" in advice.message
    assert "(raised at " in advice.message and "json" in advice.message.rsplit("(raised at ", 1)[1]


def test_an_example_that_calls_a_copy_of_the_site_says_so(service, tmp_path):
    """An installed or vendored copy of the site's file is another file: the advice names it."""
    project = _project(tmp_path, "custom_vjp")
    (project / "vendored").mkdir()
    shutil.copy(project / "ring_attention.py", project / "vendored" / "ring_attention.py")
    (project / "run.py").write_text("from vendored.ring_attention import example\n")
    advice = _advise(service, project, "ring_attention.py", "run.py:example", root=project)
    assert advice.status == "not_reached"
    assert (
        f"it imported vendored.ring_attention from {project / 'vendored' / 'ring_attention.py'}"
        in advice.message
    )


def test_a_module_of_the_same_name_that_is_no_copy_is_not_blamed(service, tmp_path):
    """A library's `lib/_src/scan.py` (the site) and `lib/nn/scan.py` share a name only: an
    example that takes a branch around the site's checkpoint is told to call it, not blamed on
    the other module."""
    package = tmp_path / "lib"
    for folder in (package, package / "_src", package / "nn"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (package / "_src" / "scan.py").write_text(
        "import jax\n\n\ndef wrap(f, simple):\n    if simple:\n        return jax.checkpoint(f)\n"
        "    return jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)\n"
    )
    (package / "nn" / "scan.py").write_text(
        "import jax.numpy as jnp\n\nfrom lib._src.scan import wrap\n\n\n"
        "def stack(x):\n    return wrap(jnp.tanh, simple=True)(x)\n"
    )
    (tmp_path / "run.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\nfrom lib.nn.scan import stack\n\n\n"
        "def example():\n"
        "    return {'fn': lambda x: jnp.sum(stack(x)), 'args': (jax.ShapeDtypeStruct((4,), jnp.float32),)}\n"
    )
    advice = _advise(service, tmp_path, "lib/_src/scan.py", "run.py:example", root=tmp_path)
    assert advice.status == "not_reached"
    assert "the example must call the function it checkpoints" in advice.message
    assert "lib.nn.scan" not in advice.message

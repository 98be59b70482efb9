"""JAX112: names given to the name-based policy factories that no `checkpoint_name` tag carries."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import sys
import textwrap

import pytest

from jax_lsp.core import Settings
from jax_lsp.core.tags import index as name_index
from jax_lsp.engine import Workspace, analyze_text
from tests.rules.site_rules import anchored_text, fixed

MODEL = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x):
    h = checkpoint_name(jnp.sin(x), "attn_out")
    return jnp.sin(h)
"""


def jax112(code: str, tmp_path, name: str = "m.py"):
    path = tmp_path / name
    return [f for f in analyze_text(textwrap.dedent(code), str(path), Settings(select=("JAX112",)))]


def saved(code: str) -> str:
    """What `print_saved_residuals` prints for the module's checkpointed `f`."""
    import jax.numpy as jnp
    from jax.ad_checkpoint import print_saved_residuals

    namespace: dict = {"__name__": "snippet"}
    exec(compile(textwrap.dedent(code), "snippet.py", "exec"), namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(namespace["f"], jnp.ones((4, 4)))
    return printed.getvalue()


SAVE_AND_OFFLOAD = (
    "cp.save_and_offload_only_these_names(names_which_can_be_saved={saved}, names_which_can_be_offloaded={offloaded}, "
    'offload_src="device", offload_dst="pinned_host")'
)


@pytest.mark.parametrize(
    "policy, effect, residual_when_right, residual_when_wrong",
    [
        ('cp.save_only_these_names("{}")', "saves nothing under it", True, False),
        ('cp.save_any_names_but_these("{}")', "excludes nothing under it", False, True),
        (SAVE_AND_OFFLOAD.format(saved='["{}"]', offloaded="[]"), "saves nothing under it", True, False),
        (SAVE_AND_OFFLOAD.format(saved="[]", offloaded='("{}",)'), "offloads nothing under it", True, False),
    ],
    ids=["save_only", "any_but", "offload-saved", "offload-offloaded"],
)
def test_an_untagged_name_is_reported_with_the_closest_and_jax_silently_misbehaves(
    policy, effect, residual_when_right, residual_when_wrong, tmp_path
):
    code = (
        MODEL
        + "cp = jax.checkpoint_policies\nf = jax.checkpoint(block, policy="
        + policy.format("attn_outt")
        + ")\n"
    )
    [finding] = jax112(code, tmp_path)
    assert anchored_text(code, finding) == '"attn_outt"'
    assert effect in finding.message and 'did you mean "attn_out"?' in finding.message
    [fix] = finding.fixes
    assert not fix.safe
    repaired = fixed(code, [finding])
    assert repaired == textwrap.dedent(code).replace("attn_outt", "attn_out")
    assert jax112(repaired, tmp_path) == []
    # Under JAX: nothing is raised either way; only the residuals differ.
    right, wrong = saved(repaired), saved(code)
    tagged = (
        "named 'attn_out'"
        if "offloaded=[]" in policy or "names_but" in policy or "save_only" in policy
        else "<host>"
    )
    assert (tagged in right, tagged in wrong) == (residual_when_right, residual_when_wrong), (right, wrong)


def test_save_anything_except_these_names_is_checked_too(tmp_path):
    code = (
        MODEL
        + 'f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_anything_except_these_names("atn_out"))\n'
    )
    [finding] = jax112(code, tmp_path)
    assert "excludes nothing under it" in finding.message
    # A JAX fact (0.10.2): this factory ignores its names, so even the right one excludes nothing.
    right = code.replace('"atn_out"', '"attn_out"')
    assert saved(right) == saved(code)
    assert "output of cos" in saved(right)  # everything is saved, the value named attn_out too


def test_a_name_given_in_a_decorator_is_checked(tmp_path):
    code = (
        MODEL
        + """
cp = jax.checkpoint_policies


@functools.partial(
    jax.checkpoint,
    policy=cp.save_only_these_names("attn_outt"),
)
def layer(x):
    return block(x)
"""
    ).replace("import jax\n", "import functools\nimport jax\n", 1)
    [finding] = jax112(code, tmp_path)
    assert anchored_text(code, finding) == '"attn_outt"'


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from jax.ad_checkpoint import checkpoint_name as cn", 'cn(x, "attn_out")'),
        ("import jax.ad_checkpoint as adc", 'adc.checkpoint_name(x, "attn_out")'),
        ("import jax", 'jax.ad_checkpoint.checkpoint_name(x, name="attn_out")'),
        ("from jax import ad_checkpoint", 'ad_checkpoint.checkpoint_name(x, "attn_out")'),
        ("", 'ad.checkpoint_name(x, "attn_out")'),
    ],
)
def test_every_import_form_of_checkpoint_name_tags(imports, call, tmp_path):
    local = "    import jax.ad_checkpoint as ad\n" if not imports else ""
    code = f"""
import jax
{imports}


def block(x):
{local}    return {call}


f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_out", "attn_in"))
"""
    [finding] = jax112(code, tmp_path)
    assert anchored_text(code, finding) == '"attn_in"'


def test_a_function_of_the_same_name_from_elsewhere_does_not_tag(tmp_path):
    code = (
        MODEL
        + """
def checkpoint_name(x, name):
    return x


g = checkpoint_name(1, "attn_outt")
f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("attn_outt"))
"""
    )
    code = code.replace(
        "from jax.ad_checkpoint import checkpoint_name\n", "from jax import ad_checkpoint\n"
    ).replace(
        'h = checkpoint_name(jnp.sin(x), "attn_out")',
        'h = ad_checkpoint.checkpoint_name(jnp.sin(x), "attn_out")',
    )
    [finding] = jax112(code, tmp_path)
    assert anchored_text(code, finding) == '"attn_outt"'


def test_an_f_string_tag_carries_the_names_of_its_shape(tmp_path):
    code = """
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


def block(x):
    for i in range(3):
        x = checkpoint_name(jnp.sin(x), f"layer_{i}")
    return checkpoint_name(x, "mlp" + str(3))


cp = jax.checkpoint_policies
f = jax.checkpoint(block, policy=cp.save_only_these_names("layer_0", "layer_12", "mlp3", "layer", "lyer_1"))
"""
    found = jax112(code, tmp_path)
    assert sorted(anchored_text(code, f) for f in found) == ['"layer"', '"lyer_1"']
    assert all('did you mean a name of the shape `f"layer_{i}"`?' in f.message and not f.fixes for f in found)


def test_names_that_cannot_be_known_are_never_reported(tmp_path):
    code = (
        MODEL
        + """
cp = jax.checkpoint_policies


def policy_for(config, name):
    return cp.save_only_these_names(*config.saved, name, f"{name}_out")


f = jax.checkpoint(block, policy=cp.save_only_these_names(*CONFIG["names"]))
"""
    )
    assert jax112(code, tmp_path) == []


def test_names_bound_to_constants_here_and_in_another_module(tmp_path):
    (tmp_path / "names.py").write_text('SAVED = ("attn_out", "attn_outt")\n')
    code = (
        MODEL
        + """
from names import SAVED

LOCAL = ["attn_out", "atn_out"]
cp = jax.checkpoint_policies
f = jax.checkpoint(block, policy=cp.save_only_these_names(*LOCAL, *SAVED))
"""
    )
    found = jax112(code, tmp_path, "model.py")
    here = next(f for f in found if '"atn_out"' in f.message)
    assert anchored_text(code, here) == '"atn_out"' and here.fixes
    elsewhere = next(f for f in found if '"attn_outt"' in f.message)
    assert anchored_text(code, elsewhere) == "cp.save_only_these_names(*LOCAL, *SAVED)"
    assert "(the name is written in names.py:1)" in elsewhere.message and elsewhere.fixes == ()


def test_tags_in_one_module_names_in_another(tmp_path):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    train = """
import jax
from model import block

POLICY = jax.checkpoint_policies.save_only_these_names("attn_out", "atn_out")
"""
    [finding] = jax112(train, tmp_path, "train.py")
    assert anchored_text(train, finding) == '"atn_out"'
    assert 'did you mean "attn_out"?' in finding.message


def test_a_name_assigned_in_a_method_without_a_trigger_word_is_followed(tmp_path):
    # The class holds a tag, so its file is parsed; `first` holds no trigger word, so it is
    # parsed only on demand: the flow of `checkpoint_str` must still see "ffn1" there.
    (tmp_path / "layers.py").write_text(
        textwrap.dedent(
            """
            from jax.ad_checkpoint import checkpoint_name


            class Dense:
                def __call__(self, x):
                    return checkpoint_name(x, self.checkpoint_str)

                def first(self):
                    self.checkpoint_str = "ffn1"


            second = Dense()
            second.checkpoint_str = "ffn2"
            """
        )
    )
    train = """
import jax
from layers import Dense

POLICY = jax.checkpoint_policies.save_only_these_names("ffn1", "ffn3")
"""
    [finding] = jax112(train, tmp_path, "train.py")
    assert anchored_text(train, finding) == '"ffn3"'


def test_tags_of_an_installed_package_the_workspace_imports(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "modellib").mkdir(parents=True)
    (site / "modellib" / "__init__.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\n\n\n"
        "def attention(x):\n    return checkpoint_name(x, 'attn_out')\n"
    )
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    work = tmp_path / "work"
    work.mkdir()
    train = """
import jax
import modellib

POLICY = jax.checkpoint_policies.save_only_these_names("attn_out", "attn_outt")
"""
    [finding] = jax112(train, work, "train.py")
    assert anchored_text(train, finding) == '"attn_outt"' and 'did you mean "attn_out"?' in finding.message
    # A package the workspace does not import is out of reach: its tags do not count.
    other = (
        train.replace("import modellib\n", "")
        + "from jax.ad_checkpoint import checkpoint_name\nT = checkpoint_name(1, 'attn_in')\n"
    )
    assert sorted(anchored_text(other, f) for f in jax112(other, work, "train.py")) == [
        '"attn_out"',
        '"attn_outt"',
    ]


def _check_with_packages(work, site, *options: str):
    """`jax-lsp check` of `work` (no cache, concise) with the packages of `site` importable."""
    from tests.cli.runner import run_check

    env_path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return run_check(
        work, "--no-cache", *options, "--output-format", "concise", ".", env={"PYTHONPATH": env_path}
    )


def test_the_cli_reads_the_packages_tags_beside_the_workspaces_and_reports_with_them(tmp_path):
    """A `check` (one thread: the packages' tags are read by a forked process) finds the typo
    that only a package's tag shows, as the check in this process does; and a tag of the
    workspace's own that carries every name needs no package."""
    site = tmp_path / "site"
    (site / "modellib").mkdir(parents=True)
    (site / "modellib" / "__init__.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\n\n\n"
        "def attention(x, name='attn_out'):\n    return checkpoint_name(x, name)\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\n\n\n"
        "def mlp(x, name='mlp_out'):\n    return checkpoint_name(x, name)\n"
    )
    train = work / "train.py"
    train.write_text(
        "import jax\nimport modellib\n\n"
        'POLICY = jax.checkpoint_policies.save_only_these_names("attn_out", "attn_outt", "mlp_out")\n'
    )
    done = _check_with_packages(work, site)
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("JAX112") == 1 and 'did you mean "attn_out"?' in done.stdout, done.stdout
    assert "train.py:4:" in done.stdout, done.stdout
    train.write_text(train.read_text().replace('"attn_out", "attn_outt", ', ""))
    done = _check_with_packages(work, site)
    assert (done.returncode, done.stdout.strip()) == (0, "All checks passed!"), done.stdout + done.stderr


def test_the_heaviest_package_read_beside_and_the_others_here_give_the_tags_read_in_one_process(
    tmp_path,
):
    """The CLI reads the package of most files beside (a forked process) and the others itself:
    the typos that a tag of each shows are found, with the suggestions of a check in one process."""
    tag = "from jax.ad_checkpoint import checkpoint_name\n"
    files = {
        "site/biglib/__init__.py": "",
        "site/biglib/extra.py": "X = 1\n",
        "site/biglib/layers.py": f"{tag}\n\ndef attention(x, name='attn_out'):\n    return checkpoint_name(x, name)\n",
        "site/alib.py": f"{tag}M = checkpoint_name(1, 'mlp_out')\n",
        "site/zmodels.py": f"{tag}Q = checkpoint_name(1, 'q_proj')\n",
        "work/train.py": "import jax\nimport alib\nimport biglib\nimport zmodels\n\n"
        'POLICY = jax.checkpoint_policies.save_only_these_names("attn_outt", "mlp_outt", "q_projj")\n',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    site, work = tmp_path / "site", tmp_path / "work"
    done = _check_with_packages(work, site)
    assert done.returncode == 1, done.stderr
    for meant in ("attn_out", "mlp_out", "q_proj"):
        assert f'did you mean "{meant}"?' in done.stdout, done.stdout
    one_process = _check_with_packages(work, site, "--jobs", "1")
    assert one_process.stdout == done.stdout


def test_installed_packages_are_read_only_for_a_name_the_workspace_does_not_tag(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "modellib").mkdir(parents=True)
    package_file = site / "modellib" / "__init__.py"
    package_file.write_text(
        "from jax.ad_checkpoint import checkpoint_name\nT = checkpoint_name(1, 'mlp_out')\n"
    )
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\nH = checkpoint_name(1, 'attn_out')\n"
    )
    train = work / "train.py"
    train.write_text(
        'import jax\nimport modellib\nP = jax.checkpoint_policies.save_only_these_names("attn_out")\n'
    )
    reads: list[str] = []
    workspace = Workspace([work], Settings(select=("JAX112",)))
    monkeypatch.setattr(
        workspace, "read", lambda path, read=workspace.read: reads.append(str(path)) or read(path)
    )
    # The index reads files on disk directly where no buffer is open at them.
    monkeypatch.setattr(
        name_index, "read_file", lambda path, read=name_index.read_file: reads.append(str(path)) or read(path)
    )
    assert workspace.check_file(train) == []
    assert str(package_file) not in reads
    # A name the workspace does not tag: the package's tags are read, and they carry it.
    train.write_text(train.read_text().replace('"attn_out"', '"attn_out", "mlp_out"'))
    workspace.file_changed(train)
    assert workspace.check_file(train) == []
    assert str(package_file) in reads


def test_a_wrapper_tags_what_its_callers_pass(tmp_path):
    (tmp_path / "layers.py").write_text(
        textwrap.dedent("""
        from jax.ad_checkpoint import checkpoint_name


        def tag(x, name, suffix=""):
            return checkpoint_name(x, name + suffix)


        def named(x, label="default_label"):
            return tag(x, label)


        class Block:
            def apply(self, x, what):
                return tag(x, what)
    """)
    )
    (tmp_path / "model.py").write_text(
        textwrap.dedent("""
        from layers import Block, named, tag


        def forward(x):
            x = tag(x, "attn_out")
            x = tag(x, name="mlp_in")
            x = named(x)
            x = named(x, label="from_label")
            return Block().apply(x, "from_method")
    """)
    )
    train = """
import jax
import model

POLICY = jax.checkpoint_policies.save_only_these_names(
    "attn_out", "mlp_in", "default_label", "from_label", "from_method", "atn_out"
)
"""
    [finding] = jax112(train, tmp_path, "train.py")
    assert anchored_text(train, finding) == '"atn_out"'


# A kernel that tags the name its config is given (maxdiffusion's splash attention).
KERNEL = """
import dataclasses

from jax.ad_checkpoint import checkpoint_name


@dataclasses.dataclass
class Config:
    residual_name: str | None = None


def attention(x, config):
    if config.residual_name is not None:
        x = checkpoint_name(x, name=config.residual_name)
    return x


DEFAULT = Config(residual_name="context")
"""


def test_a_config_attribute_tags_what_code_assigns_to_it(tmp_path):
    (tmp_path / "kernel.py").write_text(textwrap.dedent(KERNEL))
    train = """
import jax
import kernel

POLICY = jax.checkpoint_policies.save_only_these_names("context", "contxt")
"""
    [finding] = jax112(train, tmp_path, "train.py")
    assert anchored_text(train, finding) == '"contxt"'


def test_the_name_flow_stops_once_the_names_asked_for_are_found(tmp_path, monkeypatch):
    # maxdiffusion's kernel tags `config.residual_checkpoint_name`; its attention layers pass the
    # name on through parameters, and its transformers write "self_attn": the files that quote
    # a name asked for are read first, and the layers are never parsed.
    (tmp_path / "kernel.py").write_text(textwrap.dedent(KERNEL))
    (tmp_path / "layers.py").write_text(
        textwrap.dedent("""
        from kernel import Config


        def make_config(residual_name=None):
            return Config(residual_name=residual_name)


        def layer_config():
            return make_config(residual_name=None)
    """)
    )
    (tmp_path / "model.py").write_text(
        'from kernel import Config\n\nSELF = Config(residual_name="self_attn")\n'
        'CROSS = Config(residual_name="cross_attn")\n'
    )
    sources: list[str] = []
    parse = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *args, **kwargs: sources.append(source) or parse(source, *args, **kwargs)
    )
    train = 'import jax\nP = jax.checkpoint_policies.save_only_these_names("self_attn", "cross_attn")\n'
    assert jax112(train, tmp_path, "train.py") == []
    assert any("cross_attn" in source for source in sources)
    assert not any("make_config" in source for source in sources)
    # A name no tag carries: every tag is followed to the end, the layers' too, and a typo found.
    sources.clear()
    [finding] = jax112(train.replace('"cross_attn"', '"cross_atn"'), tmp_path, "train.py")
    assert 'did you mean "cross_attn"?' in finding.message
    assert any("make_config" in source for source in sources)


def test_a_name_that_is_only_part_of_a_tagged_name_does_not_stop_the_name_flow(tmp_path):
    # The flow meets "attn" on its way to the f-string's "attn_out": were it to stop there, the
    # suffix unknown, the tag would be of the shape "attn.*", which carries "attn".
    (tmp_path / "layers.py").write_text(
        textwrap.dedent("""
        from jax.ad_checkpoint import checkpoint_name


        def tag(x, prefix, suffix):
            return checkpoint_name(x, f"{prefix}{suffix}")


        def model(x):
            return tag(x, "attn", "_out")
    """)
    )
    train = 'import jax\nP = jax.checkpoint_policies.save_only_these_names("attn")\n'
    [finding] = jax112(train, tmp_path, "train.py")
    assert 'did you mean "attn_out"?' in finding.message


@pytest.mark.parametrize(
    "tagging",
    [
        "checkpoint_name(x, make_name())",
        "checkpoint_name(x, NAMES[index])",
        "jax.tree.map(tag, x)",  # the wrapper is passed around: its callers are out of sight
        "tag(x, *names)",
        "Block()(x, 'called')",  # `__call__` is called implicitly: its callers are out of sight
    ],
)
def test_a_tag_whose_name_cannot_be_known_hides_every_name(tagging, tmp_path):
    code = f"""
import jax
from jax.ad_checkpoint import checkpoint_name


def tag(x, name):
    return checkpoint_name(x, name)


class Block:
    def __call__(self, x, what):
        return checkpoint_name(x, what)


def block(x, index, names):
    tag(x, "known")
    return {tagging}


f = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("known", "anything"))
"""
    assert jax112(code, tmp_path) == []


def test_nothing_is_reported_when_nothing_in_reach_tags_a_name(tmp_path):
    code = 'import jax\nPOLICY = jax.checkpoint_policies.save_only_these_names("attn_outt")\n'
    assert jax112(code, tmp_path) == []


def test_a_name_unlike_every_tagged_one_may_be_tagged_out_of_sight(tmp_path):
    """praxis 1.4.0's `SAVE_UNET_ALL_CONV` policy names conv_0, conv_1 and conv_out for UNet
    models that no released code holds; its transformer tags are in reach. Not a typo: silent."""
    tags = [
        "combined_qkv_proj",
        "query_proj",
        "key_proj",
        "value_proj",
        "logits",
        "context",
        "out_proj",
        "ffn2",
    ]
    code = (
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\n\n\ndef layer(x):\n"
        + "".join(f"    x = checkpoint_name(x, {tag!r})\n" for tag in tags)
        + "    return x\n\n\n"
    )
    code += 'UNET = jax.checkpoint_policies.save_only_these_names("conv_0", "conv_1", "conv_out")\n'
    code += 'QUANT = jax.checkpoint_policies.save_only_these_names("context", "qlhs", "qrhs", "lhs_scale", "rhs_scale")\n'
    assert jax112(code, tmp_path) == []
    typo = code.replace('"context", "qlhs"', '"contxt", "qlhs"')
    assert [anchored_text(typo, f) for f in jax112(typo, tmp_path)] == ['"contxt"']


def test_a_config_module_with_only_a_factory_call_is_checked_by_the_cli_and_cached(tmp_path):
    from tests.cli.runner import run_check

    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "config.py").write_text(
        "from jax import checkpoint_policies as cp\n\nPOLICY = cp.save_only_these_names('attn_outt')\n"
    )
    for _ in range(2):  # the second run reads the result cache
        done = run_check(tmp_path, "--output-format", "concise", ".")
        assert done.returncode == 1, done.stderr
        assert "config.py:3:35: JAX112" in done.stdout, done.stdout
    # Its findings depend on the tags of every file: an edit of the model is seen.
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL).replace('"attn_out"', '"attn_outt"'))
    done = run_check(tmp_path, "--output-format", "concise", ".")
    assert (done.returncode, done.stdout.strip()) == (0, "All checks passed!"), done.stdout + done.stderr


def test_the_index_follows_edits(tmp_path):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    train = tmp_path / "train.py"
    train.write_text('import jax\nP = jax.checkpoint_policies.save_only_these_names("attn_outt")\n')
    workspace = Workspace([tmp_path])
    assert [f.code for f in workspace.check_file(train)] == ["JAX112"]
    workspace.set_document(tmp_path / "model.py", textwrap.dedent(MODEL).replace('"attn_out"', '"attn_outt"'))
    assert workspace.affected_files(tmp_path / "model.py") == {train}
    assert workspace.check_file(train) == []
    workspace.close_document(tmp_path / "model.py")
    assert [f.code for f in workspace.check_file(train)] == ["JAX112"]


def test_names_written_in_tags_are_known_without_following_the_other_tags(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "layers.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\n\n\ndef tag(x, name):\n    return checkpoint_name(x, name)\n"
    )
    (tmp_path / "callers.py").write_text("from layers import tag\n\nY = tag(1, 'mlp_out')\n")
    train = tmp_path / "train.py"
    train.write_text('import jax\nP = jax.checkpoint_policies.save_only_these_names("attn_out")\n')
    reads: list[str] = []
    workspace = Workspace([tmp_path], Settings(select=("JAX112",)))
    monkeypatch.setattr(
        workspace,
        "load",
        lambda path, *args, load=workspace.load, **kwargs: (
            reads.append(str(path)) or load(path, *args, **kwargs)
        ),
    )
    assert workspace.check_file(train) == []
    assert str(tmp_path / "layers.py") not in reads
    # A name no string in a tag call carries: the names the tags are given are followed.
    train.write_text(train.read_text().replace('"attn_out"', '"attn_out", "mlp_out"'))
    workspace.file_changed(train)
    assert workspace.check_file(train) == []
    assert str(tmp_path / "layers.py") in reads


def test_a_name_written_in_a_tag_stops_being_carried_when_the_tag_changes(tmp_path):
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    train = tmp_path / "train.py"
    train.write_text('import jax\nP = jax.checkpoint_policies.save_only_these_names("attn_out")\n')
    workspace = Workspace([tmp_path])
    assert workspace.check_file(train) == []
    workspace.set_document(tmp_path / "model.py", textwrap.dedent(MODEL).replace('"attn_out"', '"attn_outt"'))
    assert workspace.affected_files(tmp_path / "model.py") == {train}
    assert [f.code for f in workspace.check_file(train)] == ["JAX112"]


def test_an_edit_reads_again_only_the_tags_of_the_file_edited(tmp_path, monkeypatch):
    # A long editing session of a file that tags and names: the names another file's tags
    # carry stay proven, and that file is not parsed for its tags again on every edit.
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    edited = tmp_path / "train.py"
    text = textwrap.dedent(MODEL).replace('"attn_out"', '"mlp_out"') + (
        'P = jax.checkpoint_policies.save_only_these_names("attn_out", "mlp_out")\n'
    )
    workspace = Workspace([tmp_path], Settings(select=("JAX112",)))
    loads: list[str] = []
    monkeypatch.setattr(
        workspace,
        "load",
        lambda path, *args, load=workspace.load, **kwargs: (
            loads.append(str(path)) or load(path, *args, **kwargs)
        ),
    )
    workspace.set_document(edited, text)
    assert workspace.check_file(edited) == []
    assert str(tmp_path / "model.py") in loads
    loads.clear()
    for typed in ("  # a comment", ""):
        workspace.set_document(edited, text.replace("return jnp.sin(h)", "return jnp.sin(h)" + typed))
        assert workspace.check_file(edited) == []
    assert str(tmp_path / "model.py") not in loads
    # Its own tag edited away, the name it carried is reported.
    workspace.set_document(edited, text.replace('(x), "mlp_out")', '(x), "mlp_outt")'))
    assert [f.code for f in workspace.check_file(edited)] == ["JAX112"]


def _sources_parsed_for_a_typo_of_attn_out(tmp_path, monkeypatch) -> list[str]:
    """The texts parsed while a module of `tmp_path` that names "atn_out" is checked, which
    JAX112 reports as a typo of the "attn_out" its tag carries."""
    sources: list[str] = []
    parse = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *args, **kwargs: sources.append(source) or parse(source, *args, **kwargs)
    )
    train = 'import jax\nP = jax.checkpoint_policies.save_only_these_names("atn_out")\n'
    [finding] = jax112(train, tmp_path, "train.py")
    assert 'did you mean "attn_out"?' in finding.message
    return sources


def test_a_file_of_tags_is_parsed_only_where_its_tags_and_the_names_they_follow_are(tmp_path, monkeypatch):
    (tmp_path / "layers.py").write_text(
        textwrap.dedent("""
        from jax.ad_checkpoint import checkpoint_name


        def tag(x, name):
            return checkpoint_name(x, name)


        def unrelated_before(x):
            return x + 1


        def model(x):
            return tag(x, "attn_out")


        def unrelated_after(x):
            return x * 2
    """)
    )
    sources = _sources_parsed_for_a_typo_of_attn_out(tmp_path, monkeypatch)
    assert any("def model" in source for source in sources)
    assert not any("unrelated_" in source for source in sources)


def test_of_a_class_of_tags_only_the_method_that_tags_is_parsed_for_the_names(tmp_path, monkeypatch):
    # A class that holds tags and no site (maxtext's attention layers): the names index reads
    # the tags of the method that holds them; its other methods stay text.
    (tmp_path / "layers.py").write_text(
        textwrap.dedent("""
        from jax.ad_checkpoint import checkpoint_name


        class Attention:
            heads = 4

            def project(self, x):
                return checkpoint_name(x * 2, "attn_out")

            def unrelated(self, x):
                return x + 1

            def also_unrelated(self, x):
                return x * 3
    """)
    )
    sources = _sources_parsed_for_a_typo_of_attn_out(tmp_path, monkeypatch)
    assert any("def project" in source for source in sources)
    assert not any("unrelated" in source for source in sources)


@pytest.mark.parametrize(
    ("imported", "called"), [("checkpoint_name", "checkpoint_name"), ("checkpoint_name as cn", "cn")]
)
def test_a_function_holding_only_tags_waits_in_a_check_and_the_index_still_reads_its_tags(
    tmp_path, imported, called
):
    # The model file holds a site: its check parses it as far as the site needs, and the block
    # that only tags a value waits. The index, asked for the tags, parses and walks the block.
    # Under another name (`cn`), bound by a line that holds only a tag, the lines naming it are
    # walked for the index, not kept for the check.
    (tmp_path / "model.py").write_text(
        textwrap.dedent(f"""
        import jax
        from jax.ad_checkpoint import {imported}


        def block(x):
            return {called}(x * 2, "attn_out")


        def wrapped(f):
            return jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)
    """)
    )
    workspace = Workspace([tmp_path])
    module = workspace.load(tmp_path / "model.py", only_if_site=True)
    assert module is not None and module.unwalked_tags
    assert not any(isinstance(s, ast.FunctionDef) and s.name == "block" for s in module.source.tree.body)
    calls_of_the_check = list(module.calls)
    tags = workspace.checkpoint_names().tags()
    assert tags.carries("attn_out") and not module.unwalked_tags
    assert module.calls == calls_of_the_check  # what the rules read is as the check left it
    train = 'import jax\nP = jax.checkpoint_policies.save_only_these_names("atn_out")\n'
    [finding] = jax112(train, tmp_path, "train.py")
    assert 'did you mean "attn_out"?' in finding.message

"""The whole-tree check: the result cache (what invalidates an entry), cross-module findings, the
named files checked with their users (the forked processes: test_batch_processes)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from jax_lsp.core.text import source
from jax_lsp.engine import Workspace, batch, module_cache
from jax_lsp.engine.batch import FEW_FILES, PARALLEL_MIN_FILES, check_paths
from jax_lsp.engine.project_files import ProjectFiles
from tests.cli.runner import run_check

BROKEN = 'def p(prim, *a, **k):\n    if prim.name == "sin":\n        return True\n'
FIXED = BROKEN + "    return False\n"
USER = "import jax\nfrom policies import p\nf = jax.checkpoint(lambda x: x, policy=p)\n"


def _tree(tmp_path: Path, users: int = 1) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "policies.py").write_text(BROKEN)
    for n in range(users):
        (root / f"user{n}.py").write_text(USER)
    (root / "local.py").write_text(
        "import jax\nf = jax.checkpoint(lambda x: x, policy=lambda prim, *a, **k: None)\n"
    )
    (root / "plain.py").write_text("x = 1\n")
    return root


def _check(root: Path, cache: Path | None, jobs: int = 1) -> dict[str, list[tuple[str, int]]]:
    results = check_paths(Workspace([root]), [root], cache, jobs)
    return {Path(path).name: [(f.code, f.span.start.line) for f in found] for path, found in results.items()}


def test_an_unchanged_tree_is_answered_from_the_cache(tmp_path, parses):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    first = _check(root, cache)
    assert first == {"policies.py": [("JAX101", 0)], "local.py": [("JAX101", 1)]}
    assert sorted(parses) == ["local.py", "policies.py", "user0.py"]
    parses.clear()
    assert _check(root, cache) == first
    assert parses == []


def test_a_file_of_unchanged_time_and_size_is_not_read_again(tmp_path, monkeypatch):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    first = _check(root, cache)
    reads = _reads_for_digests(monkeypatch)
    assert _check(root, cache) == first
    assert reads == []
    local = root / "local.py"
    before = local.stat()
    local.write_text(local.read_text().replace("None", "True"))  # the same size
    os.utime(local, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert _check(root, cache) == {"policies.py": [("JAX101", 0)]}
    assert reads == ["local.py"]


def _reads_for_digests(monkeypatch) -> list[str]:
    """The files read for their digests from now on (by `_Digests.of_file`; the analysis reads
    the files it checks again)."""
    reads: list[str] = []
    real_read, real_of_file = ProjectFiles.read, batch._Digests.of_file
    digesting = []

    def read(self, path):
        if digesting:
            reads.append(Path(path).name)
        return real_read(self, path)

    def of_file(self, path, digest_always=False):
        digesting.append(path)
        try:
            return real_of_file(self, path, digest_always)
        finally:
            digesting.pop()

    monkeypatch.setattr(ProjectFiles, "read", read)
    monkeypatch.setattr(batch._Digests, "of_file", of_file)
    return reads


def test_changing_a_module_others_depend_on_rechecks_them(tmp_path, parses):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    _check(root, cache)
    (root / "policies.py").write_text(FIXED)
    parses.clear()
    assert _check(root, cache) == {"local.py": [("JAX101", 1)]}
    assert "user0.py" in parses  # its site uses the changed policy
    # local.py's lambda is a callable policy: whether any file turns jax_remat3 on decides
    # JAX115 there (jax 0.10), so it depends on every file, as a check asking the tags does.
    assert "local.py" in parses
    (root / "policies.py").write_text(BROKEN)
    assert _check(root, cache)["policies.py"] == [("JAX101", 0)]


def test_a_new_module_or_other_settings_start_a_new_store(tmp_path, parses):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    _check(root, cache)
    (root / "extra.py").write_text("y = 2\n")
    parses.clear()
    _check(root, cache)
    assert "user0.py" in parses  # a new file can change what an import resolves to
    ws = Workspace([root], settings=Workspace([root]).settings.merged(ignore=("JAX101",)))
    assert check_paths(ws, [root], cache, 1) == {}


def test_a_corrupt_cache_is_ignored(tmp_path):
    root, cache = _tree(tmp_path), tmp_path / "cache"
    expected = _check(root, cache)
    for store in cache.glob("*.json"):
        store.write_text("{not json")
    assert _check(root, cache) == expected


def test_the_cli_keeps_its_cache_in_the_project_and_no_cache_writes_none(tmp_path):
    root = _tree(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    done = run_check(root, "--no-cache", "--output-format", "json")
    assert done.returncode == 1 and not (root / ".jax-lsp-cache").exists()
    for _ in range(2):
        done = run_check(root, "--output-format", "json")
        assert sorted(f["path"] for f in json.loads(done.stdout)) == ["local.py", "policies.py"]
    assert (root / ".jax-lsp-cache" / ".gitignore").read_text().endswith("*\n")


def test_part_of_a_project_is_checked_together_with_the_users_of_its_policies(tmp_path):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "policies.py").write_text(BROKEN)
    (root / "app" / "train.py").write_text(USER.replace("from policies", "from pkg.policies"))
    done = run_check(root / "pkg", "policies.py", "--output-format", "json")  # as pre-commit does
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [("policies.py", "JAX101")]
    assert not (root / ".jax-lsp-cache").exists()  # a few files: checked without the cache
    for n in range(FEW_FILES):  # a folder of many files: checked with the whole project
        (root / "pkg" / f"module{n}.py").write_text("x = 1\n")
    done = run_check(root / "pkg", ".", "--output-format", "json")  # as from inside the package
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [("policies.py", "JAX101")]
    assert (root / ".jax-lsp-cache").exists()


def test_a_batch_finds_and_reads_the_files_under_its_roots_once(tmp_path):
    from jax_lsp.core.packages import read_file

    root, outside = tmp_path / "proj", tmp_path / "site-packages"
    root.mkdir()
    outside.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (outside / "lib.py").write_text("y = 1\n")
    workspace = Workspace([root])
    with workspace.unchanging():
        assert read_file(str(root / "a.py")) == b"x = 1\n"
        assert workspace.python_files() == [str(root / "a.py")]
        (root / "a.py").write_text("x = 2\n")
        (root / "b.py").write_text("")
        assert read_file(str(root / "a.py")) == b"x = 1\n"  # as first read: nothing changes meanwhile
        assert workspace.python_files() == [str(root / "a.py")]
        assert read_file(str(outside / "lib.py")) == b"y = 1\n"
        (outside / "lib.py").write_text("y = 2\n")
        assert read_file(str(outside / "lib.py")) == b"y = 2\n"  # packages: read as they are
    assert read_file(str(root / "a.py")) == b"x = 2\n"
    assert workspace.python_files() == [str(root / "a.py"), str(root / "b.py")]


def test_a_process_parses_a_module_of_tags_once_for_its_check_and_the_tags(tmp_path, monkeypatch):
    """The largest files go to one process first: the module writing a tag is checked, then a
    site naming that tag asks for the tags. The process kept the module: not parsed again (in
    one process alike)."""
    root = tmp_path / "proj"
    root.mkdir()
    tagger = 'import jax\nfrom jax.ad_checkpoint import checkpoint_name\n\n\ndef block(x):\n    return checkpoint_name(jax.numpy.sin(x), "attn_out")\n\n\nf = jax.checkpoint(block)\n'
    (root / "tagger.py").write_text(tagger + "# padding\n" * 200)  # the largest: checked first
    names = 'import jax\nf = jax.checkpoint(abs, policy=jax.checkpoint_policies.save_only_these_names("attn_out"))\n'
    (root / "user.py").write_text(names + "# padding\n" * 100)
    for n in range(PARALLEL_MIN_FILES):
        (root / f"site{n}.py").write_text("import jax\nf = jax.checkpoint(abs)\n")  # enough for processes
    log = tmp_path / "parsed.log"
    real, real_partially = source.parse_bytes, module_cache._parse_for_sites

    def note(path: str) -> None:  # in whichever process parses: appended whole
        with open(log, "a") as written:
            written.write(Path(path).name + "\n")

    def counting(data: bytes, path: str, *args, **kwargs):
        note(path)
        return real(data, path, *args, **kwargs)

    def counting_partially(data: bytes, path: str):
        found = real_partially(data, path)
        if found is not None:
            note(path)
        return found

    monkeypatch.setattr(source, "parse_bytes", counting)
    monkeypatch.setattr(module_cache, "_parse_for_sites", counting_partially)
    for jobs in (2, 1):
        log.write_text("")
        assert _check(root, None, jobs) == {}  # the tag carries the name: no JAX112
        assert log.read_text().split().count("tagger.py") == 1


def _names_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A package that tags "attn_out" (on a search path of its own), and a workspace whose
    policy names "attn_outt", with more files to check before and after it."""
    site = tmp_path / "site"
    (site / "modellib").mkdir(parents=True)
    (site / "modellib" / "__init__.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\nA = checkpoint_name(1, 'attn_out')\n"
    )
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a_local.py").write_text(
        "import jax\nf = jax.checkpoint(lambda x: x, policy=lambda prim, *a, **k: None)\n"
    )
    (root / "train.py").write_text(
        "import jax\nimport modellib\n"
        'POLICY = jax.checkpoint_policies.save_only_these_names("attn_outt")\n'
        "f = jax.checkpoint(lambda x: x, policy=POLICY)\n"
    )
    return site, root


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_check_allowed_two_processes_reads_the_packages_tags_beside_from_its_start(
    tmp_path, monkeypatch, jobs
):
    from jax_lsp.engine import batch

    site, root = _names_tree(tmp_path)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    workspace = Workspace([root])
    events: list[str] = []
    aside, check_own = workspace.aside, batch.check_own
    monkeypatch.setattr(workspace, "aside", lambda work: events.append("aside") or aside(work))
    monkeypatch.setattr(
        batch, "check_own", lambda *a, **k: events.append(Path(a[1]).name) or check_own(*a, **k)
    )
    found = batch.check_tree(workspace, workspace.python_files(), jobs=jobs)
    codes = {Path(path).name: sorted(f.code for f in findings) for path, findings in found.items()}
    assert codes == {"a_local.py": ["JAX101"], "train.py": ["JAX112"]}
    # One process reads them when the first file that names a checkpoint name asks.
    assert events == (
        ["aside", "a_local.py", "train.py"] if jobs > 1 else ["a_local.py", "train.py", "aside"]
    )


def test_no_packages_tags_are_read_ahead_where_no_file_names_a_checkpoint_name(tmp_path, monkeypatch):
    from jax_lsp.engine import batch

    root = _tree(tmp_path)
    workspace = Workspace([root])
    events: list[str] = []
    aside = workspace.aside
    monkeypatch.setattr(workspace, "aside", lambda work: events.append("aside") or aside(work))
    batch.check_tree(workspace, workspace.python_files(), jobs=2)
    assert events == []


def test_no_packages_tags_are_read_where_the_workspace_quotes_each_name_in_a_tagging_file(
    tmp_path, monkeypatch
):
    from jax_lsp.engine import batch

    site, root = _names_tree(tmp_path)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    (root / "model.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\nB = checkpoint_name(1, 'attn_outt')\n"
    )
    workspace = Workspace([root])
    events: list[str] = []
    aside = workspace.aside
    monkeypatch.setattr(workspace, "aside", lambda work: events.append("aside") or aside(work))
    found = batch.check_tree(workspace, workspace.python_files(), jobs=2)
    assert {Path(path).name for path in found} == {"a_local.py"} and events == []


@pytest.mark.parametrize("reached", [False, True], ids=["its own site", "reached from a user"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_factory_of_names_left_uncalled_has_the_packages_tags_read_beside(
    tmp_path, monkeypatch, jobs, reached
):
    """JAX107's fix lists every tag in reach, the installed packages' too: a check allowed two
    processes reads them beside from its first file, also for a module whose policies another
    file's site reaches (checked with those uses after every file)."""
    from jax_lsp.engine import batch

    site, root = _names_tree(tmp_path)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    uncalled = "jax.checkpoint_policies.save_only_these_names"
    if reached:  # tuna's road: a table of members by name, a helper, a Flax remat given its result
        (root / "utils.py").write_text(
            "import jax\n\n"
            f"checkpoint_policies = dict(\n    save_only_these_names={uncalled},\n)\n\n\n"
            "def get_gradient_checkpoint_policy(name):\n    return checkpoint_policies[name]\n"
        )
        (root / "train.py").write_text(
            "import flax.linen as nn\nimport modellib\n\nfrom utils import get_gradient_checkpoint_policy\n\n\n"
            "class Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return x\n\n\n"
            "class Model(nn.Module):\n    grad_ckpt: str = 'save_only_these_names'\n\n"
            "    def setup(self):\n        policy = get_gradient_checkpoint_policy(self.grad_ckpt)\n"
            "        self.block = nn.remat(Block, policy=policy)()\n"
        )
    else:
        (root / "train.py").write_text(
            f"import jax\nimport modellib\nf = jax.checkpoint(lambda x: x, policy={uncalled})\n"
        )
    workspace = Workspace([root])
    events: list[str] = []
    aside = workspace.aside
    monkeypatch.setattr(workspace, "aside", lambda work: events.append("aside") or aside(work))
    found = batch.check_tree(workspace, workspace.python_files(), jobs=jobs)
    [finding] = found[str(root / ("utils.py" if reached else "train.py"))]
    [fix] = finding.fixes
    assert finding.code == "JAX107" and fix.title.endswith('the names tagged in reach: "attn_out"')
    assert events == (["aside"] if jobs > 1 else [])

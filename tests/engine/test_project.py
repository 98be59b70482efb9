"""One rule for the project root and the folders imports come from (check, trace, server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jax_lsp.engine.project import import_folders, import_root, package_root, project_root, src_folders
from tests.cli.runner import REPO


def _tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "research" / "proj" / "pkg" / "sub"
    pkg.mkdir(parents=True)
    for folder in (pkg, pkg.parent):
        (folder / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("")
    return pkg / "mod.py"


def test_project_root_prefers_workspace_folders_then_markers_then_packages(tmp_path: Path):
    module = _tree(tmp_path)
    assert project_root(module) == tmp_path / "research" / "proj"  # no marker: above the outermost package
    (tmp_path / ".git").mkdir()
    assert project_root(module) == tmp_path
    assert project_root(module, [tmp_path, tmp_path / "research"]) == tmp_path / "research"
    assert project_root(tmp_path / "research") == tmp_path


def test_imports_are_searched_above_the_outermost_package_and_in_src(tmp_path: Path):
    module = _tree(tmp_path)
    proj = tmp_path / "research" / "proj"
    assert package_root(module) == proj
    assert import_root(module, []) == proj
    src = src_folders([tmp_path], ["."])
    assert import_folders(module, src, tmp_path) == [tmp_path, proj, tmp_path / "research"]
    assert src_folders([tmp_path], ["research", "missing"]) == [tmp_path / "research"]
    assert src_folders([tmp_path], []) == [tmp_path]  # the default (".", "src"): src/ does not exist


def test_a_file_outside_every_root_resolves_from_its_own_project(tmp_path: Path):
    """An editor with no workspace folder (a single file opened): imports resolve from the
    file's project as they would with the folder open."""
    from jax_lsp.engine import Workspace

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mono'\n")
    pkg = tmp_path / "research" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "policies.py").write_text("import jax\nchosen = jax.checkpoint_policies.save_only_these_names\n")
    model = pkg / "model.py"
    model.write_text(
        "import jax\nfrom pkg.policies import chosen\nf = jax.checkpoint(lambda x: x, policy=chosen)\n"
    )
    assert [(f.code, f.span.start.line) for f in Workspace([]).check_file(model)] == [("JAX107", 2)]


def test_users_are_found_by_their_imports_without_parsing(tmp_path: Path):
    from jax_lsp.engine.users import Exported, UserSearch

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    policies = pkg / "policies.py"
    files = {
        pkg / "__init__.py": b"from pkg.policies import p as chosen\n",
        pkg / "sibling.py": b"from .policies import p\nf = jax.checkpoint(g, policy=p)\n",
        pkg / "whole.py": b"from pkg import policies\nf = jax.checkpoint(g, policy=policies.p)\n",
        tmp_path / "star.py": b"from pkg.policies import *\nf = jax.checkpoint(g, policy=p)\n",
        tmp_path / "aliased.py": b"from pkg import (\n    chosen,\n)\nf = jax.checkpoint(g, policy=chosen)\n",
        tmp_path / "dotted.py": b"import pkg.policies as P\nf = jax.checkpoint(g, policy=P.p)\n",
        tmp_path / "other_name.py": b"from pkg.policies import helper\nf = jax.checkpoint(g, policy=q)\n",
        pkg / "inner.py": b"from . import chosen\nf = jax.checkpoint(g, policy=chosen)\n",
        tmp_path / "no_site.py": b"from pkg.policies import p\n",
        tmp_path
        / "no_policy_site.py": b"from pkg.policies import p\nq = jax.checkpoint_policies.dots_saveable\n",
        tmp_path / "other_module.py": b"from other.policies import p\nf = jax.checkpoint(g, policy=p)\n",
    }
    named = [Exported("pkg.policies", policies, frozenset({"p"}))]
    packages = {path: data for path, data in files.items() if path.name == "__init__.py"}
    search = UserSearch(
        packages, named, lambda path: path.parent.name if path.name == "__init__.py" else path.stem
    )
    found = [path for path, data in files.items() if search.is_user(path, data)]
    assert sorted(p.name for p in found) == [
        "aliased.py",
        "dotted.py",
        "inner.py",  # names neither module: found as a module of the package that re-exports
        "sibling.py",
        "star.py",
        "whole.py",
    ]


def test_users_are_told_by_the_words_they_write_before_their_imports_are_read(tmp_path: Path):
    """A user writes the name of a named module, or one of the names a package re-exports of
    it; a file that writes neither is left out by a byte search (what reading its imports would
    conclude too). In a named package's folder, `from . import p` names it by its place."""
    from jax_lsp.engine.users import Exported, UserSearch

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    named = [Exported("pkg", pkg / "__init__.py", frozenset({"keep_dots", "helper"}))]
    packages = {tmp_path / "api" / "__init__.py": b"from pkg import keep_dots as chosen\n"}
    search = UserSearch(packages, named, lambda path: path.parent.name)
    site = b"f = jax.checkpoint(g, policy=chosen)\n"
    writes_nothing = (
        tmp_path / "other.py",
        b"import api\nmine = api.unrelated\nf = jax.checkpoint(g, policy=mine)\n",
    )
    assert not search.writes_words(*writes_nothing)
    assert not search.reads_targets(*writes_nothing)
    users = {
        tmp_path / "through_api.py": b"import api\nchosen = api.chosen\n" + site,
        tmp_path / "direct.py": b"from pkg import keep_dots as chosen\n" + site,
        pkg / "inner.py": b"from . import helper as mine\nf = jax.checkpoint(g, policy=mine)\n",
    }
    assert not search.writes_words(tmp_path / "inner.py", users[pkg / "inner.py"])  # its place decides
    for path, data in users.items():
        assert search.writes_words(path, data), path.name
        assert search.is_user(path, data), path.name


def test_users_found_with_a_forked_process_are_those_found_alone(tmp_path: Path):
    from jax_lsp.engine import Workspace

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.policies import p as chosen\n")
    (tmp_path / "pkg" / "policies.py").write_text("def p(prim, *a, **k):\n    return True\n")
    for n in range(30):  # users and not, spread over what each process reads
        uses = "from pkg import chosen\nf = jax.checkpoint(g, policy=chosen)\n" if n % 4 == 0 else "x = 1\n"
        (tmp_path / f"m{n}.py").write_text(uses)
    workspace = Workspace([tmp_path])
    alone = list(workspace.users_of([tmp_path / "pkg" / "policies.py"], jobs=1))
    assert sorted(p.name for p in alone) == sorted(f"m{n}.py" for n in range(0, 30, 4))
    # In a fresh interpreter: this one has threads (JAX's), and such a process is never forked.
    forked = subprocess.run(
        [sys.executable, "-c", _USERS_WITH_JOBS, str(tmp_path), "3"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(forked.stdout) == [str(p) for p in alone]


_USERS_WITH_JOBS = """
import json, sys
from pathlib import Path
from jax_lsp.engine import Workspace
from jax_lsp.engine.forked import _can_fork

assert _can_fork()
root = Path(sys.argv[1])
print(json.dumps([str(p) for p in Workspace([root]).users_of([root / "pkg" / "policies.py"], jobs=int(sys.argv[2]))]))
"""


# What a pipe holds before its writer waits (Linux's default).
PIPE_BYTES = 65536


def test_the_forked_reader_names_the_users_and_never_waits_for_its_reader(tmp_path: Path):
    """The forked process that reads the project for `check FILE` sent every candidate's bytes,
    and waited on the pipe while this process parsed the named module (0.37 s on axlearn's
    `utils.py`, issue 48): it sends their names, which a pipe holds, and the policy the named
    file defines is still found broken where a large module elsewhere uses it."""
    import marshal

    from jax_lsp.engine.users import site_candidates
    from tests.cli.runner import run_check

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "policies.py").write_text(
        "def p(prim, *avals, **params):\n    if prim.name == 'sin':\n        return True\n"
    )
    padding = "x = [1, 2, 3]  # a large module\n" * 5000
    users = [tmp_path / f"model{n}.py" for n in range(20)]
    for user in users:
        user.write_text(
            f"import jax\nfrom pkg.policies import p\n{padding}f = jax.checkpoint(abs, policy=p)\n"
        )
    names = sorted(str(path) for path in tmp_path.rglob("*.py"))
    sent = list(site_candidates(names))
    assert sorted(name for batch in sent for name in batch) == sorted(map(str, users))
    assert (
        sum(len(marshal.dumps(batch)) for batch in sent) < PIPE_BYTES < sum(u.stat().st_size for u in users)
    )
    done = run_check(tmp_path, "pkg/policies.py", "--output-format", "json", "--no-cache")
    assert [(f["path"], f["code"]) for f in json.loads(done.stdout)] == [("pkg/policies.py", "JAX101")]


def test_an_edit_of_a_buffer_keeps_where_imports_lead_and_a_buffer_opened_does_not(tmp_path, monkeypatch):
    from jax_lsp.engine import Workspace

    policies = "import jax\nchosen = jax.checkpoint_policies.save_only_these_names\n"
    (tmp_path / "policies.py").write_text(policies)
    model = tmp_path / "model.py"
    text = "import jax\nfrom policies import chosen\nf = jax.checkpoint(lambda x: x, policy=chosen)\n"
    workspace = Workspace([tmp_path])
    searched: list[str] = []
    search = workspace.imports._find_module_file
    monkeypatch.setattr(
        workspace.imports,
        "_find_module_file",
        lambda name, folders: searched.append(name) or search(name, folders),
    )
    workspace.set_document(model, text)
    assert [f.code for f in workspace.check_file(model)] == ["JAX107"]
    assert "policies" in searched
    searched.clear()
    for typed in ("# typing\n", ""):
        workspace.set_document(model, text + typed)
        assert [f.code for f in workspace.check_file(model)] == ["JAX107"]
    assert "policies" not in searched
    # A module that is only a buffer, opened after a name was looked for in vain: found now.
    text = text.replace("from policies", "from drafted")
    workspace.set_document(model, text)
    assert workspace.check_file(model) == []
    workspace.set_document(tmp_path / "drafted.py", policies)
    assert [f.code for f in workspace.check_file(model)] == ["JAX107"]

"""Which files `jax-lsp check` visits, and how it writes them back."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from jax_lsp.engine import files


def _touch(root: Path, *relative: str) -> None:
    for rel in relative:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _names(found: list[Path], root: Path) -> list[str]:
    return sorted(p.resolve().relative_to(root.resolve()).as_posix() for p in found)


def test_walk_skips_tool_folders_and_virtualenvs(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "a.py",
        "pkg/b.py",
        "pkg/notes.txt",
        ".git/hooks/c.py",
        "node_modules/d.py",
        "build/e.py",
        "dist/f.py",
        "pkg/__pycache__/g.py",
        ".tox/h.py",
        ".mypy_cache/i.py",
        ".venv/j.py",
        "venv/k.py",
        "x.egg-info/l.py",
        "my-env/lib/m.py",
    )
    (tmp_path / "my-env" / "pyvenv.cfg").write_text("home = /usr\n")
    assert _names(files.discover([tmp_path]), tmp_path) == ["a.py", "pkg/b.py"]


def test_exclude_globs_match_names_and_paths_relative_to_the_config(tmp_path: Path) -> None:
    _touch(tmp_path, "keep.py", "gen_pb2.py", "legacy/old.py", "src/legacy/kept.py", "src/third/x.py")
    found = files.discover([tmp_path], ("*_pb2.py", "legacy/", "src/third"), base=tmp_path)
    # "legacy/" is a name pattern: it drops every folder called legacy, at any depth.
    assert _names(found, tmp_path) == ["keep.py"]
    found = files.discover([tmp_path], ("src/*",), base=tmp_path)
    assert _names(found, tmp_path) == ["gen_pb2.py", "keep.py", "legacy/old.py"]


def test_a_file_named_explicitly_is_always_checked(tmp_path: Path) -> None:
    _touch(tmp_path, "build/gen.py", "skip_me.py")
    found = files.discover(
        [tmp_path / "build" / "gen.py", tmp_path / "skip_me.py"], ("skip_me.py",), tmp_path
    )
    assert _names(found, tmp_path) == ["build/gen.py", "skip_me.py"]


def test_duplicates_are_dropped_and_the_order_is_stable(tmp_path: Path) -> None:
    _touch(tmp_path, "b.py", "a.py")
    found = files.discover([tmp_path, tmp_path / "a.py", tmp_path])
    assert _names(found, tmp_path) == ["a.py", "b.py"] and found == sorted(found)


def test_symlinked_folders_are_not_followed(tmp_path: Path) -> None:
    _touch(tmp_path, "pkg/a.py")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    assert _names(files.discover([tmp_path]), tmp_path) == ["pkg/a.py"]


def test_discover_resolved_gives_what_path_resolve_gives(tmp_path: Path) -> None:
    _touch(tmp_path, "real/pkg/a.py", "real/b.py", "elsewhere/c.py")
    os.symlink(tmp_path / "real", tmp_path / "linked")  # a folder reached through a symlink
    os.symlink(tmp_path / "elsewhere" / "c.py", tmp_path / "real" / "c.py")  # a symlinked file
    named = [tmp_path / "linked", tmp_path / "linked" / "pkg" / ".." / "b.py", tmp_path / "real" / "pkg"]
    found = files.discover(named)
    assert [str(p.resolve()) for p in found] == files.discover_resolved(named)
    assert _names(found, tmp_path) == ["elsewhere/c.py", "real/b.py", "real/pkg/a.py"]


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(files.MissingPathError, match="nope.py"):
        files.discover([tmp_path / "nope.py"])


@pytest.mark.parametrize(
    "data",
    [
        b"x = 1\ny = 2\n",
        b"x = 1\r\ny = 2\r\n",
        b"\xef\xbb\xbfx = '\xc3\xa9'\r\n",
        b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
        b"x = 1\ry = 2\r",
        b"x = 1",
    ],
)
def test_decode_then_encode_gives_back_the_same_bytes(data: bytes) -> None:
    source = files.decode(data)
    assert "\r" not in source.text
    assert files.encode(source, source.text) == data


def test_new_lines_take_the_file_line_endings_and_encoding() -> None:
    source = files.decode(b"\xef\xbb\xbf# -*- coding: utf-8 -*-\r\nx = 1\r\n")
    assert files.encode(source, source.text + "y = 'é'\n").endswith(b"x = 1\r\ny = '\xc3\xa9'\r\n")
    assert files.encode(source, source.text).startswith(b"\xef\xbb\xbf")


def test_undecodable_bytes_are_refused() -> None:
    with pytest.raises(files.UndecodableError):
        files.decode(b"x = '\xff\xfe'\n")


def test_write_atomic_keeps_permissions_and_writes_through_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_bytes(b"old\n")
    target.chmod(0o751)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    files.write_atomic(link, b"new\n")
    assert link.is_symlink() and target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "real.py"]  # no temp left


def test_write_atomic_leaves_the_file_whole_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    with pytest.raises(TypeError):
        files.write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_what_git_ignores_is_skipped_unless_named(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    _touch(tmp_path, "a.py", "out/b.py", "pkg/c_gen.py", "pkg/d.py", "pkg/out/e.py")
    (tmp_path / ".gitignore").write_text("/out/\n*_gen.py\n")
    assert _names(files.discover([tmp_path]), tmp_path) == ["a.py", "pkg/d.py", "pkg/out/e.py"]
    assert _names(files.discover([tmp_path / "pkg"]), tmp_path) == ["pkg/d.py", "pkg/out/e.py"]
    # An ignored folder named on the command line is checked.
    assert _names(files.discover([tmp_path / "out"]), tmp_path) == ["out/b.py"]
    assert _names(files.discover([tmp_path / "pkg" / "c_gen.py"]), tmp_path) == ["pkg/c_gen.py"]


def _git_runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The folders `git` is started in from now on (each run answers: nothing ignored)."""
    runs: list[object] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        assert command[0] == "git"
        runs.append(kwargs["cwd"])
        return subprocess.CompletedProcess(command, 0, b"", b"")

    monkeypatch.setattr(subprocess, "run", run)
    return runs


def test_git_is_not_started_outside_a_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _touch(tmp_path, "project/pkg/a.py")
    runs = _git_runs(monkeypatch)
    assert _names(files.discover([tmp_path / "project"]), tmp_path) == ["project/pkg/a.py"]
    assert runs == []


@pytest.mark.parametrize("git_is_a_file", [False, True])  # a worktree's or submodule's .git is a file
def test_git_is_asked_in_a_work_tree_from_any_folder_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_is_a_file: bool
) -> None:
    _touch(tmp_path, "project/pkg/a.py")
    if git_is_a_file:
        (tmp_path / ".git").write_text("gitdir: /elsewhere/.git/worktrees/project\n")
    else:
        (tmp_path / ".git").mkdir()
    runs = _git_runs(monkeypatch)
    assert _names(files.discover([tmp_path / "project" / "pkg"]), tmp_path) == ["project/pkg/a.py"]
    assert [str(folder) for folder in runs] == [str(tmp_path / "project" / "pkg")]

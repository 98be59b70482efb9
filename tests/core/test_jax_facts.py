"""The facts per JAX release (jax_lsp/core/jax_facts.json) and how a release is chosen."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from jax_lsp.core import jax_facts
from jax_lsp.core.jax_facts import (
    FACTS,
    facts_for,
    installed_jax_version,
    jax_version_in,
    release_of,
    supported_releases,
)

# The oldest release tools/jax_facts.py measures (it is a script, not a module to import).
TOOL = Path(__file__).resolve().parents[2] / "tools" / "jax_facts.py"
OLDEST = re.search(r'^OLDEST = "([^"]+)"', TOOL.read_text(encoding="utf-8"), re.M).group(1)
RELEASES = supported_releases()


def test_the_data_spans_the_supported_range():
    assert RELEASES[0] == OLDEST
    assert "0.12.0.1" in RELEASES
    assert list(RELEASES) == sorted(RELEASES, key=lambda r: release_of(r)[0])


@pytest.mark.parametrize("release", RELEASES)
def test_every_supported_release_has_every_fact(release):
    facts = facts_for(release)
    assert (facts.version, facts.requested, facts.supported, facts.exact) == (release, release, True, True)
    for name in FACTS:  # each fact stated, and measured (not a probe error), for this release
        jax_facts._value(name, release)


def test_a_fact_missing_for_a_release_fails(monkeypatch):
    data = copy.deepcopy(jax_facts._data())
    ranges = data["facts"]["remat3"]
    if ranges[-1]["from"] == ranges[-1]["to"]:
        ranges.pop()
    else:
        ranges[-1]["to"] = RELEASES[-2]
    monkeypatch.setattr(jax_facts, "_data", lambda: data)
    jax_facts._facts.cache_clear()
    try:
        with pytest.raises(KeyError, match=f"no 'remat3' for jax {RELEASES[-1]}"):
            facts_for(RELEASES[-1])
        ranges.append({"from": RELEASES[-1], "to": RELEASES[-1], "value": {"probe_error": "NameError: x"}})
        with pytest.raises(KeyError, match=f"remat3 was not measured for jax {RELEASES[-1]}: NameError"):
            facts_for(RELEASES[-1])
    finally:
        jax_facts._facts.cache_clear()


@pytest.mark.parametrize(
    "version, speaks_for, supported",
    [
        ("0.4.30", "0.4.30", True),  # exact
        ("0.4.32", "0.4.31", True),  # never released: the nearest older release
        ("0.4.36.dev20241101", "0.4.35", True),  # a development build comes before its release
        ("0.4.36rc1", "0.4.35", True),
        ("0.4.35+cuda12.cudnn89", "0.4.35", True),  # a local build is that release
        ("0.4.35.post1", "0.4.35", True),
        ("0.9.0", "0.9.0", True),
        ("0.9", "0.9.0", True),  # 0.9 == 0.9.0
        ("0.9.0.1", "0.9.0.1", True),
        ("0.99.0", RELEASES[-1], True),  # newer than any measured: the newest
        (None, RELEASES[-1], True),  # unknown
        ("", RELEASES[-1], True),
        ("unknown", RELEASES[-1], True),
        ("0.4.20", OLDEST, False),  # older than any supported release: the oldest, flagged
    ],
)
def test_the_release_facts_speak_for(version, speaks_for, supported):
    facts = facts_for(version)
    assert (facts.version, facts.requested, facts.supported) == (speaks_for, version, supported)
    assert facts.exact == (version == speaks_for)


def test_facts_are_typed_values():
    facts = facts_for(RELEASES[-1])
    assert facts.offloadable_fields == ("src", "dst")
    assert {"nothing_saveable", "dots_saveable", "everything_saveable"} <= facts.ready_made_policies
    assert {"save_only_these_names", "save_from_both_policies"} <= facts.policy_factories
    offload = facts.policies["save_and_offload_only_these_names"]
    assert offload.keyword_only == (
        "names_which_can_be_saved",
        "names_which_can_be_offloaded",
        "offload_src",
        "offload_dst",
    )
    assert facts.policies["dots_saveable"].alias_of == "checkpoint_dots"
    assert facts.host_memory_kinds == frozenset({"pinned_host"})
    assert facts.names_as_one_tuple.matches is False
    assert facts.names_as_one_list.raises == "at_call"
    assert "checkpoint_name" in facts.ad_checkpoint_exports
    assert [p.name for p in facts.checkpoint_parameters][:3] == ["fun", "prevent_cse", "policy"]


def _site(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder


def test_the_version_is_read_from_the_dist_info(tmp_path):
    site = _site(
        tmp_path,
        "site-packages",
        {
            "jaxlib-0.4.31.dist-info/METADATA": "Name: jaxlib\nVersion: 0.4.31\n",
            "jax-0.4.35.dist-info/METADATA": "Metadata-Version: 2.1\nName: jax\nVersion: 0.4.35\n",
            "jax/__init__.py": "",
        },
    )
    assert jax_version_in([site]) == "0.4.35"


def test_the_dist_info_name_when_metadata_is_missing(tmp_path):
    site = _site(tmp_path, "site", {"jax-0.4.36.dev20241101.dist-info/RECORD": ""})
    assert jax_version_in([site]) == "0.4.36.dev20241101"


def test_the_first_folder_on_the_path_wins_as_for_import(tmp_path):
    user = _site(tmp_path, "user", {"jax-0.6.0.dist-info/METADATA": "Version: 0.6.0\n"})
    system = _site(tmp_path, "system", {"jax-0.4.30.dist-info/METADATA": "Version: 0.4.30\n"})
    assert jax_version_in([tmp_path / "empty", user, system]) == "0.6.0"
    assert jax_version_in([system, user]) == "0.4.30"


def test_a_source_checkout_on_the_path(tmp_path):
    checkout = _site(tmp_path, "jax-src", {"jax/version.py": '_version: str = "0.5.1"\n'})
    assert jax_version_in([checkout]) == "0.5.1"


def test_no_jax_on_the_path(tmp_path):
    assert jax_version_in([_site(tmp_path, "site", {"numpy/__init__.py": ""})]) is None


def test_the_version_of_a_real_interpreter_without_importing_jax(tmp_path):
    """A venv made here, with a fake jax dist-info in its site-packages: its Python is asked for
    its search path, and the version comes from the metadata (no jax to import there)."""
    import venv

    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    [site] = env.glob("lib/python*/site-packages")
    (site / "jax-0.4.33.dist-info").mkdir()
    (site / "jax-0.4.33.dist-info" / "METADATA").write_text("Name: jax\nVersion: 0.4.33\n")
    assert installed_jax_version(str(env / "bin" / "python")) == "0.4.33"
    assert facts_for(installed_jax_version(str(env / "bin" / "python"))).version == "0.4.33"

"""JAX113's shortcut: a member that every supported release has is never missing, so naming one
reads no facts of the installed release."""

from __future__ import annotations

from jax_lsp.core.jax_facts import facts_for, supported_releases
from jax_lsp.rules.jax113_policy_member_missing import IN_EVERY_RELEASE


def test_the_members_in_every_release_are_those_the_facts_give_each_release():
    every = set.intersection(*(set(facts_for(release).policies) for release in supported_releases()))
    assert IN_EVERY_RELEASE == every

"""JAX105: memory kinds and keywords of Offloadable and the offload factories."""

from __future__ import annotations

import pytest

from jax_lsp.core import Severity
from jax_lsp.rules.jax105_offload_memory_kind_invalid import _residuals_stay_on_device
from tests.rules.site_rules import anchored_text, findings, fixed, grad_of_f

POLICY = """
import jax
import jax.numpy as jnp
{imports}


def policy(prim, *avals, **params):
    if prim.name == "sin":
        return {offload}
    return False


f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=policy)
"""


def policy_module(offload: str, imports: str = "from jax.ad_checkpoint import Offloadable") -> str:
    return POLICY.format(offload=offload, imports=imports)


SWAPPED = policy_module('Offloadable(src="pinned_host", dst="device")')


def test_swapped_pair_is_one_finding_whose_fix_swaps_both(tmp_path):
    [finding] = findings(SWAPPED, tmp_path, "JAX105")
    assert finding.severity is Severity.WARNING
    assert (finding.span.start.line + 1, finding.span.start.column) == (9, 31)  # the src argument
    assert "swapped" in finding.message
    assert not finding.fixes[0].safe
    assert 'Offloadable(src="device", dst="pinned_host")' in fixed(SWAPPED, [finding])


def test_swapped_pair_raises_a_bare_assertion_and_the_fix_offloads(tmp_path):
    with pytest.raises(AssertionError) as raised:
        grad_of_f(SWAPPED)
    assert str(raised.value) == ""
    repaired = grad_of_f(fixed(SWAPPED, findings(SWAPPED, tmp_path, "JAX105")))
    with pytest.raises(AssertionError):  # now something does reach host memory
        _residuals_stay_on_device(repaired)


@pytest.mark.parametrize("kind", ["host", "cpu", "unpinned_host", "device", "pinned-host"])
def test_every_destination_but_pinned_host_keeps_the_residual_on_the_device(kind, tmp_path):
    code = policy_module(f'Offloadable(src="device", dst="{kind}")')
    [finding] = findings(code, tmp_path, "JAX105")
    assert f'"{kind}"' in finding.message and '"pinned_host"' in finding.message
    _residuals_stay_on_device(grad_of_f(code))


def test_valid_pair_offloads_to_host_memory():
    with pytest.raises(AssertionError):
        _residuals_stay_on_device(grad_of_f(policy_module('Offloadable(src="device", dst="pinned_host")')))


def test_source_other_than_device_has_a_safe_fix(tmp_path):
    code = policy_module('Offloadable(src="unpinned_host", dst="pinned_host")')
    [finding] = findings(code, tmp_path, "JAX105")
    assert finding.fixes[0].safe
    assert 'Offloadable(src="device", dst="pinned_host")' in fixed(code, [finding])
    grad_of_f(code)  # JAX reads "unpinned_host" as device memory: it runs, misleadingly


def test_unknown_keyword_without_close_match_has_no_fix_and_names_the_fields(tmp_path):
    code = policy_module('Offloadable(src="device", ziel="pinned_host")')
    [finding] = findings(code, tmp_path, "JAX105")
    assert "`ziel`" in finding.message and "`src`, `dst`" in finding.message
    assert finding.fixes == ()
    assert (finding.span.start.column, finding.span.end.column) == (41, 59)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ziel'"):
        grad_of_f(code)


def test_single_quotes_are_kept(tmp_path):
    code = policy_module("Offloadable(src='device', dst='host')")
    assert "Offloadable(src='device', dst='pinned_host')" in fixed(code, findings(code, tmp_path, "JAX105"))


@pytest.mark.parametrize(
    "imports, offload",
    [
        ("from jax.ad_checkpoint import Offloadable as O", 'O(src="device", dst="host")'),
        ("from jax import ad_checkpoint", 'ad_checkpoint.Offloadable("device", "host")'),
        ("from jax._src.interpreters import partial_eval as pe", 'pe.Offloadable(src="device", dst="host")'),
    ],
)
def test_aliases_and_attribute_paths(imports, offload, tmp_path):
    [finding] = findings(policy_module(offload, imports), tmp_path, "JAX105")
    assert finding.span.start.line + 1 == 9


def test_offload_factories(tmp_path):
    code = """
    import jax

    cp = jax.checkpoint_policies
    a = cp.offload_dot_with_no_batch_dims(offload_src="device", offload_dst="host")
    b = cp.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["x"],
        offload_src="pinned_host", offload_dst="unpinned_host",
    )
    c = cp.save_and_offload_only_these_names(names_which_can_be_saved=[], names_to_offload=["x"])
    """
    found = findings(code, tmp_path, "JAX105")
    anchored = [(f.span.start.line + 1, anchored_text(code, f)) for f in found]
    assert anchored == [
        (5, '"host"'),
        (8, '"pinned_host"'),
        (8, '"unpinned_host"'),
        (10, 'names_to_offload=["x"]'),
    ]
    assert "did you mean `names_which_can_be_offloaded`" in found[3].message


def test_unknown_values_local_classes_and_noqa_are_silent(tmp_path):
    code = """
    import jax
    from jax.ad_checkpoint import Offloadable


    class Offloadable2:
        def __init__(self, src, dst):
            pass


    def make(src, dst):
        return Offloadable(src=src, dst=dst)


    KINDS = {"dst": "host"}
    a = Offloadable2(src="host", dst="cpu")
    b = Offloadable(src="device", **KINDS)
    c = Offloadable(src="device", dst="host")  # noqa: JAX105
    """
    assert findings(code, tmp_path, "JAX105") == []

"""A user's example for big_vision's Gemma (google-research/big_vision at 0127fb6), Flax linen.

The site advised is the decoder's `nn.remat(Block, ..., policy=getattr(jax.checkpoint_policies,
self.remat_policy))` under `nn.scan` over the layers (`big_vision/models/ppp/gemma.py:526`):
the policy is chosen by a config string, `remat_policy` of the model, set from a config dict
(`Model(**config)`, the dict from big_vision's own `get_config("gemma_2b")` with smaller widths).
big_vision is the user's project here: its package is not a library. `big_vision.utils` reads
`tensorflow.io.gfile` at import; where TensorFlow is not installed the example gives it an empty
module while it imports the model, as a user who only trains the model does. The loss is next-token cross-entropy.

Copied to the repository's root by benchmarks/advise_against_jax.py and run from there.
"""

import importlib.util
import sys
import types

import jax
import jax.numpy as jnp

_STAND_INS = ("tensorflow", "tensorflow.io", "tensorflow.io.gfile")
if importlib.util.find_spec("tensorflow") is None:
    for _name in _STAND_INS:
        sys.modules.setdefault(_name, types.ModuleType(_name))

from big_vision.models.ppp import gemma  # noqa: E402 (after the stand-in above)

for _name in _STAND_INS:  # gone again: einops asks sys.modules whether TensorFlow is there
    if isinstance(sys.modules.get(_name), types.ModuleType) and not hasattr(sys.modules[_name], "__file__"):
        del sys.modules[_name]


def _loss(width, depth, batch, length):
    config = {
        **gemma.get_config("gemma_2b").to_dict(),
        "width": width,
        "depth": depth,
        "mlp_dim": 4 * width,
        "num_heads": width // 64,
        "head_dim": 64,
        "vocab_size": 1024,
        "remat_policy": "nothing_saveable",
    }
    model = gemma.Model(**config)
    tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)
    params = jax.eval_shape(model.init, jax.random.key(0), tokens)

    def loss(params, tokens):
        logits, _ = model.apply(params, tokens)
        log_probs = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32))
        return -jnp.mean(jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1))

    return {"fn": loss, "args": (params, tokens)}


def example():
    """4 scanned layers of width 256 (MLP 1024, 4 heads, 1 KV head), 8 sequences of 128 tokens."""
    return _loss(256, 4, 8, 128)

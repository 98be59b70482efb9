"""A user's example for tunix's Qwen3 (google/tunix at c7d8950), a Flax NNX model.

The site advised is the `jax.checkpoint(_checkpointed_block)` of `DecoderLayer.__call__`
(`remat_config=RematConfig.DECODER`; `tunix/models/qwen3/model.py:1202`): a checkpoint without a
policy (JAX's default) over a function that merges the layer from its `nnx.split` state, once per
layer (4 here, unscanned). (`RematConfig.BLOCK` checkpoints the attention and the MLP apart, two
sites of their own.) The loss is next-token cross-entropy of the model's `nnx.split` state.

tunix's own `__init__` imports every trainer and `tunix/models/qwen3/__init__` its serving
mappings; a user who needs only the model puts empty packages for those two in `sys.modules`
before importing it, as done here (and in tunix.py).

Copied to the repository's root by benchmarks/advise_against_jax.py and run from there.
"""

import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
from flax import nnx

for _package in ("tunix", "tunix.models.qwen3"):
    if _package not in sys.modules:
        sys.modules[_package] = types.ModuleType(_package)
        sys.modules[_package].__path__ = [str(Path(__file__).resolve().parent / _package.replace(".", "/"))]

from tunix.models.qwen3 import model as qwen3  # noqa: E402 (after the packages above)

CONFIG = qwen3.ModelConfig(
    num_layers=4,
    vocab_size=1024,
    embed_dim=256,
    hidden_dim=1024,
    num_heads=4,
    head_dim=64,
    num_kv_heads=2,
    rope_theta=1_000_000,
    norm_eps=1e-6,
    use_tied_embedding=True,
    remat_config=qwen3.RematConfig.DECODER,
)


def example():
    """4 decoder layers of width 256 (MLP 1024, 4 heads, 2 KV heads), 8 sequences of 128 tokens."""
    graphdef, state = nnx.split(nnx.eval_shape(lambda: qwen3.Qwen3(CONFIG, rngs=nnx.Rngs(0))))
    batch, length = 8, 128
    tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)

    def loss(state, tokens):
        model = nnx.merge(graphdef, state)
        positions = jnp.broadcast_to(jnp.arange(length), (batch, length))
        mask = jnp.broadcast_to(jnp.tril(jnp.ones((length, length), bool)), (batch, length, length))
        logits, _ = model(tokens, positions, None, mask)
        log_probs = jax.nn.log_softmax(logits[:, :-1])
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.mean(picked)

    return {"fn": loss, "args": (state, tokens)}

"""A user's example for tunix's Llama 3 (google/tunix at c7d8950), a Flax NNX model.

The site advised is the `jax.checkpoint(_checkpointed_block)` of `DecoderLayer.__call__`
(`remat_config=RematConfig.DECODER`): a checkpoint without a policy (JAX's default) over a
function that merges the layer from its `nnx.split` state, once per layer (4 here, unscanned).
The loss is next-token cross-entropy, taken of the model's `nnx.split` state as a trainer does.

tunix's own `__init__` imports every trainer (grain, metrax, qwix, transformers, ...) and
`tunix/models/llama3/__init__` the Hugging Face loaders; a user who needs only the model puts
empty packages for those two in `sys.modules` before importing it, as done here.

Copied to the repository's root by benchmarks/advise_against_jax.py and run from there.
"""

import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
from flax import nnx

for _package in ("tunix", "tunix.models.llama3"):
    if _package not in sys.modules:
        sys.modules[_package] = types.ModuleType(_package)
        sys.modules[_package].__path__ = [str(Path(__file__).resolve().parent / _package.replace(".", "/"))]

from tunix.models.llama3 import model as llama3  # noqa: E402 (after the packages above)

CONFIG = llama3.ModelConfig(
    num_layers=4,
    vocab_size=1024,
    embed_dim=256,
    hidden_dim=1024,
    num_heads=4,
    head_dim=64,
    num_kv_heads=2,
    rope_theta=500_000,
    norm_eps=1e-5,
    remat_config=llama3.RematConfig.DECODER,
)


def _entry(config, batch, length, dtype=None):
    """The loss of ``config``'s model on ``batch`` sequences of ``length`` tokens, its parameters
    as they are made or, given ``dtype``, in it."""
    graphdef, state = nnx.split(nnx.eval_shape(lambda: llama3.Llama3(config, rngs=nnx.Rngs(0))))
    if dtype is not None:
        state = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, dtype), state)
    tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)

    def loss(state, tokens):
        model = nnx.merge(graphdef, state)
        positions = jnp.broadcast_to(jnp.arange(length), (batch, length))
        mask = jnp.broadcast_to(jnp.tril(jnp.ones((length, length), bool)), (batch, length, length))
        logits, _ = model(tokens, positions, None, mask)
        log_probs = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32))
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.mean(picked)

    return {"fn": loss, "args": (state, tokens)}


def example():
    """4 decoder layers of width 256 (MLP 1024, 4 heads, 2 KV heads), 8 sequences of 128 tokens."""
    return _entry(CONFIG, 8, 128)


CHIP_CONFIG = llama3.ModelConfig(
    num_layers=8,
    vocab_size=32768,
    embed_dim=1024,
    hidden_dim=4096,
    num_heads=8,
    head_dim=128,
    num_kv_heads=4,
    rope_theta=500_000,
    norm_eps=1e-5,
    remat_config=llama3.RematConfig.DECODER,
)


def example_chip():
    """At a TPU chip's scale (benchmarks/step_time/): 8 decoder layers of width 1024 (MLP 4096,
    8 heads of 128, 4 KV heads), a 32k vocabulary, 8 sequences of 1024 tokens, bfloat16
    parameters and compute."""
    return _entry(CHIP_CONFIG, 8, 1024, jnp.bfloat16)

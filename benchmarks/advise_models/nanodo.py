"""A user's example for nanodo's decoder (google-deepmind/nanodo at 10aefde).

The site advised is `nn.remat(TBlock)` in `TransformerDo.setup`: a checkpoint without a policy
(JAX's default), over 4 unscanned pre-layernorm blocks with a causal `jnp.where` mask between the
attention's matmuls. The loss is next-token cross-entropy of the logits, as nanodo's trainer
computes it.

Copied to the repository's root by benchmarks/advise_models.py and run from there.
"""

import jax
import jax.numpy as jnp
from nanodo import model

CONFIG = model.DoConfig(D=256, H=4, L=128, N=4, V=1024, F=1024, remat=True, fsdp_enabled=False)


def example():
    """4 blocks of width 256, 8 sequences of 128 tokens, float32."""
    decoder = model.TransformerDo(CONFIG)
    tokens = jax.ShapeDtypeStruct((8, CONFIG.L), jnp.int32)
    params = jax.eval_shape(decoder.init, jax.random.key(0), tokens)

    def loss(params, tokens):
        logits = decoder.apply(params, tokens)
        log_probs = jax.nn.log_softmax(logits[:, :-1])
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.mean(picked)

    return {"fn": loss, "args": (params, tokens)}


CHIP_CONFIG = model.DoConfig(
    D=1024, H=8, L=1024, N=8, V=32768, F=4096, dtype=jnp.bfloat16, remat=True, fsdp_enabled=False
)


def example_chip():
    """At a TPU chip's scale (benchmarks/step_time/): 8 blocks of width 1024 (MLP 4096, 8 heads),
    a 32k vocabulary, 8 sequences of 1024 tokens, bfloat16 compute, float32 parameters."""
    decoder = model.TransformerDo(CHIP_CONFIG)
    tokens = jax.ShapeDtypeStruct((8, CHIP_CONFIG.L), jnp.int32)
    params = jax.eval_shape(decoder.init, jax.random.key(0), tokens)

    def loss(params, tokens):
        logits = decoder.apply(params, tokens).astype(jnp.float32)
        log_probs = jax.nn.log_softmax(logits[:, :-1])
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.mean(picked)

    return {"fn": loss, "args": (params, tokens)}

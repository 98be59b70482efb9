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

"""A user's example for recurrentgemma's Griffin (google-deepmind/recurrentgemma at 2efa84d).

The site advised is `nn.remat(block_class, static_argnums=4)` in `Griffin.setup`: a checkpoint
without a policy (JAX's default) over every residual block, `return_cache` a static argument.
Griffin's blocks alternate two recurrent blocks (an RG-LRU: a linear scan over the sequence)
with a local-attention block, as RecurrentGemma-2B's do. The loss is next-token cross-entropy.

Copied to the repository's root by benchmarks/advise_against_jax.py and run from there.
"""

import jax
import jax.numpy as jnp
from recurrentgemma import common
from recurrentgemma.jax import griffin

RECURRENT, ATTENTION = common.TemporalBlockType.RECURRENT, common.TemporalBlockType.ATTENTION


def _config(width, layers, vocab, scan_type=common.ScanType.LINEAR_NATIVE):
    return common.GriffinConfig(
        vocab_size=vocab,
        width=width,
        mlp_expanded_width=3 * width,
        num_heads=max(width // 256, 1),
        block_types=tuple((RECURRENT, RECURRENT, ATTENTION)[i % 3] for i in range(layers)),
        embeddings_scale_by_sqrt_dim=True,
        attention_window_size=2048,
        logits_soft_cap=30.0,
        scan_type=scan_type,
    )


def _entry(config, batch, length, dtype=None):
    model = griffin.Griffin(config, dtype=dtype)
    tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)
    positions = jax.ShapeDtypeStruct((batch, length), jnp.int32)
    params = jax.eval_shape(model.init, jax.random.key(0), tokens, positions)

    def loss(params, tokens, positions):
        logits, _ = model.apply(params, tokens, positions, return_cache=False)
        log_probs = jax.nn.log_softmax(logits[:, :-1])
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.mean(picked)

    return {"fn": loss, "args": (params, tokens, positions)}


def example():
    """3 blocks (recurrent, recurrent, attention) of width 256, 4 sequences of 128 tokens."""
    return _entry(_config(256, 3, 1024), 4, 128)


def example_2b_widths():
    """RecurrentGemma-2B's widths (2560, MLP 7680, 10 heads), 3 of its 26 blocks, a 64k
    vocabulary (its own is 256k), 2 sequences of 512 tokens: gigabytes to compile."""
    return _entry(_config(2560, 3, 64_000), 2, 512)


def example_chip():
    """At a TPU chip's scale (benchmarks/step_time/): 6 blocks (two recurrent, one attention,
    twice) of width 1024 (MLP 3072, 4 heads), a 32k vocabulary, 8 sequences of 1024 tokens,
    bfloat16 compute, float32 parameters: what the chip's rounds measured. The RG-LRU as an
    associative scan: the linear one, unrolled 128 steps by the model, took over 300 s to compile
    for a TPU v5e on 2 CPUs (and the TPU's own default, a Pallas kernel, is a custom call whose
    work XLA does not count). A compile for v5e-1 takes about 35 s on the chip's machine."""
    associative = common.ScanType.ASSOCIATIVE_NATIVE
    return _entry(_config(1024, 6, 32768, associative), 8, 1024, jnp.bfloat16)

"""A user's example for the ring-attention kernel (haoliuhl/ringattention at 204c164, `bpt/`).

`bpt/ring_attention.py` defines `ring_attention` as a `jax.custom_vjp` and registers its forward
and backward passes with a module-level `ring_attention.defvjp(...)`; the site advised is the
`jax.checkpoint(..., policy=policy)` of the blockwise attention inside its forward pass, whose
policy the caller passes in `blockwise_kwargs`. The loss runs the kernel as the repository's
LLaMA does: under `shard_map` over a sequence axis "sp" (here of one device).

Copied to the repository's root by benchmarks/advise_models.py and run from there.
"""

from functools import partial

import jax
import jax.numpy as jnp
from bpt.ring_attention import ring_attention
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _attention_loss(batch, seq, heads, head_dim, chunk, dtype):
    mesh = jax.make_mesh((1,), ("sp",))
    attend = jax.shard_map(
        partial(
            ring_attention,
            axis_name="sp",
            float32_logits=True,
            blockwise_kwargs=dict(
                deterministic=True,
                dropout_rng=None,
                attn_pdrop=0.0,
                causal=True,
                query_chunk_size=chunk,
                key_chunk_size=chunk,
                dtype=dtype,
                policy=jax.checkpoint_policies.nothing_saveable,
                precision=None,
                prevent_cse=True,
            ),
        ),
        mesh=mesh,
        in_specs=(P(None, "sp"), P(None, "sp"), P(None, "sp"), P(), P()),
        out_specs=P(None, "sp"),
        check_vma=False,
    )

    def loss(q, k, v):
        return jnp.mean(attend(q, k, v, None, None).astype(jnp.float32) ** 2)

    sharded = NamedSharding(mesh, P(None, "sp"))
    qkv = jax.ShapeDtypeStruct((batch, seq, heads, head_dim), dtype, sharding=sharded)
    return {"fn": loss, "args": (qkv, qkv, qkv)}


def example():
    """Two sequences of 256 tokens, 4 heads of 32, chunks of 64, float32."""
    return _attention_loss(2, 256, 4, 32, 64, jnp.float32)


def example_7b():
    """A 7B model's attention: 32 heads of 128, 32768 tokens, chunks of 2048, bfloat16."""
    return _attention_loss(1, 32768, 32, 128, 2048, jnp.bfloat16)

"""A user's example for a haliax model (stanford-crfm/haliax at f41e7d4): an MLP stack as
`hnn.Stacked` (a scan over 6 layers), `gradient_checkpointing=True`, folded.

The site advised is the library's `eqx.filter_checkpoint(callable, policy=policy, ...)` in
`src/haliax/_src/scan.py` (`ScanCheckpointPolicy.checkpoint`), which every haliax stack goes
through. haliax is imported from the checkout's `src/` (a src layout): run with it on PYTHONPATH.

Copied to the repository's root by benchmarks/advise_models.py and run from there.
"""

import equinox as eqx
import haliax as hax
import haliax.nn as hnn
import jax
import jax.numpy as jnp

Batch, Pos, Embed, Mlp, Layers = hax.make_axes(batch=8, position=128, embed=256, mlp=1024, layers=6)


class Block(eqx.Module):
    norm: hnn.LayerNorm
    up: hnn.Linear
    down: hnn.Linear

    @staticmethod
    def init(embed, mlp, *, key):
        up, down = jax.random.split(key)
        return Block(
            hnn.LayerNorm.init(embed),
            hnn.Linear.init(embed, mlp, key=up),
            hnn.Linear.init(mlp, embed, key=down),
        )

    def __call__(self, x):
        return x + self.down(hnn.gelu(self.up(self.norm(x))))


def loss(stack, x):
    return hax.mean(stack.fold(x) ** 2).scalar()


def example():
    """6 layers of width 256 (MLP 1024), 8 sequences of 128 positions, float32."""
    stack = eqx.filter_eval_shape(
        lambda key: hnn.Stacked.init(Layers, Block, gradient_checkpointing="recompute")(
            Embed, Mlp, key=jax.random.split(key, Layers.size)
        ),
        jax.random.key(0),
    )
    x = hax.NamedArray(
        jax.ShapeDtypeStruct((Batch.size, Pos.size, Embed.size), jnp.float32), (Batch, Pos, Embed)
    )
    return {"fn": loss, "args": (stack, x)}


def example_chip():
    """At a TPU chip's scale (benchmarks/step_time/): 8 layers of width 1024 (MLP 4096), 8
    sequences of 1024 positions, float32 (XLA:TPU multiplies float32 matrices in one bfloat16
    pass at default precision)."""
    batch, pos, embed, mlp, layers = hax.make_axes(batch=8, position=1024, embed=1024, mlp=4096, layers=8)
    stack = eqx.filter_eval_shape(
        lambda key: hnn.Stacked.init(layers, Block, gradient_checkpointing="recompute")(
            embed, mlp, key=jax.random.split(key, layers.size)
        ),
        jax.random.key(0),
    )
    x = hax.NamedArray(
        jax.ShapeDtypeStruct((batch.size, pos.size, embed.size), jnp.float32), (batch, pos, embed)
    )
    return {"fn": loss, "args": (stack, x)}

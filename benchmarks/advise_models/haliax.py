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
    def init(*, key):
        up, down = jax.random.split(key)
        return Block(
            hnn.LayerNorm.init(Embed),
            hnn.Linear.init(Embed, Mlp, key=up),
            hnn.Linear.init(Mlp, Embed, key=down),
        )

    def __call__(self, x):
        return x + self.down(hnn.gelu(self.up(self.norm(x))))


def example():
    """6 layers of width 256 (MLP 1024), 8 sequences of 128 positions, float32."""
    stack = eqx.filter_eval_shape(
        lambda key: hnn.Stacked.init(Layers, Block, gradient_checkpointing="recompute")(
            key=jax.random.split(key, Layers.size)
        ),
        jax.random.key(0),
    )
    x = hax.NamedArray(
        jax.ShapeDtypeStruct((Batch.size, Pos.size, Embed.size), jnp.float32), (Batch, Pos, Embed)
    )

    def loss(stack, x):
        return hax.mean(stack.fold(x) ** 2).scalar()

    return {"fn": loss, "args": (stack, x)}


ChipBatch, ChipPos, ChipEmbed, ChipMlp = hax.make_axes(batch=8, position=1024, embed=1024, mlp=4096)


class ChipBlock(eqx.Module):
    norm: hnn.LayerNorm
    up: hnn.Linear
    down: hnn.Linear

    @staticmethod
    def init(*, key):
        up, down = jax.random.split(key)
        return ChipBlock(
            hnn.LayerNorm.init(ChipEmbed),
            hnn.Linear.init(ChipEmbed, ChipMlp, key=up),
            hnn.Linear.init(ChipMlp, ChipEmbed, key=down),
        )

    def __call__(self, x):
        return x + self.down(hnn.gelu(self.up(self.norm(x))))


def example_chip():
    """At a TPU chip's scale (benchmarks/step_time/): 8 layers of width 1024 (MLP 4096), 8
    sequences of 1024 positions, float32 (XLA:TPU's float32 matrix products: several passes)."""
    layers = hax.Axis("layers", 8)
    stack = eqx.filter_eval_shape(
        lambda key: hnn.Stacked.init(layers, ChipBlock, gradient_checkpointing="recompute")(
            key=jax.random.split(key, layers.size)
        ),
        jax.random.key(0),
    )
    shape = (ChipBatch.size, ChipPos.size, ChipEmbed.size)
    x = hax.NamedArray(jax.ShapeDtypeStruct(shape, jnp.float32), (ChipBatch, ChipPos, ChipEmbed))

    def loss(stack, x):
        return hax.mean(stack.fold(x) ** 2).scalar()

    return {"fn": loss, "args": (stack, x)}

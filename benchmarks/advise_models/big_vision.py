"""A user's example for big_vision's NaFlex ViT encoder (google-research/big_vision at 0127fb6).

`big_vision/models/proj/` and `big_vision/models/proj/image_text/` have no `__init__.py`:
`big_vision.models.proj.image_text.naflex_vit` is a module of namespace packages inside the
regular package `big_vision.models`. The site advised is the encoder's `nn.remat(Encoder1DBlock,
..., policy=getattr(jax.checkpoint_policies, self.remat_policy, None))` under `nn.scan` over the
layers: the policy is chosen by a config string (`remat_policy`), here
`'dots_with_no_batch_dims_saveable'`. The loss runs the encoder on patch embeddings with the
self-attention mask NaFlex makes from its padding.

Copied to the repository's root by benchmarks/advise_models.py and run from there.
"""

import jax
import jax.numpy as jnp
from big_vision.models import vit
from big_vision.models.proj.image_text.naflex_vit import Encoder


def _encoder_loss(variant, batch, tokens, dtype):
    shape = vit.decode_variant(variant)
    encoder = Encoder(
        depth=shape["depth"],
        mlp_dim=shape["mlp_dim"],
        num_heads=shape["num_heads"],
        scan=True,
        remat_policy="dots_with_no_batch_dims_saveable",
        dtype_mm=dtype,
    )
    x = jax.ShapeDtypeStruct((batch, tokens, shape["width"]), jnp.float32)
    mask = jax.ShapeDtypeStruct((batch, tokens, tokens), jnp.bool_)  # patch to patch
    params = jax.eval_shape(encoder.init, jax.random.key(0), x, mask)

    def loss(params, x, mask):
        encoded, _ = encoder.apply(params, x, mask)
        return jnp.mean(encoded**2)

    return {"fn": loss, "args": (params, x, mask)}


def example():
    """ViT-S (12 layers, width 384), two images of 64 patches, float32."""
    return _encoder_loss("S", 2, 64, "float32")


def example_vit_e():
    """ViT-e (56 layers, width 1792, about 4B parameters), 8 images of 256 patches, bfloat16."""
    return _encoder_loss("e", 8, 256, "bfloat16")

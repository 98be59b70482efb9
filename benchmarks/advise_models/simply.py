"""A user's example for google-deepmind/simply's language model (google-deepmind/simply at e14c061),
plain JAX.

simply registers its functions at import (`FunctionRegistry.register(gelu)`, refusing a name
twice) and scans over its blocks with `lax.scan`, each block under `jax.remat(apply_fn,
policy=getattr(jax.checkpoint_policies, self.config.remat_policy, None))`
(`simply/model_lib.py:3084`, the policy two lines below): the policy is chosen by the
experiment config's string, given here with `dataclasses.replace` as simply's own tests do. The
model builds a default mesh over the devices the process sees (its sharding constraints name it).
The loss is simply's `compute_train_loss` (next-token cross-entropy).

Copied to the repository's root by benchmarks/advise_against_jax.py and run from there.
"""

import dataclasses

import jax
import jax.numpy as jnp
from simply import config_lib, model_lib


def _loss(model_dim, n_layers, batch, length, policy="nothing_saveable", vocab=1024):
    config = dataclasses.replace(
        config_lib.BaseExperimentConfig(),
        model_dim=model_dim,
        per_head_dim=64,
        n_heads=model_dim // 64,
        n_layers=n_layers,
        expand_factor=4,
        vocab_size=vocab,
        seq_len=length,
        use_scan=True,
        use_remat=True,
        remat_policy=policy,
        activation_dtype_name="bfloat16",
        use_flash_attention=False,
    )
    model = model_lib.TransformerLM(config)
    params = jax.eval_shape(model.init, jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)
    batch_spec = {"decoder_input_tokens": tokens, "decoder_target_tokens": tokens}

    def loss(params, batch):
        return model_lib.compute_train_loss(model, params, batch)[0]

    return {"fn": loss, "args": (params, batch_spec)}


def example():
    """4 scanned blocks of width 256 (MLP 1024, 4 heads), bf16, 8 sequences of 128 tokens."""
    return _loss(256, 4, 8, 128)


def example_full_vocab():
    """The same with simply's own vocabulary (32,000 tokens): the loss's float32 logits are then
    as large as the scanned stack's residuals."""
    return _loss(256, 4, 8, 128, vocab=32_000)

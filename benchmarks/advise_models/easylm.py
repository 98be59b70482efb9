"""A user's example for EasyLM's LLaMA (young-geng/EasyLM at fe5b2c3).

`EasyLM/models/llama/` has no `__init__.py`: `EasyLM.models.llama` is a namespace package inside
the regular package `EasyLM.models`. The site advised is `nn.remat(FlaxLLaMABlock, ...,
policy=get_gradient_checkpoint_policy(self.config.remat_policy))`: the policy is chosen by a
config string (`remat_policy`), here `'checkpoint_dots'`. The loss is next-token cross-entropy
of `FlaxLLaMAForCausalLMModule`, the module EasyLM's trainer applies.

Copied to the repository's root by benchmarks/advise_models.py and run from there.
"""

import jax
import jax.numpy as jnp
from EasyLM.models.llama.llama_model import FlaxLLaMAForCausalLMModule, LLaMAConfigurator


def _lm_loss(base_model, batch, seq, dtype, **updates):
    updates = {"base_model": base_model, "remat_policy": "checkpoint_dots", **updates}
    config = LLaMAConfigurator.finalize_config(LLaMAConfigurator.get_default_config(updates))
    model = FlaxLLaMAForCausalLMModule(config, dtype=dtype, param_dtype=dtype)
    tokens = jax.ShapeDtypeStruct((batch, seq), jnp.int32)
    # Passed, not left to the model: its default for positions calls jnp.clip(a_min=...), which
    # JAX no longer accepts.
    mask = jnp.ones((batch, seq), jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(seq), (batch, seq))
    params = jax.eval_shape(model.init, jax.random.key(0), tokens, mask, positions)

    def loss(params, tokens):
        logits = model.apply(params, tokens, mask, positions).logits.astype(jnp.float32)
        log_probs = jax.nn.log_softmax(logits[:, :-1])
        picked = jnp.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)
        return -jnp.sum(picked) / picked.size  # the mean over tokens

    return {"fn": loss, "args": (params, tokens)}


def example():
    """EasyLM's 'debug' model (2 layers, hidden 128), two sequences of 64 tokens, float32."""
    return _lm_loss("debug", 2, 64, jnp.float32)


def example_7b_4_layers():
    """EasyLM's 'llama_7b' (hidden 4096, MLP 11008, 32 heads) with 4 of its 32 layers, one
    sequence of 2048 tokens, bfloat16. The model unrolls its layers (no scan): all 32 list the
    same residuals 8 times over and took 13.7 s to advise on 2 idle CPUs, 26 s (past the default
    20 s timeout) while other work shared them."""
    return _lm_loss("llama_7b", 1, 2048, jnp.bfloat16, num_hidden_layers=4)

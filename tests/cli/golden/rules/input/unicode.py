import jax


def 保存(prim, *args, **params):
    """Columns count characters: 中文 and 😀 are one each."""
    名前 = "点"; return prim == "dot_general"  # 😀


f = jax.checkpoint(lambda x: x, policy=保存)

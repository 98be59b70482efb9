"""Remat policies: where they reach JAX (sites), what they resolve to, policy tables, and the
hover text that describes them."""

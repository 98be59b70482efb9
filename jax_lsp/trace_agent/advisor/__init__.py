"""The advisor (``jax-lsp advise``), agent side: what each remat policy saves and recomputes at one site.

The site's module is loaded as the trace loads it (imports, definitions and the assignments
that are needed, nothing else), with the site's ``policy=`` value wrapped in a ``Marker``
(``site``). The example is traced forward once (``example``, ``forward``; ``make_jaxpr``: shapes
only, nothing allocated); then, for every candidate policy (``candidates``), the ``checkpoint``
equations that carry this site's marker get the candidate as their policy, and the jaxpr is
differentiated again the way ``jax._src.ad_checkpoint.saved_residuals`` does (``make_jaxpr`` of
``vjp``; ``driver``). The residuals are read as JAX's own ``_saved_residuals`` reads them
(``residuals``); the recomputed FLOPs are counted in the linear (backward) jaxpr of the same
``vjp`` (``jaxpr``): the ``dot_general``/convolution equations there whose operands do not
depend on the cotangents are primal work done again.
"""

"""A device's failures as sentences: a chip another process holds, a backend that cannot start,
memory that ran out. JAX's own words are read here, never shown as a traceback."""

# libtpu's refusals when another process holds the chip (its lock on /tmp/libtpu_lockfile)
_BUSY = ("libtpu multi-process lockfile", "TPU is already in use", "already in use by process")
# XLA's and C++'s words for memory that ran out, and the loader's and the kernel's (a shared
# library's segments are written memory too)
_OUT_OF_MEMORY = (
    "RESOURCE_EXHAUSTED",
    "bad_alloc",
    "Out of memory",
    "out of memory",
    "failed to map segment from shared object",
    "Cannot allocate memory",
)


def holds_chip_elsewhere(text):
    """Whether ``text`` (an exception's, a log's) is libtpu refusing a chip another process holds."""
    return any(words in text for words in _BUSY)


def failure(exc, memory_mb):
    """The answer (a dict with ``status`` and ``message``) for ``exc`` where it is a device's
    failure, else None; ``memory_mb``: the run's memory limit."""
    text = f"{type(exc).__name__}: {exc}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    backend = _backend_named(text)
    if holds_chip_elsewhere(text):
        return {
            "status": "device_busy",
            "message": (
                "The TPU is in use by another process (libtpu admits one), and the project's code asked "
                "JAX for the TPU: jax-lsp runs JAX on the CPU (JAX_PLATFORMS=cpu) unless the code sets "
                "another platform; leave jax_platforms unset at import time, or stop the other process"
            ),
        }
    if any(words in text for words in _OUT_OF_MEMORY):
        where = f" starting JAX's {backend} backend" if backend else ""
        return {
            "status": "memory",
            "message": (
                f"The trace ran out of memory{where} (limit {memory_mb} MiB): {first}. Raise the limit "
                "(--memory-limit-mb, the editor's trace.memoryLimitMb)"
            ),
        }
    if backend:
        return {
            "status": "error",
            "message": (
                f"JAX could not start its {backend} backend: {first}. jax-lsp runs JAX on the CPU "
                "(JAX_PLATFORMS=cpu): does the project's code ask for another platform at import time?"
            ),
        }
    return None


def _backend_named(text):
    """``tpu`` in JAX's "Unable to initialize backend 'tpu'", else None."""
    marker = "Unable to initialize backend '"
    start = text.find(marker)
    if start < 0:
        return None
    name = text[start + len(marker) :].split("'", 1)[0]
    return name or None

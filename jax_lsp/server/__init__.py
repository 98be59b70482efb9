"""The jax-lsp language server: a thin pygls layer over the engine's analysis.

The LSP features, one module each, are in `jax_lsp.server.features`; the modules here are
their plumbing (the server object, protocol, documents, places, positions, notebooks, settings,
the checker, the diagnostics, the feature registry...), which never imports a feature.
`create_server()` builds the server; `serve()` runs it over stdio or TCP.

Hook for the trace feature
--------------------------
`create_server()` calls `jax_lsp.server.features.trace.register(server)` once, before the
server starts. `server` is a `JaxLanguageServer`; besides pygls' `server.feature(...)` and
`server.command(...)` it offers:

- `server.add_feature(feature)`: a `jax_lsp.server.registry.LanguageFeature`, whose hooks
  add to the one hover (`hover(place)`), the code lenses (`code_lenses(place)`) and the code
  actions (`code_actions(place, params)`), hear of Python buffers changing, saved and closed
  (`did_change(place, changes)`, `did_save(place)`, `did_close(place)`), of each new analysis
  (`analysis_built()`) and of the shutdown (`shutdown()`). A `jax_lsp.server.places.Place` is
  the request's place, resolved once: `.uri`, `.document` (the open buffer or None), `.key`
  and `.file` (the analysis' key, the file on disk or None), `.position` (code points),
  `.notebook`, `.in_analysis` (the analysis' path and position), `.range(span)`.
- `server.settings`: the current `ServerSettings` (`.interpreter`: the python to trace in,
  None for the server's own; `.trace.on_save`; `.trace.options`, the `TraceOptions` of every
  trace and advice; `.trusted`; `.core`: the core `Settings`). Replaced, never mutated, when
  settings change.
- `server.analysis`: the `jax_lsp.engine.Workspace` (None until the settings are read after
  `initialized`); `await server.run_analysis(fn, *args)` runs `fn(*args)` on the analysis' thread.
- `server.place(uri, position)`: the place of a command's arguments; `server.document(uri)`:
  the open Python buffer (a pygls `TextDocument`) or None.
- `server.to_lsp_range(uri, span)`: a span of code points in any file, in the client's
  negotiated encoding.
- `server.publish_diagnostics(source, uri, diagnostics)`: replace the diagnostics of `source`
  (e.g. "jax-lsp trace") for `uri`; the client always sees the union of all sources, pushed
  or pulled. Closing a buffer clears every source's diagnostics for it.
- `server.notify_user(message, kind)`: window/showMessage as `showNotifications` allows.
"""

from __future__ import annotations

import gc


def create_server():
    from jax_lsp.server import configuration, indexing, lifecycle, notebooks, registry, sync
    from jax_lsp.server.features import (
        advisor,
        code_actions,
        completion,
        hover,
        name_places,
        trace,
    )
    from jax_lsp.server.server import JaxLanguageServer

    server = JaxLanguageServer()
    # The plumbing first, then the features. The order of the features is that of their parts
    # in a hover: the trace's report comes last.
    for module in (
        registry,
        lifecycle,
        sync,
        notebooks,
        configuration,
        indexing,
        code_actions,
        hover,
        completion,
        name_places,
        trace,
        advisor,
    ):
        module.register(server)
    return server


def serve(tcp: tuple[str, int] | None = None, log_level: str = "info") -> int:
    """Run until `exit`; the exit code follows the spec (0 after `shutdown`, else 1)."""
    from jax_lsp.server import logs

    logs.setup_stderr(log_level)
    server = create_server()
    # Everything imported so far lives as long as the process: keep it out of every collection,
    # or each full collection while typing walks pygls', lsprotocol's and jedi's objects again.
    gc.freeze()
    if tcp is None:
        server.start_io()
    else:
        server.start_tcp(*tcp)
    server.stop_background_work()
    return 0 if server.shutdown_requested else 1

// Helpers for the one LogOutputChannel ("jax-lsp") shared by the extension and the server.

export function errorText(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

// How the server formats a log record on stderr ("2026-01-01 12:00:00,000 INFO jax_lsp.server: ...").
const SERVER_RECORD = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING) jax_lsp[\w.]*: /;

/**
 * The level for one line of the server's stderr. The server sends its log records to the
 * client too (window/logMessage), so its own non-error records are kept at trace level to
 * avoid showing each twice; anything else there (errors, tracebacks) is an error.
 */
export function stderrLevel(line: string): 'trace' | 'error' {
    return SERVER_RECORD.test(line) ? 'trace' : 'error';
}

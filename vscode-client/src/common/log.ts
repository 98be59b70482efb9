// One LogOutputChannel ("jax-lsp") for the extension and the server's own messages.
import { window, type LogOutputChannel } from 'vscode';

export function createLog(): LogOutputChannel {
    return window.createOutputChannel('jax-lsp', { log: true });
}

export function errorText(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

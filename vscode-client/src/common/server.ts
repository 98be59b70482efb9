// The language client: runs the jax-lsp server over stdio and answers its configuration requests.
import { type LogOutputChannel, type Uri } from 'vscode';
import { CloseAction, LanguageClient, RevealOutputChannelOn, type ErrorHandler, type LanguageClientOptions } from 'vscode-languageclient/node';
import * as readline from 'node:readline';
import { RENDERINGS, type Comparison } from './comparison';
import { COMPARE_POLICIES, RUN_POLICIES } from './comparisonView';
import { stderrLevel } from './log';
import type { ServerCommand } from './python';
import { SECTION, type ServerSettings } from './settings';
import type { InitializationOptions } from './trust';

export const DOCUMENT_SELECTOR = [
    { scheme: 'file', language: 'python' },
    { scheme: 'untitled', language: 'python' },
    { scheme: 'vscode-notebook-cell', language: 'python' },
];

export interface ClientHooks {
    /** The contract's settings object for a scope (the `workspace/configuration` reply). */
    settingsFor(scope: Uri | undefined): ServerSettings;
    /** The server's connection closed (it exited); called before the client decides to restart it. */
    onClosed(): void;
    /** The server stopped for good after crashing repeatedly. */
    onGaveUp(message: string): void;
    /** "Compare policies" answered `result` for the site at `args` ([uri, position]): show it. */
    compared(result: Comparison, args: unknown[]): void;
}

export function createClient(
    launch: ServerCommand,
    cwd: string,
    initializationOptions: InitializationOptions,
    log: LogOutputChannel,
    hooks: ClientHooks,
): LanguageClient {
    let client: LanguageClient | undefined = undefined;
    // The client's default policy (restart, but stop after 4 crashes within 3 minutes), made
    // once per client so that it counts; we only add the message when it gives up.
    let fallback: ErrorHandler | undefined = undefined;
    const clientOptions: LanguageClientOptions = {
        documentSelector: DOCUMENT_SELECTOR,
        outputChannel: log,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        stdioOptions: {
            stdout: (input, channel) => readline.createInterface({ input }).on('line', (line) => channel.info(line)),
            stderr: (input, channel) =>
                readline.createInterface({ input }).on('line', (line) => channel[stderrLevel(line)](line)),
        },
        initializationOptions,
        middleware: {
            // "Compare policies" and "Run policies on the device" answer the comparison: show it beside the
            // code. The panel asks only for what it reads (RENDERINGS), unless the caller said what it wants.
            executeCommand: async (command, args, next) => {
                const comparing = command === COMPARE_POLICIES || command === RUN_POLICIES;
                const result = await next(command, comparing && args.length === 2 ? [...args, { answer: RENDERINGS }] : args);
                if (comparing && result?.view) {
                    hooks.compared(result as Comparison, args.slice(0, 2));
                }
                return result;
            },
            workspace: {
                configuration: async (params, token, next) => {
                    const answers = await next(params, token);
                    if (!Array.isArray(answers)) {
                        return answers;
                    }
                    return params.items.map((item, index) =>
                        item.section === SECTION
                            ? hooks.settingsFor(item.scopeUri ? client?.protocol2CodeConverter.asUri(item.scopeUri) : undefined)
                            : answers[index],
                    );
                },
            },
        },
        errorHandler: {
            error: (error, message, count) => fallback!.error(error, message, count),
            closed: async () => {
                // Synchronously, before the pending `initialize` of a server that died while
                // starting rejects: the extension must know that this was a crash, not a refusal.
                hooks.onClosed();
                const result = await fallback!.closed();
                if (result.action === CloseAction.DoNotRestart) {
                    hooks.onGaveUp(result.message ?? 'The jax-lsp server crashed.');
                    return { ...result, handled: true };
                }
                return result;
            },
        },
    };
    client = new LanguageClient(SECTION, 'jax-lsp', { command: launch.command, args: launch.args, options: { cwd } }, clientOptions);
    fallback = client.createDefaultErrorHandler(4);
    return client;
}

// jax-lsp for VS Code: runs the jax-lsp language server for Python files.
import * as os from 'node:os';
import {
    CodeActionKind,
    commands,
    ProgressLocation,
    Range,
    window,
    workspace,
    type CodeAction,
    type ExtensionContext,
    type WorkspaceConfiguration,
    type LogOutputChannel,
    type Uri,
} from 'vscode';
import { DidChangeConfigurationNotification, ExecuteCommandRequest, State, type LanguageClient } from 'vscode-languageclient/node';
import { RENDERINGS, type AdviceChanged, type Comparison } from './common/comparison';
import { ADVICE_CHANGED, COMPARE_POLICIES, ComparisonView } from './common/comparisonView';
import { errorText } from './common/log';
import { chooseInterpreter, InterpreterError, interpreterProblem, probeInterpreter, serverCommand } from './common/python';
import { activeInterpreter, hasPythonExtension, onActiveInterpreterChange } from './common/pythonExtension';
import { createClient } from './common/server';
import { expandPath, importStrategy, RESTART_KEYS, SECTION, serverSettings, showNotifications, type ServerSettings } from './common/settings';
import { ServerStatus, type StatusSnapshot } from './common/status';
import { traceRefusal } from './common/trust';

const FIX_ALL_KIND = CodeActionKind.SourceFixAll.append(SECTION);
const TRACE_COMMAND = 'jax-lsp.tracePolicy';

/** What other extensions (and the end-to-end test) can ask: the server's state. */
export interface JaxLspApi {
    status(): StatusSnapshot;
}

/** The values the user set, in the narrowest scope that has one; undefined when unset. */
function userValues(config: WorkspaceConfiguration): (key: string) => unknown {
    return (key) => {
        const values = config.inspect(key);
        return values?.workspaceFolderValue ?? values?.workspaceValue ?? values?.globalValue;
    };
}

// How long after a failed start the server's exit may still be reported.
const EXIT_GRACE_MS = 2000;

/** Whether `promise` settles within `ms` milliseconds. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    return Promise.race([promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
}

class JaxLsp {
    private client: LanguageClient | undefined;
    private interpreter: string | undefined;
    private serverKind = '';
    private pending: Promise<void> = Promise.resolve();

    constructor(
        private readonly context: ExtensionContext,
        private readonly log: LogOutputChannel,
        private readonly status: ServerStatus,
        private readonly comparison: ComparisonView,
    ) {}

    /** Stops the running server (if any) and starts a new one; calls run one after another. */
    restart(): Promise<void> {
        this.pending = this.pending
            .then(() => this.stop())
            .then(() => this.start())
            .catch((error) => this.fail(`jax-lsp could not start: ${errorText(error)}`, false));
        return this.pending;
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (client) {
            try {
                await client.dispose(); // stops the server first
            } catch (error) {
                this.log.warn(`Stopping the server: ${errorText(error)}`);
            }
        }
    }

    settingsFor(scope: Uri | undefined): ServerSettings {
        return serverSettings(userValues(workspace.getConfiguration(SECTION, scope)), this.interpreter);
    }

    configurationChanged(): void {
        if (this.client?.isRunning()) {
            void this.client.sendNotification(DidChangeConfigurationNotification.type, {
                settings: { [SECTION]: this.settingsFor(this.root()) },
            });
        }
    }

    interpreterSettingIsSet(): boolean {
        return Boolean(workspace.getConfiguration(SECTION).get<string>('interpreter'));
    }

    async traceAtCursor(): Promise<unknown> {
        const refusal = traceRefusal(workspace.isTrusted);
        if (refusal) {
            this.log.info(`Trace refused: ${refusal}`);
            void window.showWarningMessage(refusal, 'Manage Workspace Trust').then((choice) => {
                if (choice) {
                    void commands.executeCommand('workbench.trust.manage');
                }
            });
            return undefined;
        }
        const editor = window.activeTextEditor;
        if (!editor || editor.document.languageId !== 'python') {
            void window.showInformationMessage('jax-lsp: put the cursor on a remat policy in a Python file to trace it.');
            return undefined;
        }
        const client = this.client;
        if (!client?.isRunning()) {
            void window.showErrorMessage('jax-lsp: the server is not running (see jax-lsp: Show Logs).');
            return undefined;
        }
        const params = {
            command: TRACE_COMMAND,
            arguments: [editor.document.uri.toString(), client.code2ProtocolConverter.asPosition(editor.selection.active)],
        };
        try {
            const result = await window.withProgress({ location: ProgressLocation.Window, title: 'jax-lsp: tracing policy' }, () =>
                client.sendRequest(ExecuteCommandRequest.type, params),
            );
            // The details arrive as "jax-lsp trace" diagnostics and hovers; this says how it went.
            const { status, message } = (result ?? {}) as { status?: string; message?: string };
            if (message) {
                // A checkpoint without a policy (`no_policy`) is no problem: JAX's default applies.
                const fine = status === 'ok' || status === 'no_policy';
                void (fine ? window.showInformationMessage : window.showWarningMessage)(`jax-lsp trace: ${message}`);
            }
            return result;
        } catch (error) {
            void window.showErrorMessage(`jax-lsp: ${errorText(error)}`);
            return undefined;
        }
    }

    /** Applies the server's `source.fixAll.jax-lsp` action to the active file; true if it changed. */
    async fixAll(): Promise<boolean> {
        const document = window.activeTextEditor?.document;
        if (!document || document.languageId !== 'python') {
            return false;
        }
        const whole = new Range(0, 0, document.lineCount, 0);
        const actions =
            (await commands.executeCommand<CodeAction[]>('vscode.executeCodeActionProvider', document.uri, whole, FIX_ALL_KIND.value)) ?? [];
        const action = actions.find((candidate) => candidate.kind && FIX_ALL_KIND.contains(candidate.kind) && candidate.edit);
        if (!action?.edit || action.edit.size === 0) {
            void window.showInformationMessage('jax-lsp: nothing to fix in this file.');
            return false;
        }
        return workspace.applyEdit(action.edit);
    }

    private root(): Uri | undefined {
        return workspace.workspaceFolders?.[0]?.uri;
    }

    private async start(): Promise<void> {
        const config = workspace.getConfiguration(SECTION);
        const trusted = workspace.isTrusted;
        const root = this.root();
        const extensionRoot = this.context.extensionPath;
        const setting = config.get<string>('interpreter');
        const pathContext = { workspaceFolder: root?.fsPath, userHome: os.homedir() };
        const choice = chooseInterpreter(setting && expandPath(setting, pathContext), await activeInterpreter(this.log, root));
        const strategy = importStrategy((key) => config.get(key));
        this.interpreter = choice.command;
        this.status.set('starting', choice.command);
        this.log.info(`Python ${choice.command} (from ${choice.source}), importStrategy ${strategy}, workspace ${trusted ? 'trusted' : 'not trusted'}`);

        let launch;
        try {
            const info = await probeInterpreter(choice.command, { cwd: extensionRoot });
            const problem = interpreterProblem(info, strategy);
            if (problem) {
                throw new InterpreterError(problem);
            }
            // The command as configured (a wrapper script may set up the environment); the status shows
            // what it resolves to.
            launch = serverCommand(choice.command, strategy, extensionRoot);
            this.interpreter = info.executable;
            this.serverKind = strategy === 'useBundled' ? 'bundled server' : 'server from the environment';
        } catch (error) {
            if (error instanceof InterpreterError) {
                this.fail(error.message, true);
                return;
            }
            throw error;
        }
        this.log.info(`Starting: ${[launch.command, ...launch.args].join(' ')}`);
        let closed: () => void = () => undefined;
        const exited = new Promise<void>((resolve) => (closed = resolve));
        const client = createClient(launch, extensionRoot, { settings: this.settingsFor(root), trusted }, this.log, {
            settingsFor: (scope) => this.settingsFor(scope),
            onClosed: () => closed(),
            onGaveUp: (message) => this.fail(message, false),
            compared: (result, args) => this.comparison.show(result, args),
        });
        client.onNotification(ADVICE_CHANGED, (params: AdviceChanged) =>
            this.comparison.adviceChanged(params, async (args) => {
                try {
                    const asked = { command: COMPARE_POLICIES, arguments: [...args, { answer: RENDERINGS }] };
                    return (await client.sendRequest(ExecuteCommandRequest.type, asked)) as Comparison;
                } catch (error) {
                    this.log.warn(`Refreshing Compare policies: ${errorText(error)}`);
                    return undefined;
                }
            }),
        );
        client.onDidChangeState((event) => {
            if (this.client !== client) {
                return;
            }
            if (event.newState === State.Running) {
                this.status.set('ready', this.interpreter, this.serverKind);
            } else if (event.newState === State.Starting) {
                this.status.set('starting', this.interpreter, this.serverKind);
            }
        });
        this.client = client;
        try {
            await client.start();
        } catch (error) {
            // A server that dies while starting fails the start first (its pipe breaks, or the
            // pending `initialize` is dropped), its exit comes after: the client restarts it then,
            // and says when it gives up. Any other failure is the start's own.
            if (!(await settlesWithin(exited, EXIT_GRACE_MS))) {
                throw error;
            }
            this.log.warn(`The server exited while starting (${errorText(error)}); restarting it.`);
        }
    }

    private fail(message: string, offerInterpreter: boolean): void {
        this.log.error(message);
        this.status.set('error', this.interpreter, message);
        if (showNotifications((key) => workspace.getConfiguration(SECTION).get(key)) === 'off') {
            return;
        }
        const actions = offerInterpreter ? ['Select Interpreter', 'Show Logs'] : ['Restart Server', 'Show Logs'];
        void window.showErrorMessage(message, ...actions).then((choice) => {
            if (choice === 'Show Logs') {
                this.log.show();
            } else if (choice === 'Restart Server') {
                void this.restart();
            } else if (choice === 'Select Interpreter') {
                void (hasPythonExtension()
                    ? commands.executeCommand('python.setInterpreter')
                    : commands.executeCommand('workbench.action.openSettings', `${SECTION}.interpreter`));
            }
        });
    }
}

let extension: JaxLsp | undefined;

export async function activate(context: ExtensionContext): Promise<JaxLspApi> {
    const log = window.createOutputChannel('jax-lsp', { log: true });
    const status = new ServerStatus();
    const comparison = new ComparisonView();
    extension = new JaxLsp(context, log, status, comparison);
    const jaxLsp = extension;
    context.subscriptions.push(
        log,
        status,
        comparison,
        commands.registerCommand('jax-lsp.restart', () => jaxLsp.restart()),
        commands.registerCommand('jax-lsp.showLogs', () => log.show()),
        commands.registerCommand('jax-lsp.traceAtCursor', () => jaxLsp.traceAtCursor()),
        commands.registerCommand('jax-lsp.fixAll', () => jaxLsp.fixAll()),
        workspace.onDidChangeConfiguration((event) => {
            if (RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
                void jaxLsp.restart();
            } else if (event.affectsConfiguration(SECTION)) {
                jaxLsp.configurationChanged();
            }
        }),
        workspace.onDidGrantWorkspaceTrust(() => void jaxLsp.restart()),
    );
    const followPython = await onActiveInterpreterChange(log, () => {
        if (!jaxLsp.interpreterSettingIsSet()) {
            void jaxLsp.restart();
        }
    });
    if (followPython) {
        context.subscriptions.push(followPython);
    }
    await jaxLsp.restart();
    return { status: () => status.snapshot };
}

export async function deactivate(): Promise<void> {
    await extension?.stop();
}

// Which Python runs the server, whether it can, and the command line that starts it.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ImportStrategy } from './settings';

export const MIN_PYTHON: readonly [number, number] = [3, 10];

export type InterpreterSource = 'setting' | 'python extension' | 'PATH';

export interface InterpreterChoice {
    command: string;
    source: InterpreterSource;
}

/** The `jax-lsp.interpreter` setting if set, else the Python extension's environment, else PATH. */
export function chooseInterpreter(setting: string | undefined, fromPythonExtension: string | undefined): InterpreterChoice {
    if (setting && setting.trim()) {
        return { command: setting.trim(), source: 'setting' };
    }
    if (fromPythonExtension) {
        return { command: fromPythonExtension, source: 'python extension' };
    }
    return { command: process.platform === 'win32' ? 'python' : 'python3', source: 'PATH' };
}

export interface InterpreterInfo {
    executable: string;
    version: [number, number, number];
    hasJaxLsp: boolean;
}

/** Raised when the interpreter cannot run the server; the message is shown to the user as is. */
export class InterpreterError extends Error {}

// Runs under any Python, even 2.7, so that an old one is named with its version.
const PROBE = [
    'import json, sys',
    'try:',
    '    import importlib.util',
    '    has = importlib.util.find_spec("jax_lsp") is not None',
    'except Exception:',
    '    has = False',
    'print(json.dumps({"executable": sys.executable, "version": list(sys.version_info[:3]), "hasJaxLsp": has}))',
].join('\n');

export interface ProbeOptions {
    /** Run it where the server will run: never in the workspace, whose modules would shadow the stdlib. */
    cwd: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
}

/** Runs the interpreter once to learn its version and whether `jax_lsp` is importable. */
export function probeInterpreter(command: string, options: ProbeOptions): Promise<InterpreterInfo> {
    const { cwd, env = process.env, timeoutMs = 15000 } = options;
    return new Promise((resolve, reject) => {
        execFile(command, ['-c', PROBE], { cwd, env, timeout: timeoutMs }, (error, stdout, stderr) => {
            if (error) {
                const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : (stderr.trim() || error.message);
                reject(new InterpreterError(`Cannot run the Python interpreter "${command}": ${reason}`));
                return;
            }
            try {
                resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as InterpreterInfo);
            } catch {
                reject(new InterpreterError(`"${command}" did not answer like a Python interpreter: ${stdout.slice(0, 200)}`));
            }
        });
    });
}

/** Why this interpreter cannot run the server with this import strategy, or undefined. */
export function interpreterProblem(info: InterpreterInfo, strategy: ImportStrategy): string | undefined {
    const [major, minor] = info.version;
    if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
        return `jax-lsp needs Python >= ${MIN_PYTHON.join('.')}, but ${info.executable} is Python ${info.version.join('.')}.`;
    }
    if (strategy === 'fromEnvironment' && !info.hasJaxLsp) {
        return `jax-lsp is not installed in ${info.executable}: run "${info.executable} -m pip install jax-lsp", or set jax-lsp.importStrategy to "useBundled".`;
    }
    return undefined;
}

export interface ServerCommand {
    command: string;
    args: string[];
}

/** `python -m jax_lsp serve`, or the bundled copy through a launcher that puts bundled/libs first. */
export function serverCommand(python: string, strategy: ImportStrategy, extensionRoot: string): ServerCommand {
    if (strategy === 'fromEnvironment') {
        return { command: python, args: ['-m', 'jax_lsp', 'serve'] };
    }
    const launcher = path.join(extensionRoot, 'bundled', 'tool', 'serve.py');
    if (!fs.existsSync(path.join(extensionRoot, 'bundled', 'libs', 'jax_lsp'))) {
        throw new InterpreterError(
            `The bundled jax-lsp server is missing from ${extensionRoot} (build it with "npm run bundle-python"), or set jax-lsp.importStrategy to "fromEnvironment".`,
        );
    }
    return { command: python, args: [launcher] };
}

// The Python extension (ms-python.python), used when it is installed: never required.
import { PythonExtension, PVSC_EXTENSION_ID } from '@vscode/python-extension';
import { extensions, type Disposable, type LogOutputChannel, type Uri } from 'vscode';
import { errorText } from './log';

export function hasPythonExtension(): boolean {
    return extensions.getExtension(PVSC_EXTENSION_ID) !== undefined;
}

/** The Python extension's active interpreter for `resource`, or undefined without that extension. */
export async function activeInterpreter(log: LogOutputChannel, resource?: Uri): Promise<string | undefined> {
    if (!hasPythonExtension()) {
        return undefined;
    }
    try {
        const api = await PythonExtension.api();
        const environment = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
        return environment?.executable.uri?.fsPath;
    } catch (error) {
        log.warn(`Could not ask the Python extension for its interpreter: ${errorText(error)}`);
        return undefined;
    }
}

/** Calls `listener` whenever the user selects another interpreter in the Python extension. */
export async function onActiveInterpreterChange(log: LogOutputChannel, listener: () => void): Promise<Disposable | undefined> {
    if (!hasPythonExtension()) {
        return undefined;
    }
    try {
        const api = await PythonExtension.api();
        return api.environments.onDidChangeActiveEnvironmentPath(() => listener());
    } catch (error) {
        log.warn(`Could not follow the Python extension's interpreter: ${errorText(error)}`);
        return undefined;
    }
}

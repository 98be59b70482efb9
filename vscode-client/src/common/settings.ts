// The extension's settings, and the settings object the server receives (see the contract:
// initializationOptions.settings and the `workspace/configuration` reply for "jax-lsp").

export const SECTION = 'jax-lsp';

export type ImportStrategy = 'useBundled' | 'fromEnvironment';
export type ShowNotifications = 'off' | 'onError' | 'always';

/**
 * Reads one key of the "jax-lsp" section: the value the user set (in any scope), or undefined
 * when unset. (`WorkspaceConfiguration.get` does not fit: for a key without a default it invents
 * one from the type, e.g. `[]` for `select`, which would turn every rule off.)
 */
export type SettingReader = (key: string) => unknown;

/** Where `${workspaceFolder}` and `~` point when a path setting is expanded. */
export interface PathContext {
    workspaceFolder?: string;
    userHome: string;
}

export interface ServerSettings {
    select?: string[];
    ignore?: string[];
    src?: string[];
    jediBudget?: number;
    newRemat?: string;
    'target-version'?: string;
    severity?: Record<string, string>;
    interpreter?: string;
    trace?: { onSave?: boolean; timeout?: number; memoryLimitMb?: number };
    advise?: { onSave?: boolean; budget?: string; target?: string };
    showNotifications?: string;
    logLevel?: string;
}

/** Settings read once per server start: changing one of them restarts the server. */
export const RESTART_KEYS = ['interpreter', 'importStrategy'] as const;

export function importStrategy(get: SettingReader): ImportStrategy {
    return get('importStrategy') === 'fromEnvironment' ? 'fromEnvironment' : 'useBundled';
}

export function showNotifications(get: SettingReader): ShowNotifications {
    const value = get('showNotifications');
    return value === 'off' || value === 'always' ? value : 'onError';
}

export function expandPath(value: string, context: PathContext): string {
    let result = value.trim();
    if (context.workspaceFolder !== undefined) {
        result = result.split('${workspaceFolder}').join(context.workspaceFolder);
    }
    result = result.split('${userHome}').join(context.userHome);
    if (result === '~' || result.startsWith('~/')) {
        result = context.userHome + result.slice(1);
    }
    // A relative path (not a bare command looked up on PATH) is relative to the workspace.
    if (context.workspaceFolder !== undefined && result.includes('/') && !result.startsWith('/')) {
        result = `${context.workspaceFolder}/${result.replace(/^\.\//, '')}`;
    }
    return result;
}

/**
 * The contract's settings object. Keys the user left unset are left out: the server's defaults
 * are the manifest's, and `[tool.jax-lsp]` in pyproject.toml (which the server applies first)
 * must not be overridden by editor defaults. Values are passed as they are: the server
 * validates them and says what it ignored.
 */
export function serverSettings(get: SettingReader, interpreter: string | undefined): ServerSettings {
    const result: ServerSettings = {};
    const select = get('select');
    if (select !== undefined && select !== null) {
        result.select = select as string[];
    }
    const ignore = get('ignore');
    if (ignore !== undefined && ignore !== null) {
        result.ignore = ignore as string[];
    }
    const src = get('src');
    if (src !== undefined && src !== null) {
        result.src = src as string[];
    }
    const jediBudget = get('jediBudget');
    if (jediBudget !== undefined && jediBudget !== null) {
        result.jediBudget = jediBudget as number;
    }
    const newRemat = get('newRemat');
    if (newRemat !== undefined && newRemat !== null) {
        result.newRemat = newRemat as string;
    }
    const targetVersion = get('targetVersion');
    if (targetVersion !== undefined && targetVersion !== null) {
        result['target-version'] = targetVersion as string;
    }
    const severity = get('severity');
    if (severity !== undefined && severity !== null) {
        result.severity = severity as Record<string, string>;
    }
    if (interpreter) {
        result.interpreter = interpreter;
    }
    const trace: ServerSettings['trace'] = {};
    for (const key of ['onSave', 'timeout', 'memoryLimitMb'] as const) {
        const value = get(`trace.${key}`);
        if (value !== undefined && value !== null) {
            (trace as Record<string, unknown>)[key] = value;
        }
    }
    if (Object.keys(trace).length > 0) {
        result.trace = trace;
    }
    const advise: ServerSettings['advise'] = {};
    for (const key of ['onSave', 'budget', 'target'] as const) {
        const value = get(`advise.${key}`);
        if (value !== undefined && value !== null) {
            (advise as Record<string, unknown>)[key] = value;
        }
    }
    if (Object.keys(advise).length > 0) {
        result.advise = advise;
    }
    for (const key of ['showNotifications', 'logLevel'] as const) {
        const value = get(key);
        if (value !== undefined && value !== null) {
            result[key] = value as string;
        }
    }
    return result;
}

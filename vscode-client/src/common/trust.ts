// Workspace Trust: what changes in Restricted Mode. The analysis never runs workspace code,
// so diagnostics and fixes stay on; tracing runs the user's code, so it is off.
import type { ServerSettings } from './settings';

/** The values `WorkspaceConfiguration.inspect` reports for one setting. */
export interface InspectedSetting<T> {
    globalValue?: T;
    workspaceValue?: T;
    workspaceFolderValue?: T;
}

export interface InitializationOptions {
    settings: ServerSettings;
    trusted: boolean;
}

export const TRACE_REFUSED =
    'Tracing a policy runs your code, so it is off in Restricted Mode. Trust this workspace to trace policies.';

/**
 * `jax-lsp.interpreter` is a restricted setting: an untrusted workspace must not choose the
 * program the extension runs, so only the user's own (global) value counts there.
 */
export function trustedValue<T>(inspected: InspectedSetting<T> | undefined, trusted: boolean): T | undefined {
    if (!inspected) {
        return undefined;
    }
    if (!trusted) {
        return inspected.globalValue;
    }
    return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/** Why tracing is refused, or undefined when it is allowed. */
export function traceRefusal(trusted: boolean): string | undefined {
    return trusted ? undefined : TRACE_REFUSED;
}

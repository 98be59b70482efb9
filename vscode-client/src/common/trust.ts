// Workspace Trust: what changes in Restricted Mode. The analysis never runs workspace code,
// so diagnostics and fixes stay on; tracing runs the user's code, so it is off. (The
// interpreter is a restricted setting in package.json: VS Code itself withholds its workspace
// value in Restricted Mode.)
import type { ServerSettings } from './settings';

export interface InitializationOptions {
    settings: ServerSettings;
    trusted: boolean;
}

export const TRACE_REFUSED =
    'Tracing a policy runs your code, so it is off in Restricted Mode. Trust this workspace to trace policies.';

/** Why tracing is refused, or undefined when it is allowed. */
export function traceRefusal(trusted: boolean): string | undefined {
    return trusted ? undefined : TRACE_REFUSED;
}

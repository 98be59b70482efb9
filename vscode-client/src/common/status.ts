// The status bar item: server state and the interpreter it runs in.
import { StatusBarAlignment, ThemeColor, window, type StatusBarItem } from 'vscode';

export type ServerState = 'starting' | 'ready' | 'error' | 'stopped';

export interface StatusSnapshot {
    state: ServerState;
    interpreter?: string;
    detail?: string;
}

const ICONS: Record<ServerState, string> = {
    starting: '$(sync~spin)',
    ready: '$(check)',
    error: '$(error)',
    stopped: '$(circle-slash)',
};

export class ServerStatus {
    private readonly item: StatusBarItem;
    private current: StatusSnapshot = { state: 'stopped' };

    constructor() {
        this.item = window.createStatusBarItem('jax-lsp.status', StatusBarAlignment.Right, 100);
        this.item.name = 'jax-lsp';
        this.item.command = 'jax-lsp.showLogs';
    }

    get snapshot(): StatusSnapshot {
        return { ...this.current };
    }

    set(state: ServerState, interpreter?: string, detail?: string): void {
        this.current = { state, interpreter, detail };
        this.item.text = `${ICONS[state]} jax-lsp`;
        this.item.tooltip = [`jax-lsp: ${state}`, interpreter && `Python: ${interpreter}`, detail].filter(Boolean).join('\n');
        this.item.backgroundColor = state === 'error' ? new ThemeColor('statusBarItem.errorBackground') : undefined;
        this.item.show();
    }

    dispose(): void {
        this.item.dispose();
    }
}

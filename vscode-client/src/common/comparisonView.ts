// The one "Compare policies" panel: a webview beside the code, reused by every comparison,
// redrawn from what the server sends when the advice it shows changes (one answer per click: the
// notification carries the comparison), never a document to save.
import { ViewColumn, window, type Disposable, type WebviewPanel } from 'vscode';
import { comparisonHtml, type Comparison } from './comparison';

export const COMPARE_POLICIES = 'jax-lsp.comparePolicies';
export const RUN_POLICIES = 'jax-lsp.runPolicies'; // Compare with each step run on the device (docs/accelerators.md)
export const ADVICE_CHANGED = 'jax-lsp/adviceChanged';
const VIEW_TYPE = 'jax-lsp.comparison';

/** The server's `jax-lsp/adviceChanged` notification; `comparison`: the site's comparison in the
 * renderings this client's Compare asked for, where the advice is fresh and a comparison was shown. */
export interface AdviceChanged {
    uri: string;
    position: { line: number; character: number };
    stale: string | null;
    comparison?: Comparison;
}

export class ComparisonView implements Disposable {
    private panel: WebviewPanel | undefined;
    private shown: { uri: string; line: number; result: Comparison } | undefined;

    /** Shows `result` (the comparison of the site at `args` = [uri, position]), in the panel if open. */
    show(result: Comparison, args: unknown[]): void {
        const [uri, position] = args as [string, { line: number }];
        this.shown = { uri, line: position.line, result };
        if (!this.panel) {
            this.panel = window.createWebviewPanel(VIEW_TYPE, 'Compare policies', { viewColumn: ViewColumn.Beside, preserveFocus: true }, {
                enableScripts: false,
                enableFindWidget: true,
            });
            this.panel.onDidDispose(() => {
                this.panel = undefined;
                this.shown = undefined;
            });
        } else {
            this.panel.reveal(undefined, true);
        }
        this.render();
    }

    /**
     * The advice of a site changed: if it is the one shown, redraw it from the comparison the
     * notification carries, or, stale, say so without running anything. Only a server that sends
     * no comparison (an older one) is asked again (`compare`).
     */
    async adviceChanged(params: AdviceChanged, compare: (args: unknown[]) => Promise<Comparison | undefined>): Promise<void> {
        const shown = this.shown;
        // The site shown (a stale one may have moved since): another site's advice leaves the panel as it is.
        if (!this.panel || !shown || shown.uri !== params.uri || (shown.line !== params.position.line && !shown.result.stale)) return;
        if (params.stale) {
            shown.line = params.position.line;
            shown.result = { ...shown.result, stale: params.stale };
            this.render();
            return;
        }
        const result = params.comparison ?? (await compare([params.uri, params.position]));
        if (result && this.shown === shown) {
            this.shown = { uri: params.uri, line: params.position.line, result };
            this.render();
        }
    }

    private render(): void {
        if (this.panel && this.shown) {
            this.panel.webview.html = comparisonHtml(this.shown.result, this.panel.webview.cspSource);
        }
    }

    dispose(): void {
        this.panel?.dispose();
    }
}

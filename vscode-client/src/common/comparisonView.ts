// The one "Compare policies" panel: a webview beside the code, reused by every comparison,
// redrawn from what the server sends when the advice it shows changes (one answer per click: the
// notification carries the comparison), never a document to save.
import { ViewColumn, window, type Disposable, type WebviewPanel } from 'vscode';
import { comparisonHtml, refreshed, type AdviceChanged, type Comparison, type Shown } from './comparison';

export const COMPARE_POLICIES = 'jax-lsp.comparePolicies';
export const RUN_POLICIES = 'jax-lsp.runPolicies'; // Compare with each step run on the device (docs/accelerators.md)
export const ADVICE_CHANGED = 'jax-lsp/adviceChanged';
const VIEW_TYPE = 'jax-lsp.comparison';

export class ComparisonView implements Disposable {
    private panel: WebviewPanel | undefined;
    private shown: Shown | undefined;

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
     * The advice of a site changed: redraw the panel if it shows that site (`refreshed`), from
     * the comparison the notification carries; only a server that sends none is asked (`compare`).
     */
    async adviceChanged(params: AdviceChanged, compare: (args: unknown[]) => Promise<Comparison | undefined>): Promise<void> {
        if (!this.panel) return;
        const shown = this.shown;
        const next = refreshed(shown, params);
        if (next === 'ask') {
            const result = await compare([params.uri, params.position]);
            if (result && this.shown === shown) {
                this.shown = { uri: params.uri, line: params.position.line, result };
                this.render();
            }
        } else if (next) {
            this.shown = next;
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

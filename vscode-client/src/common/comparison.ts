// "Compare policies" as a page for a webview panel: the server's chart (SVG) and its table of the
// candidates as the server lays it out for every editor (`view`, docs/advise.md): the one table
// model's columns (each header's word, its abbreviation and its meaning), the policies abbreviated
// with the key a user sets, a legend giving each in full. It fits any panel from 460 px: headers
// wrap, and below 640 px they show their abbreviations and the cells may wrap between a figure and
// its unit; nothing is cut. No vscode import: unit-tested in node.

/** A column as the server's table model describes it (jax_lsp/trace/advisor/table.py). */
export interface ColumnHeader {
    word: string;
    short: string;
    unit: string;
    meaning: string;
}

/** The server's layout of the comparison (`view`: jax_lsp/trace/advisor/comparison.py), the one
 * Neovim's buffer shows as text: abbreviated labels, the cells of each column, the legend. */
export interface ComparisonLayout {
    title: string;
    facts: string;
    budget?: string;
    message?: string;
    columns: string[];
    headers?: ColumnHeader[];
    rows: { mark: string; label: string; name?: string; policy: string; cells: string[] }[];
    legend: { label: string; policy: string; error: string | null }[];
    notes: string[];
}

/** What the quick fix offers at the site: the policy the table marks as suggested, and where no
 * edit can make it, what to set and where (`note`). */
export interface QuickFix {
    policy: string;
    title: string | null;
    note: string | null;
}

/** What `jax-lsp.comparePolicies` answers (the keys this page reads). */
export interface Comparison {
    chart?: string;
    stale?: string | null;
    quick_fix?: QuickFix | null;
    view: ComparisonLayout;
}

/** The renderings this page reads: what it asks `jax-lsp.comparePolicies` for. */
export const RENDERINGS = ['view', 'chart'];

/** The server's `jax-lsp/adviceChanged` notification; `comparison`: the site's comparison in the
 * renderings this client's Compare asked for, where the advice is fresh and a comparison was shown. */
export interface AdviceChanged {
    uri: string;
    position: { line: number; character: number };
    stale: string | null;
    comparison?: Comparison;
}

/** The comparison a panel shows, and of which site. */
export interface Shown {
    uri: string;
    line: number;
    result: Comparison;
}

/**
 * What a panel showing `shown` does when the advice of a site changed: nothing where it shows
 * another site; show it as it is, outdated, where the advice went stale; redraw from the
 * comparison the notification carries (one answer per click: it asks nothing); ask again only a
 * server that sends none (`ask`).
 */
export function refreshed(shown: Shown | undefined, changed: AdviceChanged): Shown | 'ask' | undefined {
    // The site shown (a stale one may have moved since): another site's advice leaves the panel as it is.
    if (!shown || shown.uri !== changed.uri || (shown.line !== changed.position.line && !shown.result.stale)) return undefined;
    if (changed.stale) return { uri: shown.uri, line: changed.position.line, result: { ...shown.result, stale: changed.stale } };
    if (changed.comparison) return { uri: changed.uri, line: changed.position.line, result: changed.comparison };
    return 'ask';
}

const MARKS: Record<string, string> = { current: '*&nbsp;', suggested: '+&nbsp;' };
const NARROW = 640; // px: below it, the headers show their abbreviations

const escape = (text: string): string =>
    text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 12px; }
h2 { font-size: 1.2em; margin: 12px 0 4px; overflow-wrap: anywhere; }
p { margin: 4px 0; overflow-wrap: anywhere; }
.stale { border-left: 3px solid var(--vscode-editorWarning-foreground); padding: 4px 8px; }
.fix { border-left: 3px solid var(--vscode-editorInfo-foreground); padding: 4px 8px; }
.chart { display: block; max-width: 100%; height: auto; margin: 8px 0; background: #fff; }
table { border-collapse: collapse; width: 100%; font-size: 0.95em; }
th, td { padding: 2px 4px; border-bottom: 1px solid var(--vscode-panel-border, #8884); text-align: right; white-space: nowrap; }
th { white-space: normal; vertical-align: bottom; }
th .short { display: none; }
th:first-child, td:first-child { text-align: left; white-space: normal; }
td:first-child code { overflow-wrap: anywhere; }
tr.current td, tr.suggested td { font-weight: bold; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; font-size: 0.9em; }
dt { font-family: var(--vscode-editor-font-family); }
dd { margin: 0; font-family: var(--vscode-editor-font-family); overflow-wrap: anywhere; }
.note { opacity: 0.8; font-size: 0.9em; }
@media (max-width: ${NARROW}px) {
    body { padding: 0 6px; }
    table { font-size: 0.9em; }
    th .word { display: none; }
    th .short { display: inline; }
    th, td { padding: 2px 2px; }
    td { white-space: normal; }
    td:first-child { min-width: 9.5em; } /* a name wraps at its spaces, not anywhere in it */
    dl { grid-template-columns: 1fr; }
    dd { margin-left: 12px; }
}
`;

/** A column's header: its word, or where the panel is narrow its abbreviation; its meaning on hover. */
function header(word: string, described: ColumnHeader | undefined): string {
    if (!described) return `<th>${escape(word)}</th>`;
    const short = described.short !== word ? `<span class="short">${escape(described.short)}</span>` : '';
    const shown = short ? `<span class="word">${escape(word)}</span>${short}` : escape(word);
    return `<th title="${escape(`${word}: ${described.meaning}`)}">${shown}</th>`;
}

/** The whole page; `cspSource` is the webview's (its images are data: URLs, it runs no script). */
export function comparisonHtml(result: Comparison, cspSource: string): string {
    const { view } = result;
    const rows = view.rows.map((row) => {
        const name = `${MARKS[row.mark] ?? ''}<code title="${escape(row.name ?? row.policy)}">${escape(row.label)}</code>`;
        return `<tr class="${escape(row.mark)}">${[name, ...row.cells.map(escape)].map((c) => `<td>${c}</td>`).join('')}</tr>`;
    });
    const headers = ['<th>policy</th>', ...view.columns.map((word, i) => header(word, view.headers?.[i]))];
    const legend = view.legend.map(
        (entry) =>
            `<dt>${escape(entry.label)}</dt><dd>${escape(entry.policy)}${entry.error ? ` (rejected by JAX: ${escape(entry.error)})` : ''}</dd>`,
    );
    const chart =
        typeof result.chart === 'string'
            ? `<img class="chart" alt="Memory against recompute of every candidate policy" src="data:image/svg+xml;base64,${Buffer.from(result.chart, 'utf8').toString('base64')}">`
            : '';
    const table = view.message
        ? `<p>${escape(view.message)}</p>`
        : `<table>
<thead><tr>${headers.join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>
${result.quick_fix?.note ? `<p class="fix">To use the suggestion: ${escape(result.quick_fix.note)}</p>` : ''}
${view.notes.map((note) => `<p class="note">${escape(note)}.</p>`).join('\n')}
<h3>Legend</h3>
<dl>${legend.join('')}</dl>`;
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline';">
<style>${STYLE}</style><title>Compare policies</title></head>
<body>
<h2>Compare policies: ${escape(view.title)}</h2>
<p>${escape([view.facts, view.budget].filter(Boolean).join(' · '))}</p>
${result.stale ? `<p class="stale">Outdated: ${escape(result.stale)}.</p>` : ''}
${chart}
${table}
</body></html>
`;
}

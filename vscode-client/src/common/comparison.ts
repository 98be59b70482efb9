// "Compare policies" as a page for a webview panel: the server's chart (SVG) and a table of the
// candidates built from its JSON contract (docs/advise.md), with the columns that matter and the
// policies abbreviated, a legend giving each in full. No vscode import: unit-tested in node.

/** One candidate of the contract's `policies` (the keys this page reads). */
export interface ContractPolicy {
    policy: string;
    current: boolean;
    computed_bytes: number | null;
    argument_bytes: number | null;
    host_bytes: number | null;
    peak_bytes: number | null;
    recompute_flops: number | null;
    residuals: unknown[];
    error?: string;
}

/** What `jax-lsp.comparePolicies` answers. */
export interface Comparison {
    chart?: string;
    stale?: string | null;
    advice: {
        target: { path: string; line: number };
        jax: string | null;
        platform: string | null;
        policies: ContractPolicy[];
        suggested: { policy: string; budget: number } | null;
    };
}

const PREFIX = /^jax\.checkpoint_policies\./;
const SHORT: Record<string, string> = {
    nothing_saveable: 'nothing',
    everything_saveable: 'everything',
    dots_saveable: 'dots',
    checkpoint_dots: 'dots',
    dots_with_no_batch_dims_saveable: 'dots, no batch',
    checkpoint_dots_with_no_batch_dims: 'dots, no batch',
    save_only_these_names: 'names',
    save_and_offload_only_these_names: 'offload names',
    offload_dot_with_no_batch_dims: 'offload dots',
    save_anything_except_these_names: 'all but names',
    save_any_names_but_these: 'names but',
    save_from_both_policies: 'both',
};
const MAX_LABEL = 24;
const MARKS: Record<string, string> = { current: '*&nbsp;', suggested: '+&nbsp;' };

/** A short name for a policy expression: `names(h, y)`, `offload dots`, `dots`. */
export function abbreviate(policy: string): string {
    const text = policy.replace(PREFIX, '');
    const call = /^([A-Za-z_][\w.]*)\(([\s\S]*)\)$/.exec(text);
    const name = call ? call[1] : text;
    let label = SHORT[name.replace(PREFIX, '')] ?? name.replace(/^.*\./, '');
    if (call && /names/.test(name)) {
        const names = [...call[2].matchAll(/['"]([^'"]*)['"]/g)].map((m) => m[1]).filter((n) => !/^(device|pinned_host|unpinned_host)$/.test(n));
        label += `(${names.join(', ')})`;
    }
    return label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL - 1)}…` : label;
}

/** Each policy's label, unique (a second `dots` is `dots #2`). */
export function labels(policies: string[]): string[] {
    const seen = new Map<string, number>();
    return policies.map((policy) => {
        const label = abbreviate(policy);
        const count = (seen.get(label) ?? 0) + 1;
        seen.set(label, count);
        return count === 1 ? label : `${label} #${count}`;
    });
}

export function formatBytes(count: number | null): string {
    if (count === null || count === undefined) return '?';
    if (count < 1024) return `${count} B`;
    let value = count;
    for (const unit of ['KiB', 'MiB', 'GiB', 'TiB']) {
        value /= 1024;
        if (value < 1024 || unit === 'TiB') {
            return value < 100 ? `${Number(value.toPrecision(3))} ${unit}` : `${Math.round(value)} ${unit}`;
        }
    }
    return `${count} B`;
}

export function formatFlops(count: number | null): string {
    if (count === null || count === undefined) return '?';
    if (count === 0) return '0';
    let value = count;
    for (const unit of ['FLOP', 'kFLOP', 'MFLOP', 'GFLOP', 'TFLOP', 'PFLOP']) {
        if (value < 1000 || unit === 'PFLOP') return unit === 'FLOP' ? `${count} FLOP` : `${Number(value.toPrecision(3))} ${unit}`;
        value /= 1000;
    }
    return String(count);
}

const escape = (text: string): string =>
    text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The host traffic of an offloading policy, each way per step: its residuals go to the host in the forward pass and come back. */
function traffic(policy: ContractPolicy): string {
    return policy.host_bytes ? formatBytes(policy.host_bytes) : '0';
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 12px; }
h2 { font-size: 1.2em; margin: 12px 0 4px; }
p { margin: 4px 0; }
.stale { border-left: 3px solid var(--vscode-editorWarning-foreground); padding: 4px 8px; }
.chart { display: block; max-width: 100%; height: auto; margin: 8px 0; background: #fff; }
table { border-collapse: collapse; width: 100%; font-size: 0.95em; }
th, td { padding: 2px 4px; border-bottom: 1px solid var(--vscode-panel-border, #8884); text-align: right; white-space: nowrap; }
th { white-space: normal; vertical-align: bottom; }
th:first-child, td:first-child { text-align: left; white-space: normal; }
tr.current td, tr.suggested td { font-weight: bold; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; font-size: 0.9em; }
dt { font-family: var(--vscode-editor-font-family); }
dd { margin: 0; font-family: var(--vscode-editor-font-family); overflow-wrap: anywhere; }
.note { opacity: 0.8; font-size: 0.9em; }
`;

/** The whole page; `cspSource` is the webview's (its images are data: URLs, it runs no script). */
export function comparisonHtml(result: Comparison, cspSource: string): string {
    const { advice } = result;
    const policies = advice.policies;
    const names = labels(policies.map((p) => p.policy));
    const suggested = advice.suggested?.policy;
    const where = `${advice.target.path}:${advice.target.line}`;
    const environment = [advice.jax && `jax ${advice.jax}`, advice.platform].filter(Boolean).join(', ');
    const budget = advice.suggested
        ? `suggested for a budget of ${formatBytes(advice.suggested.budget)} (peak, est.)`
        : 'no suggestion: set jax-lsp.advise.budget (e.g. 24GiB) to get one';
    const rows = policies.map((p, i) => {
        const mark = p.current ? 'current' : p.policy === suggested ? 'suggested' : '';
        const name = `${MARKS[mark] ?? ''}<code title="${escape(p.policy)}">${escape(names[i])}</code>`;
        const cells = p.error
            ? [name, 'failed', '', '', '', '']
            : [
                  name,
                  String(p.residuals.length),
                  formatBytes(p.computed_bytes),
                  formatBytes(p.peak_bytes),
                  formatFlops(p.recompute_flops),
                  traffic(p),
              ];
        return `<tr class="${mark}">${cells.map((c) => `<td>${c}</td>`).join('')}</tr>`;
    });
    const held = policies.find((p) => !p.error)?.argument_bytes ?? null;
    const legend = policies.map((p, i) => `<dt>${escape(names[i])}</dt><dd>${escape(p.policy)}${p.error ? ` (failed: ${escape(p.error.split('\n')[0])})` : ''}</dd>`);
    const chart =
        typeof result.chart === 'string'
            ? `<img class="chart" alt="Memory against recompute of every candidate policy" src="data:image/svg+xml;base64,${Buffer.from(result.chart, 'utf8').toString('base64')}">`
            : '';
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline';">
<style>${STYLE}</style><title>Compare policies</title></head>
<body>
<h2>Compare policies: ${escape(where)}</h2>
<p>${escape(environment || 'no JAX')} · ${escape(budget)}</p>
${result.stale ? `<p class="stale">Outdated: ${escape(result.stale)}.</p>` : ''}
${chart}
<table>
<thead><tr><th>policy</th><th>saves</th><th>computed</th><th>peak (est.)</th><th>recompute</th><th title="to the host and back, per step">host ⇄</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>
<p class="note">* current policy, + suggested. computed: what the policy keeps on the device; the step also holds ${escape(formatBytes(held))} of arguments whatever the policy. peak (est.): the step's temporary device memory at its peak, estimated from its trace. host ⇄: what an offloading policy moves to the host in the forward pass, and back in the backward pass, every step (its time is measured by no column).</p>
<h3>Legend</h3>
<dl>${legend.join('')}</dl>
</body></html>
`;
}

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparisonHtml, type ComparisonLayout } from '../../src/common/comparison';

const OFFLOAD =
    "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=['h', 'y'], offload_src='device', offload_dst='pinned_host')";

// A view as the server lays it out (jax_lsp/trace/advisor/comparison.py; its tests check the layout).
const VIEW: ComparisonLayout = {
    title: 'mlp.py:14',
    facts: 'jax 0.10.2, cpu',
    budget: 'suggested for a budget of 6 KiB (peak, est.); offload names(h, y) measured 3.2x slower',
    columns: ['saves', 'computed', 'peak (est.)', 'recompute', 'host ⇄', 'step'],
    rows: [
        { mark: 'current', label: 'dots', policy: 'jax.checkpoint_policies.dots_saveable', cells: ['2', '1.5 KiB', '7 KiB', '0', '0', '38 ms'] },
        { mark: '', label: 'offload names(h, y)', policy: OFFLOAD, cells: ['2', '0 B', '7 KiB', '16.4 kFLOP', '1.5 KiB', '123 ms'] },
        { mark: '', label: 'broken', policy: 'broken', cells: ['failed', '', '', '', '', ''] },
    ],
    legend: [
        { label: 'dots', policy: 'jax.checkpoint_policies.dots_saveable', error: null },
        { label: 'offload names(h, y)', policy: OFFLOAD, error: null },
        { label: 'broken', policy: 'broken', error: 'TypeError: <no>' },
    ],
    notes: ['* current policy, + suggested', 'step: the compiled step\'s median time on TPU v5 lite (tpu), on random inputs'],
};

test('the page: the chart as a data: image, the server\'s rows and columns, the legend in full', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>é · 5 MiB</text></svg>';
    const html = comparisonHtml({ chart: svg, stale: null, view: VIEW }, 'vscode-resource:');
    const image = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html);
    assert.ok(image);
    assert.equal(Buffer.from(image[1], 'base64').toString('utf8'), svg);
    assert.match(html, /<th>policy<\/th><th>saves<\/th>.*<th title="to the host and back, per step">host ⇄<\/th><th>step<\/th>/);
    assert.match(html, /<tr class="current"><td>\*&nbsp;<code title="jax.checkpoint_policies.dots_saveable">dots<\/code><\/td><td>2<\/td><td>1.5 KiB<\/td><td>7 KiB<\/td><td>0<\/td><td>0<\/td><td>38 ms<\/td><\/tr>/);
    assert.match(html, /offload names\(h, y\)<\/code><\/td><td>2<\/td><td>0 B<\/td><td>7 KiB<\/td><td>16.4 kFLOP<\/td><td>1.5 KiB<\/td><td>123 ms<\/td>/);
    assert.ok(html.includes(`<dt>offload names(h, y)</dt><dd>${OFFLOAD}</dd>`));
    assert.match(html, /<dd>broken \(failed: TypeError: &lt;no&gt;\)<\/dd>/);
    assert.match(html, /jax 0.10.2, cpu · suggested for a budget of 6 KiB \(peak, est.\); offload names\(h, y\) measured 3.2x slower/);
    assert.match(html, /<p class="note">step: the compiled step's median time on TPU v5 lite \(tpu\), on random inputs.<\/p>/);
    assert.match(html, /default-src 'none'; img-src vscode-resource: data:/);
    assert.doesNotMatch(html, /<script/);
    assert.doesNotMatch(html, /class="stale"/);
});

test('an outdated comparison says so; one that could not be advised shows why, no table', () => {
    assert.match(comparisonHtml({ stale: 'the site changed', view: VIEW }, ''), /<p class="stale">Outdated: the site changed.<\/p>/);
    const failed = comparisonHtml({ view: { ...VIEW, rows: [], legend: [], notes: [], message: 'No example for the checkpoint' } }, '');
    assert.match(failed, /<p>No example for the checkpoint<\/p>/);
    assert.doesNotMatch(failed, /<table>/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparisonHtml, refreshed, RENDERINGS, type ComparisonLayout, type Shown } from '../../src/common/comparison';

const OFFLOAD =
    "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=['h', 'y'], offload_src='device', offload_dst='pinned_host')";

const header = (word: string, short: string, meaning: string) => ({ word, short, unit: 'bytes', meaning });

// A view as the server lays it out (jax_lsp/trace/advisor/comparison.py; its tests check the layout).
const VIEW: ComparisonLayout = {
    title: 'mlp.py:14',
    facts: 'jax 0.10.2, cpu',
    budget: 'suggested for a budget of 6 KiB, by peak (est.); offload names(h, y) measured 3.2x slower',
    columns: ['saves', 'computed', 'host', 'peak (est.)', 'recompute', 'step'],
    headers: [
        header('saves', 'saves', 'the arrays JAX keeps for the backward pass'),
        header('computed', 'comp.', 'what the policy keeps on the device'),
        header('host', 'host', 'what an offloading policy keeps in the host\'s memory'),
        header('peak (est.)', 'peak est.', 'the step\'s temporary device memory at its peak'),
        header('recompute', 'recomp.', 'FLOPs done again'),
        header('step', 'step', 'the compiled step\'s median time on TPU v5 lite (tpu), on random inputs'),
    ],
    rows: [
        {
            mark: 'current',
            label: "dots (remat_policy='checkpoint_dots')",
            name: "dots_saveable (remat_policy='checkpoint_dots')",
            policy: 'jax.checkpoint_policies.dots_saveable',
            cells: ['2', '1.5 KiB', '0', '7 KiB', '0', '38 ms'],
        },
        { mark: '', label: 'offload names(h, y)', policy: OFFLOAD, cells: ['2', '0', '1.5 KiB', '7 KiB', '16.4 kFLOP', '123 ms'] },
        { mark: '', label: 'broken', policy: 'broken', cells: ['-', '-', '-', '-', '-', '-'] },
    ],
    legend: [
        { label: "dots (remat_policy='checkpoint_dots')", policy: 'jax.checkpoint_policies.dots_saveable', error: null },
        { label: 'offload names(h, y)', policy: OFFLOAD, error: null },
        { label: 'broken', policy: 'broken', error: 'TypeError: <no>' },
    ],
    notes: ['* current policy', 'step: the compiled step\'s median time on TPU v5 lite (tpu), on random inputs'],
};

test('the page: the chart as a data: image, the server\'s rows and columns, the legend in full', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>é · 5 MiB</text></svg>';
    const html = comparisonHtml({ chart: svg, stale: null, view: VIEW }, 'vscode-resource:');
    const image = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html);
    assert.ok(image);
    assert.equal(Buffer.from(image[1], 'base64').toString('utf8'), svg);
    assert.match(html, /<th>policy<\/th><th title="saves: the arrays JAX keeps for the backward pass">saves<\/th>/);
    assert.match(html, /<th title="host: what an offloading policy keeps in the host's memory">host<\/th>/);
    assert.match(
        html,
        /<tr class="current"><td>\*&nbsp;<code title="dots_saveable \(remat_policy='checkpoint_dots'\)">dots \(remat_policy='checkpoint_dots'\)<\/code><\/td><td>2<\/td><td>1.5 KiB<\/td><td>0<\/td><td>7 KiB<\/td><td>0<\/td><td>38 ms<\/td><\/tr>/,
    );
    assert.match(html, /offload names\(h, y\)<\/code><\/td><td>2<\/td><td>0<\/td><td>1.5 KiB<\/td><td>7 KiB<\/td><td>16.4 kFLOP<\/td><td>123 ms<\/td>/);
    assert.ok(html.includes(`<dt>offload names(h, y)</dt><dd>${OFFLOAD}</dd>`));
    assert.match(html, /<dd>broken \(rejected by JAX: TypeError: &lt;no&gt;\)<\/dd>/);
    assert.match(html, /jax 0.10.2, cpu · suggested for a budget of 6 KiB, by peak \(est.\); offload names\(h, y\) measured 3.2x slower/);
    assert.match(html, /<p class="note">step: the compiled step's median time on TPU v5 lite \(tpu\), on random inputs.<\/p>/);
    assert.match(html, /default-src 'none'; img-src vscode-resource: data:/);
    assert.doesNotMatch(html, /<script/);
    assert.doesNotMatch(html, /class="stale"/);
});

test('a narrow panel shows each header\'s abbreviation and lets the cells wrap; a wide one the words', () => {
    const html = comparisonHtml({ view: VIEW }, '');
    assert.match(html, /<th title="computed: what the policy keeps on the device"><span class="word">computed<\/span><span class="short">comp\.<\/span><\/th>/);
    assert.match(html, /<th title="peak \(est\.\): [^"]*"><span class="word">peak \(est\.\)<\/span><span class="short">peak est\.<\/span><\/th>/);
    const narrow = /@media \(max-width: (\d+)px\) \{([\s\S]*?)\n\}/.exec(html);
    assert.ok(narrow, 'no narrow layout');
    assert.ok(Number(narrow[1]) >= 460);
    assert.match(narrow[2], /th \.word \{ display: none; \}/);
    assert.match(narrow[2], /th \.short \{ display: inline; \}/);
    assert.match(narrow[2], /td \{ white-space: normal; \}/);
    assert.match(html, /\nth \.short \{ display: none; \}/);
    // a server without headers (an older one): the words alone
    const plain = comparisonHtml({ view: { ...VIEW, headers: undefined } }, '');
    assert.match(plain, /<th>policy<\/th><th>saves<\/th><th>computed<\/th>/);
});

test('the panel asks only for the renderings it reads', () => {
    assert.deepEqual(RENDERINGS, ['view', 'chart']);
});

test('one answer per click: the panel redraws from the notification, asking nothing', () => {
    const shown: Shown = { uri: 'file:///w/mlp.py', line: 13, result: { view: VIEW, stale: null } };
    const fresh = { view: { ...VIEW, title: 'mlp.py:14 again' }, chart: '<svg/>', stale: null };
    const at = { uri: shown.uri, position: { line: 13, character: 20 } };
    // a fresh advice with its comparison: redrawn from it
    assert.deepEqual(refreshed(shown, { ...at, stale: null, comparison: fresh }), { uri: shown.uri, line: 13, result: fresh });
    // stale: the same comparison, outdated, at the site's new line; no request
    const stale = refreshed(shown, { ...at, position: { line: 13, character: 0 }, stale: 'the site changed' });
    assert.deepEqual(stale, { uri: shown.uri, line: 13, result: { view: VIEW, stale: 'the site changed' } });
    // another site, or another file: the panel stays as it is
    assert.equal(refreshed(shown, { ...at, position: { line: 40, character: 0 }, stale: null, comparison: fresh }), undefined);
    assert.equal(refreshed(shown, { ...at, uri: 'file:///w/other.py', stale: null, comparison: fresh }), undefined);
    assert.equal(refreshed(undefined, { ...at, stale: null, comparison: fresh }), undefined);
    // only a server that sends no comparison (an older one) is asked again
    assert.equal(refreshed(shown, { ...at, stale: null }), 'ask');
});

test('where no edit can make the suggestion, the panel says what to set and where', () => {
    const note = "Set self.config.remat_policy to 'checkpoint_dots': no literal default of remat_policy in the project";
    const html = comparisonHtml({ view: VIEW, quick_fix: { policy: 'jax.checkpoint_policies.dots_saveable', title: null, note } }, '');
    assert.match(html, /<\/table>\n<p class="fix">To use the suggestion: Set self.config.remat_policy to 'checkpoint_dots': no literal default/);
    assert.doesNotMatch(comparisonHtml({ view: VIEW, quick_fix: { policy: 'p', title: 'Use the suggested policy: p', note: null } }, ''), /class="fix"/);
});

test('an outdated comparison says so; one that could not be advised shows why, no table', () => {
    assert.match(comparisonHtml({ stale: 'the site changed', view: VIEW }, ''), /<p class="stale">Outdated: the site changed.<\/p>/);
    const failed = comparisonHtml({ view: { ...VIEW, rows: [], legend: [], notes: [], message: 'No example for the checkpoint' } }, '');
    assert.match(failed, /<p>No example for the checkpoint<\/p>/);
    assert.doesNotMatch(failed, /<table>/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { abbreviate, comparisonHtml, formatBytes, formatFlops, labels, type ContractPolicy } from '../../src/common/comparison';

const OFFLOAD =
    "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=['h', 'y'], offload_src='device', offload_dst='pinned_host')";

function policy(name: string, extra: Partial<ContractPolicy> = {}): ContractPolicy {
    return {
        policy: name, current: false, computed_bytes: 1536, argument_bytes: 4608, host_bytes: 0, peak_bytes: 7168,
        recompute_flops: 0, residuals: [{}, {}], ...extra,
    };
}

test('policy names are abbreviated, long ones cut, each label unique', () => {
    assert.equal(abbreviate('jax.checkpoint_policies.dots_saveable'), 'dots');
    assert.equal(abbreviate("jax.checkpoint_policies.save_only_these_names('h', 'y')"), 'names(h, y)');
    assert.equal(abbreviate(OFFLOAD), 'offload names(h, y)');
    assert.equal(abbreviate("jax.checkpoint_policies.offload_dot_with_no_batch_dims('device', 'pinned_host')"), 'offload dots');
    assert.equal(abbreviate("POLICIES['a_very_long_key_that_goes_on_and_on']").length, 24);
    assert.deepEqual(labels(['jax.checkpoint_policies.dots_saveable', "POLICIES['dots']", 'jax.checkpoint_policies.checkpoint_dots']), [
        'dots', "POLICIES['dots']", 'dots #2',
    ]);
});

test('sizes and FLOPs read as the server writes them', () => {
    assert.deepEqual([0, 512, 1536, 7168, 5 * 2 ** 20, 33 * 2 ** 20 + 1].map(formatBytes), ['0 B', '512 B', '1.5 KiB', '7 KiB', '5 MiB', '33 MiB']);
    assert.deepEqual([0, 16400, 4.29e9, null].map(formatFlops), ['0', '16.4 kFLOP', '4.29 GFLOP', '?']);
});

test('the page: the chart as a data: image, a row per candidate, host traffic, the legend in full', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>é · 5 MiB</text></svg>';
    const html = comparisonHtml({
        chart: svg,
        stale: null,
        advice: {
            target: { path: 'mlp.py', line: 14 }, jax: '0.10.2', platform: 'cpu',
            policies: [
                policy('jax.checkpoint_policies.dots_saveable', { current: true }),
                policy(OFFLOAD, { computed_bytes: 0, host_bytes: 1536, recompute_flops: 16400 }),
                policy('broken', { error: 'TypeError: no\nmore' }),
            ],
            suggested: null,
        },
    }, 'vscode-resource:');
    const image = /src="data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)"/.exec(html);
    assert.ok(image);
    assert.equal(Buffer.from(image[1], 'base64').toString('utf8'), svg);
    assert.match(html, /<tr class="current"><td>\*&nbsp;<code title="jax.checkpoint_policies.dots_saveable">dots<\/code><\/td><td>2<\/td><td>1.5 KiB<\/td><td>7 KiB<\/td><td>0<\/td><td>0<\/td><\/tr>/);
    assert.match(html, /offload names\(h, y\)<\/code><\/td><td>2<\/td><td>0 B<\/td><td>7 KiB<\/td><td>16.4 kFLOP<\/td><td>1.5 KiB<\/td>/);
    assert.ok(html.includes(`<dt>offload names(h, y)</dt><dd>${OFFLOAD}</dd>`));
    assert.match(html, /<dd>broken \(failed: TypeError: no\)<\/dd>/);
    assert.match(html, /no suggestion: set jax-lsp.advise.budget/);
    assert.match(html, /default-src 'none'; img-src vscode-resource: data:/);
    assert.doesNotMatch(html, /<script/);
    assert.doesNotMatch(html, /class="stale"/);
    assert.match(comparisonHtml({ stale: 'the site changed', advice: { target: { path: 'm.py', line: 1 }, jax: null, platform: null, policies: [], suggested: null } }, ''), /<p class="stale">Outdated: the site changed.<\/p>/);
});

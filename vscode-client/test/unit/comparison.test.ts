import assert from 'node:assert/strict';
import { test } from 'node:test';
import { comparisonMarkdown } from '../../src/common/comparison';

test('the chart is a data: image after the heading, above the table', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>é · 5 MiB</text></svg>';
    const shown = comparisonMarkdown({ markdown: '### Remat policies\n\n| | policy |\n', chart: svg });
    const match = /^### Remat policies\n\n!\[[^\]]+\]\(data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)\)\n\n\| \| policy \|\n$/.exec(shown);
    assert.ok(match, shown);
    assert.equal(Buffer.from(match[1], 'base64').toString('utf8'), svg);
    assert.match(comparisonMarkdown({ markdown: 'Not advised', chart: svg }), /^Not advised\n\n!\[/);
});

test('without a chart the table alone', () => {
    assert.equal(comparisonMarkdown({ markdown: '| | policy |\n' }), '| | policy |\n');
});

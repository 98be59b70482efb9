import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { TRACE_REFUSED, traceRefusal } from '../../src/common/trust';

test('tracing is refused, with the reason, only when untrusted', () => {
    assert.equal(traceRefusal(true), undefined);
    assert.equal(traceRefusal(false), TRACE_REFUSED);
    assert.match(TRACE_REFUSED, /Restricted Mode/);
    assert.match(TRACE_REFUSED, /runs your code/);
});

test('the manifest declares limited support and restricts the interpreter setting', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, 'limited');
    assert.deepEqual(trust.restrictedConfigurations, ['jax-lsp.interpreter']);
});

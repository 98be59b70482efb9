import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { TRACE_REFUSED, traceRefusal, trustedValue } from '../../src/common/trust';

test('untrusted: the workspace cannot choose the interpreter, only the user can', () => {
    const inspected = { globalValue: '/usr/bin/python3', workspaceValue: './evil/python', workspaceFolderValue: './evil2' };
    assert.equal(trustedValue(inspected, false), '/usr/bin/python3');
    assert.equal(trustedValue({ workspaceValue: './evil/python' }, false), undefined);
});

test('trusted: folder over workspace over user', () => {
    assert.equal(trustedValue({ globalValue: 'g', workspaceValue: 'w', workspaceFolderValue: 'f' }, true), 'f');
    assert.equal(trustedValue({ globalValue: 'g', workspaceValue: 'w' }, true), 'w');
    assert.equal(trustedValue({ globalValue: 'g' }, true), 'g');
    assert.equal(trustedValue(undefined, true), undefined);
});

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

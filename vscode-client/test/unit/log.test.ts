import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stderrLevel } from '../../src/common/log';

test("the server's own info records on stderr are trace level (the client gets them as logMessage too)", () => {
    assert.equal(stderrLevel('2026-11-30 10:40:12,262 INFO jax_lsp.server: jax-lsp 0.1.0, pull diagnostics'), 'trace');
    assert.equal(stderrLevel('2026-11-30 10:40:12,262 WARNING jax_lsp: workspace/configuration failed'), 'trace');
});

test('errors, tracebacks and anything else on stderr are errors', () => {
    assert.equal(stderrLevel('2026-11-30 10:40:12,262 ERROR jax_lsp.server: Applying the settings failed'), 'error');
    assert.equal(stderrLevel('Traceback (most recent call last):'), 'error');
    assert.equal(stderrLevel("ModuleNotFoundError: No module named 'pygls'"), 'error');
    assert.equal(stderrLevel('2026-11-30 10:40:12,262 INFO pygls.protocol: not ours'), 'error');
});

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { expandPath, importStrategy, serverSettings, showNotifications, type SettingReader } from '../../src/common/settings';

// package.json is the source of truth for the settings VS Code shows and their defaults.
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
const properties: Record<string, { default?: unknown; enum?: string[] }> = manifest.contributes.configuration.properties;

/** What `workspace.getConfiguration("jax-lsp").get` returns when the user set `user`. */
function reader(user: Record<string, unknown> = {}): SettingReader {
    return (key) => (key in user ? user[key] : properties[`jax-lsp.${key}`]?.default);
}

const CONTRACT_KEYS = ['select', 'ignore', 'severity', 'interpreter', 'trace', 'showNotifications', 'logLevel'];

test('defaults: only the contract keys, and nothing that would override [tool.jax-lsp]', () => {
    const settings = serverSettings(reader(), '/usr/bin/python3');
    assert.deepEqual(settings, {
        interpreter: '/usr/bin/python3',
        trace: { onSave: false, timeout: 20, memoryLimitMb: 4096 },
        showNotifications: 'onError',
        logLevel: 'info',
    });
    for (const key of Object.keys(settings)) {
        assert.ok(CONTRACT_KEYS.includes(key), key);
    }
});

test("the user's rule settings are passed as they are, an explicit empty list included", () => {
    const settings = serverSettings(reader({ select: [], ignore: ['JAX106'], severity: { JAX104: 'error' } }), undefined);
    assert.deepEqual(settings.select, []);
    assert.deepEqual(settings.ignore, ['JAX106']);
    assert.deepEqual(settings.severity, { JAX104: 'error' });
    assert.equal('interpreter' in settings, false);
});

test('every setting the server receives is contributed, with the contract default', () => {
    const expected: Record<string, unknown> = {
        'trace.onSave': false,
        'trace.timeout': 20,
        'trace.memoryLimitMb': 4096,
        showNotifications: 'onError',
        logLevel: 'info',
    };
    for (const [key, value] of Object.entries(expected)) {
        assert.deepEqual(properties[`jax-lsp.${key}`]?.default, value, key);
    }
    assert.deepEqual(properties['jax-lsp.logLevel'].enum, ['error', 'warning', 'info', 'debug']);
    assert.deepEqual(properties['jax-lsp.showNotifications'].enum, ['off', 'onError', 'always']);
    for (const key of ['select', 'ignore', 'interpreter', 'importStrategy', 'severity']) {
        assert.ok(`jax-lsp.${key}` in properties, key);
    }
});

test('importStrategy: useBundled unless fromEnvironment is chosen', () => {
    assert.equal(importStrategy(reader()), 'useBundled');
    assert.equal(importStrategy(reader({ importStrategy: 'fromEnvironment' })), 'fromEnvironment');
    assert.equal(importStrategy(reader({ importStrategy: 'bogus' })), 'useBundled');
});

test('showNotifications: unknown values mean onError', () => {
    assert.equal(showNotifications(reader({ showNotifications: 'off' })), 'off');
    assert.equal(showNotifications(reader({ showNotifications: 42 })), 'onError');
});

test('interpreter paths expand ${workspaceFolder}, ${userHome} and ~', () => {
    const context = { workspaceFolder: '/ws', userHome: '/home/me' };
    assert.equal(expandPath(' ${workspaceFolder}/.venv/bin/python ', context), '/ws/.venv/bin/python');
    assert.equal(expandPath('~/venvs/jax/bin/python', context), '/home/me/venvs/jax/bin/python');
    assert.equal(expandPath('${userHome}/py', context), '/home/me/py');
    assert.equal(expandPath('/opt/~x/python', context), '/opt/~x/python');
    assert.equal(expandPath('${workspaceFolder}/py', { userHome: '/home/me' }), '${workspaceFolder}/py');
});

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { expandPath, importStrategy, serverSettings, showNotifications, type SettingReader } from '../../src/common/settings';

// package.json is the source of truth for the settings VS Code shows and their defaults.
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
const properties: Record<string, { default?: unknown; enum?: string[] }> = manifest.contributes.configuration.properties;

/** The extension's reader when the user set `user` (in any scope): undefined for unset keys. */
function reader(user: Record<string, unknown> = {}): SettingReader {
    return (key) => user[key];
}

const CONTRACT_KEYS = ['select', 'ignore', 'src', 'jediBudget', 'newRemat', 'target-version', 'severity', 'interpreter', 'trace', 'advise', 'showNotifications', 'logLevel'];

test('nothing set: only the interpreter, so [tool.jax-lsp] and the server defaults apply', () => {
    assert.deepEqual(serverSettings(reader(), '/usr/bin/python3'), { interpreter: '/usr/bin/python3' });
});

test('everything set: exactly the contract keys, trace options nested', () => {
    const settings = serverSettings(
        reader({
            select: ['JAX1'], ignore: ['JAX106'], src: ['.', 'libs'], jediBudget: 0.5, newRemat: 'always', targetVersion: 'py312', severity: { JAX104: 'error' }, importStrategy: 'fromEnvironment',
            'trace.onSave': true, 'trace.timeout': 5, 'trace.memoryLimitMb': 1024, showNotifications: 'off', logLevel: 'debug',
            'advise.onSave': true, 'advise.budget': '24GiB', 'advise.target': 'v5e-8',
        }),
        '/venv/bin/python',
    );
    assert.deepEqual(Object.keys(settings).sort(), [...CONTRACT_KEYS].sort());
    assert.deepEqual(settings.trace, { onSave: true, timeout: 5, memoryLimitMb: 1024 });
    assert.deepEqual(settings.advise, { onSave: true, budget: '24GiB', target: 'v5e-8' });
    assert.equal(settings.logLevel, 'debug');
});

test("the user's values are passed as they are (the server validates), an explicit empty list included", () => {
    const settings = serverSettings(reader({ select: [], ignore: 'JAX106', 'trace.timeout': -1 }), undefined);
    assert.deepEqual(settings, { select: [], ignore: 'JAX106', trace: { timeout: -1 } });
});

test('the manifest contributes every setting, with the server\'s defaults', () => {
    const expected: Record<string, unknown> = {
        'trace.onSave': false,
        'trace.timeout': 20,
        'trace.memoryLimitMb': 4096,
        'advise.onSave': false,
        'advise.budget': null,
        'advise.target': null,
        showNotifications: 'onError',
        logLevel: 'info',
    };
    for (const [key, value] of Object.entries(expected)) {
        assert.deepEqual(properties[`jax-lsp.${key}`]?.default, value, key);
    }
    assert.deepEqual(properties['jax-lsp.logLevel'].enum, ['error', 'warning', 'info', 'debug']);
    assert.deepEqual(properties['jax-lsp.showNotifications'].enum, ['off', 'onError', 'always']);
    assert.deepEqual(properties['jax-lsp.newRemat'].enum, ['detect', 'always']);
    for (const key of ['select', 'ignore', 'src', 'interpreter', 'importStrategy', 'severity']) {
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

test('relative interpreter paths are relative to the workspace; bare commands stay for PATH', () => {
    const context = { workspaceFolder: '/ws', userHome: '/home/me' };
    assert.equal(expandPath('.venv/bin/python', context), '/ws/.venv/bin/python');
    assert.equal(expandPath('./.venv/bin/python', context), '/ws/.venv/bin/python');
    assert.equal(expandPath('python3.12', context), 'python3.12');
    assert.equal(expandPath('.venv/bin/python', { userHome: '/home/me' }), '.venv/bin/python');
});

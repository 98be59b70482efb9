import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { chooseInterpreter, InterpreterError, interpreterProblem, probeInterpreter, serverCommand } from '../../src/common/python';

const PYTHON = process.env.PYTHON || 'python3';
const REPO = path.resolve(__dirname, '..', '..', '..', '..');

test('the setting wins, then the Python extension, then python3 on PATH', () => {
    assert.deepEqual(chooseInterpreter('/opt/py/bin/python', '/venv/bin/python'), { command: '/opt/py/bin/python', source: 'setting' });
    assert.deepEqual(chooseInterpreter('  ', '/venv/bin/python'), { command: '/venv/bin/python', source: 'python extension' });
    assert.deepEqual(chooseInterpreter(undefined, undefined), { command: 'python3', source: 'PATH' });
});

test('Python older than 3.10 is refused, naming the version', () => {
    const problem = interpreterProblem({ executable: '/usr/bin/python3.9', version: [3, 9, 18], hasJaxLsp: true }, 'useBundled');
    assert.match(problem ?? '', /Python >= 3\.10.*python3\.9 is Python 3\.9\.18/);
    assert.equal(interpreterProblem({ executable: 'p', version: [3, 10, 0], hasJaxLsp: false }, 'useBundled'), undefined);
});

test('fromEnvironment needs jax_lsp in that interpreter; useBundled does not', () => {
    const info = { executable: '/venv/bin/python', version: [3, 12, 1] as [number, number, number], hasJaxLsp: false };
    assert.match(interpreterProblem(info, 'fromEnvironment') ?? '', /not installed in \/venv\/bin\/python.*pip install jax-lsp/);
    assert.equal(interpreterProblem({ ...info, hasJaxLsp: true }, 'fromEnvironment'), undefined);
    assert.equal(interpreterProblem(info, 'useBundled'), undefined);
});

test('probing a real interpreter gives its version and absolute path', async () => {
    const info = await probeInterpreter(PYTHON, { cwd: os.tmpdir() });
    assert.ok(path.isAbsolute(info.executable) && fs.existsSync(info.executable), info.executable);
    assert.ok(info.version[0] === 3 && info.version[1] >= 10, info.version.join('.'));
});

test('the probe sees jax_lsp where PYTHONPATH puts it', async () => {
    const info = await probeInterpreter(PYTHON, { cwd: os.tmpdir(), env: { ...process.env, PYTHONPATH: REPO } });
    assert.equal(info.hasJaxLsp, true);
});

test('a missing interpreter and a program that is not Python give clear errors', async () => {
    await assert.rejects(probeInterpreter('/nonexistent/python3', { cwd: os.tmpdir() }), (error: Error) => {
        assert.ok(error instanceof InterpreterError);
        assert.match(error.message, /Cannot run the Python interpreter "\/nonexistent\/python3": not found/);
        return true;
    });
    await assert.rejects(probeInterpreter('/bin/echo', { cwd: os.tmpdir() }), /did not answer like a Python interpreter/);
    await assert.rejects(probeInterpreter('/bin/false', { cwd: os.tmpdir() }), InterpreterError);
});

test('server command lines for both import strategies', () => {
    assert.deepEqual(serverCommand('/py', 'fromEnvironment', '/nowhere'), { command: '/py', args: ['-m', 'jax_lsp', 'serve'] });
    assert.throws(() => serverCommand('/py', 'useBundled', '/nowhere'), /bundled jax-lsp server is missing/);
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'jax-lsp-ext-'));
    try {
        fs.mkdirSync(path.join(root, 'bundled', 'libs', 'jax_lsp'), { recursive: true });
        assert.deepEqual(serverCommand('/py', 'useBundled', root), { command: '/py', args: [path.join(root, 'bundled', 'tool', 'serve.py')] });
    } finally {
        fs.rmSync(root, { recursive: true, force: true });
    }
});

// A real old interpreter: $OLD_PYTHON, else the first of these that runs; skipped without one.
const OLD_PYTHON = [process.env.OLD_PYTHON, 'python3.9', 'python3.8', 'python2.7'].find((command) => {
    try {
        return Boolean(command) && (execFileSync(command!, ['-c', 'pass'], { stdio: 'ignore' }), true);
    } catch {
        return false;
    }
});

test('a real Python older than 3.10 is probed and refused by name', { skip: !OLD_PYTHON && 'no Python < 3.10 here (set OLD_PYTHON)' }, async () => {
    const info = await probeInterpreter(OLD_PYTHON!, { cwd: os.tmpdir() });
    assert.ok(info.version[0] < 3 || info.version[1] < 10, info.version.join('.'));
    assert.match(interpreterProblem(info, 'useBundled') ?? '', /needs Python >= 3\.10, but .* is Python [23]\./);
});

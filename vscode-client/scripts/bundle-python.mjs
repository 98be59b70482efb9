// Installs the jax-lsp server (built from this repository) and requirements.txt into
// bundled/libs, for importStrategy "useBundled". $PYTHON (default python3) runs pip.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const here = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const repo = path.dirname(here);
const libs = path.join(here, 'bundled', 'libs');
const python = process.env.PYTHON || 'python3';
const pip = (...args) => execFileSync(python, ['-m', 'pip', '--disable-pip-version-check', ...args], { stdio: 'inherit' });

fs.rmSync(libs, { recursive: true, force: true });
const wheels = fs.mkdtempSync(path.join(os.tmpdir(), 'jax-lsp-wheel-'));
try {
    pip('wheel', '--quiet', '--no-deps', '--wheel-dir', wheels, repo);
    const wheel = fs.readdirSync(wheels).find((name) => name.endsWith('.whl'));
    pip('install', '--quiet', '--target', libs, '--no-compile', '--only-binary=:all:', '--implementation', 'py', '--python-version', '3.10', '--abi', 'none', '--platform', 'any', '-r', path.join(here, 'requirements.txt'));
    pip('install', '--quiet', '--target', libs, '--no-compile', '--no-deps', path.join(wheels, wheel));
} finally {
    fs.rmSync(wheels, { recursive: true, force: true });
}
// Console scripts point at the build interpreter: useless inside the extension.
fs.rmSync(path.join(libs, 'bin'), { recursive: true, force: true });
console.log(`bundled the jax-lsp server into ${path.relative(process.cwd(), libs)}`);

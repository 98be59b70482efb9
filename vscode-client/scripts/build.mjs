// Bundles the extension and its npm dependencies into dist/extension.js (vscode stays external).
import { build } from 'esbuild';

const production = !process.argv.includes('--dev');
await build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    external: ['vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
});

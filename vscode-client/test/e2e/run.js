// End-to-end test of the packaged extension in a real VS Code: code-server (VS Code's own
// workbench and Node extension host) driven by Chromium through playwright-core.
// Two windows on fresh copies of test/fixtures/workspace: a trusted one and an untrusted one
// (Restricted Mode). In each: a UI check (squiggles, Problems panel, quick-fix menu or the
// trace refusal; in the trusted one also the policy advisor's lens, inlay hints and chart on
// mlp.py, with screenshots) and suite.js run inside the extension host.
// Prints one line per check and `N passed, N failed`; exits 1 on any failure.
//
// Environment: CODE_SERVER (the code-server executable), VSIX, PYTHON (the user's interpreter in
// the trusted window: it needs jax to trace, and jax_lsp for importStrategy fromEnvironment;
// the untrusted window uses a bare venv made from it, so the bundled server must be complete),
// OUT (output folder), CHROMIUM (default /usr/bin/chromium);
// playwright-core must be resolvable (NODE_PATH).
const { spawn, execFileSync } = require('child_process');
const net = require('net');
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const { CODE_SERVER, VSIX, OUT } = process.env;
let PORT; // of the running code-server: a free one per window, so that parallel runs do not meet
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'workspace');
const SUITE = path.join(__dirname, 'suite.js');
const executable = (python) => execFileSync(python, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
const PYTHON = executable(process.env.PYTHON || 'python3');
const WORK = path.join(OUT, 'work');
const EXTENSIONS = path.join(WORK, 'extensions');

const t0 = Date.now();
const log = (...args) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...args);
const results = [];
function record(name, ok, detail) {
    results.push({ name, ok });
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${!ok && detail ? `\n     ${String(detail).split('\n').slice(0, 8).join('\n     ')}` : ''}`);
}
async function check(name, body, page) {
    try {
        await body();
        record(name, true);
    } catch (error) {
        record(name, false, (error && error.stack) || error);
        if (page) {
            await page.screenshot({ path: path.join(OUT, `failed-${results.length}.png`) }).catch(() => {});
        }
    }
}

// Everything code-server, Chromium and VS Code write stays under WORK, never in $HOME.
// ($PORT would override code-server's bind address.)
const { PORT: _ignored, ...INHERITED } = process.env;
const ENV = {
    ...INHERITED,
    XDG_CONFIG_HOME: path.join(WORK, 'xdg', 'config'),
    XDG_DATA_HOME: path.join(WORK, 'xdg', 'data'),
    XDG_CACHE_HOME: path.join(WORK, 'xdg', 'cache'),
    XDG_STATE_HOME: path.join(WORK, 'xdg', 'state'),
};

const pythons = {}; // the user's interpreter per window

function userSettings(trusted) {
    return {
        'jax-lsp.interpreter': pythons[trusted ? 'trusted' : 'untrusted'],
        'security.workspace.trust.enabled': !trusted,
        'security.workspace.trust.startupPrompt': 'never',
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'extensions.ignoreRecommendations': true,
        'files.autoSave': 'off',
        'chat.disableAIFeatures': true,
        'editor.minimap.enabled': false,
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'window.zoomLevel': 0,
        // A budget, so that the advisor suggests (without one it never does).
        'jax-lsp.advise.budget': '24MiB',
    };
}

function prepareWindow(mode) {
    const dir = path.join(WORK, mode);
    const workspace = path.join(dir, 'workspace');
    fs.cpSync(FIXTURE, workspace, { recursive: true });
    if (mode === 'untrusted') {
        // A hostile workspace: it names a program for the extension to run. Restricted Mode must ignore it.
        fs.mkdirSync(path.join(workspace, '.vscode'));
        fs.writeFileSync(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify({ 'jax-lsp.interpreter': '/nonexistent/evil-python' }));
    }
    fs.mkdirSync(path.join(dir, 'user-data', 'User'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'user-data', 'User', 'settings.json'), JSON.stringify(userSettings(mode === 'trusted'), null, 2));
    fs.writeFileSync(path.join(dir, 'config.yaml'), 'auth: none\ncert: false\n');
    return { dir, workspace };
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

async function startCodeServer(mode, dir, workspace) {
    const args = [
        '--config', path.join(dir, 'config.yaml'),
        '--bind-addr', `127.0.0.1:${PORT}`,
        '--user-data-dir', path.join(dir, 'user-data'),
        '--extensions-dir', EXTENSIONS,
        '--disable-telemetry', '--disable-update-check', '--disable-getting-started-override',
        '--reconnection-grace-time', '5',
        '--vscode-option', 'enable-smoke-test-driver',
        ...(mode === 'trusted' ? ['--disable-workspace-trust'] : []),
        workspace,
    ];
    const output = fs.openSync(path.join(dir, 'code-server.log'), 'w');
    const env = { ...ENV, JAX_LSP_E2E_MODE: mode, JAX_LSP_E2E_PYTHON: pythons[mode], JAX_LSP_E2E_RESULT: path.join(dir, 'suite-result.json') };
    // Its own process group, so that stopping it stops the extension host and the server too.
    const child = spawn(CODE_SERVER, args, { env, detached: true, stdio: ['ignore', output, output] });
    let exited = false;
    child.on('exit', () => { exited = true; });
    const stop = () => {
        try {
            process.kill(-child.pid, 'SIGTERM');
        } catch {
            // already gone
        }
    };
    for (let i = 0; i < 150 && !exited; i++) {
        try {
            const response = await fetch(`http://127.0.0.1:${PORT}/healthz`);
            if (response.ok) return stop;
        } catch {
            // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
    stop();
    throw new Error(`code-server did not start; see ${path.join(dir, 'code-server.log')}`);
}

async function openBrowser(dir) {
    const profile = fs.mkdtempSync(path.join(dir, 'chromium-'));
    return chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1400, height: 860 },
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
            '--disable-component-update', '--disable-sync'],
    });
}

async function openModel(page, workspace) {
    await page.goto(`http://127.0.0.1:${PORT}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'model.py' }).click({ timeout: 90000 });
    await page.waitForSelector('.monaco-editor .squiggly-error', { timeout: 90000 });
    await page.waitForSelector('.monaco-editor .squiggly-warning', { timeout: 30000 });
}

/** What the Compare policies webview shows, once `ready(found)` holds (it is an iframe in an iframe). */
async function comparisonPage(page, ready, timeoutMs = 30000) {
    let last;
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await page.waitForTimeout(250)) {
        for (const frame of page.frames()) {
            const found = await frame.evaluate(() => {
                const image = document.querySelector('img.chart');
                const table = document.querySelector('table');
                if (!image || !image.complete || !table) return null;
                const current = document.querySelector('tr.current code');
                const width = document.documentElement.clientWidth;
                const shown = (element) => element.getClientRects().length > 0;
                // a cell, a header or a line whose text runs past its box or past the page: cut
                const cut = Array.from(document.querySelectorAll('td, th, p, dt, dd, h2'))
                    .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > width + 1)
                    .map((e) => e.textContent);
                return {
                    width,
                    chart: {
                        width: image.naturalWidth,
                        height: image.naturalHeight,
                        scale: image.getBoundingClientRect().width / image.naturalWidth,
                        above: image.getBoundingClientRect().bottom <= table.getBoundingClientRect().top,
                    },
                    rows: table.querySelectorAll('tbody tr').length,
                    fits: table.getBoundingClientRect().right <= width + 1 && document.documentElement.scrollWidth <= width + 1,
                    cut,
                    headers: Array.from(table.querySelectorAll('th'), (th) => Array.from(th.childNodes).filter((n) => n.nodeType === 3 || shown(n)).map((n) => n.textContent).join('')),
                    current: current ? current.textContent : null,
                    budget: document.querySelector('h2 + p')?.textContent ?? null,
                    stale: document.querySelector('.stale')?.textContent ?? null,
                    legend: Array.from(document.querySelectorAll('dt'), (dt) => `${dt.textContent}: ${dt.nextElementSibling?.textContent}`),
                };
            }).catch(() => null);
            if (found) {
                last = found;
                if (ready(found)) return found;
            }
        }
    }
    throw new Error(`the Compare policies page did not show what was expected; last seen: ${JSON.stringify(last)}`);
}

/** That the page shows every column, cell and line whole (`comparisonPage`), its width in [least, most]. */
function fitsWhole(found, least, most) {
    if (!(found.width >= least && found.width <= most)) throw new Error(`the panel is ${found.width} px wide`);
    if (!found.fits) throw new Error(`the table is wider than the panel: ${JSON.stringify(found)}`);
    if (found.cut.length) throw new Error(`cut: ${JSON.stringify(found.cut)}`);
    if (!found.chart.above || found.chart.scale < 0.7) throw new Error(`the chart is too small or misplaced: ${JSON.stringify(found.chart)}`);
}

/** The Compare panel's place on the page, for a screenshot of it alone. */
async function panelBox(page) {
    const tab = await page.locator('.tabs-container .tab', { hasText: 'Compare policies' }).first().boundingBox();
    const editor = page.locator('.part.editor').first();
    const whole = await editor.boundingBox();
    return { x: tab.x, y: whole.y, width: whole.x + whole.width - tab.x, height: whole.height };
}

async function runCommand(page, title) {
    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').waitFor({ timeout: 20000 });
    await page.keyboard.type(title);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().click({ timeout: 20000 });
}

/** Ctrl+. on the line holding ``lineText``, again until the menu has a row holding ``wanted``: its text. */
async function quickFix(page, lineText, wanted, timeoutMs = 120000) {
    for (const deadline = Date.now() + timeoutMs; ;) {
        await page.locator('.monaco-editor .view-line', { hasText: lineText }).first().click({ timeout: 20000 });
        await page.keyboard.press('Control+.');
        const row = page.locator('.action-widget .monaco-list-row', { hasText: wanted }).first();
        try {
            return await row.innerText({ timeout: 3000 });
        } catch (error) {
            if (Date.now() > deadline) throw error;
            await page.keyboard.press('Escape');
            await page.waitForTimeout(2000);
        }
    }
}

/** Whether Ctrl+. on the line holding ``lineText`` offers a row holding ``wanted`` (the menu is closed after). */
async function offers(page, lineText, wanted) {
    await page.locator('.monaco-editor .view-line', { hasText: lineText }).first().click({ timeout: 20000 });
    await page.keyboard.press('Control+.');
    await page.waitForTimeout(2000);
    const found = await page.locator('.action-widget .monaco-list-row', { hasText: wanted }).count();
    await page.keyboard.press('Escape');
    return found > 0;
}

/** The workspace's settings (.vscode/settings.json) with ``changes``: VS Code reads the file again by itself. */
function changeWorkspaceSettings(workspace, changes) {
    const file = path.join(workspace, '.vscode', 'settings.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const before = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
    fs.writeFileSync(file, JSON.stringify({ ...before, ...changes }, null, 2));
}

const CONFIG_SITE = 'policy=get_gradient_checkpoint_policy';

async function uiTrusted(dir, workspace) {
    const context = await openBrowser(dir);
    try {
        const page = context.pages()[0];
        await check('trusted UI: squiggles and the Problems panel list JAX101/JAX104 at their lines', async () => {
            await openModel(page, workspace);
            await page.keyboard.press('Control+Shift+M');
            await page.waitForSelector('.markers-panel .monaco-list-row', { timeout: 30000 });
            await page.waitForFunction(() => document.querySelectorAll('.markers-panel .monaco-list-row').length >= 4, null, { timeout: 30000 });
            const problems = await page.locator('.markers-panel').innerText();
            log('Problems panel:', JSON.stringify(problems));
            for (const expected of [/JAX101\)?\s*\[Ln 9, Col 5\]/, /JAX104\)?\s*\[Ln 10, Col 8\]/, /JAX101\)?\s*\[Ln 15, Col 12\]/]) {
                if (!expected.test(problems)) throw new Error(`Problems panel lacks ${expected}`);
            }
        }, page);
        await check('trusted UI: Ctrl+. on the string comparison offers the JAX104 fix and the noqa action', async () => {
            await page.locator('.monaco-editor .view-line', { hasText: 'if prim == "dot_general"' }).click();
            await page.keyboard.press('Control+.');
            const menu = page.locator('.action-widget').first();
            await menu.waitFor({ timeout: 20000 });
            const text = await menu.innerText();
            log('Quick fix menu:', JSON.stringify(text));
            for (const title of ['jax-lsp (JAX104): Compare `prim.name`', 'Disable JAX104 for this line']) {
                if (!text.includes(title)) throw new Error(`quick-fix menu lacks "${title}"`);
            }
            await page.screenshot({ path: path.join(OUT, 'screenshot.png') });
        }, page);
        await check('trusted UI: clicking Advise policy on mlp.py shows the lens summary and the inlay hints', async () => {
            await page.keyboard.press('Escape');
            await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'mlp.py' }).click({ timeout: 20000 });
            const advise = page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Advise policy$/ });
            await advise.click({ timeout: 60000 });
            // The first advise starts JAX in the trace agent: give it time on a busy machine.
            const summary = page.locator('.monaco-editor .codelens-decoration', { hasText: /saves\s5\sarrays:\s5\sMiB\scomputed,\s33\sMiB\sof\sarguments\s·\srecomputes\s4\.29\sGFLOP\s·\speak\s\(est\.\)\s21\sMiB/ });
            await summary.waitFor({ timeout: 120000 });
            await page.waitForFunction(() => {
                const text = Array.from(document.querySelectorAll('.monaco-editor .view-lines'), (e) => e.textContent).join('\n').replace(/\s/g, ' ');
                return text.includes('saved f32[256,4096] 4 MiB') && text.includes('saved f32[256,1024] 1 MiB');
            }, null, { timeout: 30000 });
            log('Advisor lens:', JSON.stringify(await summary.innerText()));
            // docs/advise.md shows this one: the editor without the (empty) Problems panel, wide
            // enough for the site's line, no hover card over the code.
            await page.keyboard.press('Control+J');
            await page.setViewportSize({ width: 1560, height: 640 });
            await page.mouse.move(0, 0);
            await page.waitForTimeout(1000);
            await page.screenshot({ path: path.join(OUT, 'advise-vscode.png') });
            await page.setViewportSize({ width: 1400, height: 860 });
        }, page);
        await check('trusted UI: Compare policies opens one webview (chart, table that fits, legend), reused', async () => {
            await page.setViewportSize({ width: 1400, height: 860 });
            for (let click = 0; click < 2; click++) {
                await page.locator('.monaco-editor .codelens-decoration a', { hasText: /Compare policies$/ }).click({ timeout: 20000 });
                await page.waitForTimeout(1000);
            }
            const page_ = await comparisonPage(page, (found) => found.rows > 0);
            log('Compare policies page:', JSON.stringify(page_));
            if (!(page_.chart.width > 400 && page_.chart.height > 300)) throw new Error(`the chart did not render: ${JSON.stringify(page_)}`);
            if (!page_.chart.above) throw new Error('the chart is not above the table');
            if (!page_.fits) throw new Error(`the table is cut off: ${JSON.stringify(page_)}`);
            if (!page_.legend.some((entry) => entry.startsWith('names(hidden, out)'))) throw new Error('no legend entry for the current policy');
            const tabs = await page.locator('.tabs-container .tab', { hasText: 'Compare policies' }).count();
            if (tabs !== 1) throw new Error(`${tabs} Compare policies tabs`);
            const untitled = await page.locator('.tabs-container .tab', { hasText: /Untitled|\.md/ }).count();
            if (untitled) throw new Error('a Markdown document was opened');
            await page.mouse.move(0, 0);
            await page.waitForTimeout(500);
            await page.screenshot({ path: path.join(OUT, 'advise-compare-vscode.png') });
        }, page);
        await check('trusted UI: Compare fits a 460 px panel and a 1280 px one, nothing cut, the chart near its size', async () => {
            // 1280 x 800 with the Explorer open (issue 50): the panel beside mlp.py is about 460 px wide
            await page.setViewportSize({ width: 1280, height: 800 });
            await page.mouse.move(0, 0);
            const narrow = await comparisonPage(page, (found) => found.rows > 0 && found.width < 520);
            log('Compare at 1280 x 800:', JSON.stringify({ ...narrow, legend: undefined }));
            fitsWhole(narrow, 430, 520);
            if (!narrow.headers.includes('comp.') || narrow.headers.includes('computed')) throw new Error(`not abbreviated: ${narrow.headers}`);
            await page.waitForTimeout(500);
            await page.screenshot({ path: path.join(OUT, 'compare-460px.png'), clip: await panelBox(page) });
            // the side bar closed, the window wide: the panel is about 1280 px
            await page.keyboard.press('Control+B');
            await page.setViewportSize({ width: 2620, height: 900 });
            const wide = await comparisonPage(page, (found) => found.rows > 0 && found.width > 1200);
            log('Compare at 2620 x 900, no side bar:', JSON.stringify({ ...wide, legend: undefined }));
            fitsWhole(wide, 1200, 1360);
            if (!wide.headers.includes('computed') || wide.headers.includes('comp.')) throw new Error(`abbreviated: ${wide.headers}`);
            if (wide.chart.scale !== 1) throw new Error(`the chart is not at its size: ${JSON.stringify(wide.chart)}`);
            await page.mouse.move(0, 0);
            await page.waitForTimeout(500);
            await page.screenshot({ path: path.join(OUT, 'compare-1280px.png'), clip: await panelBox(page) });
            await page.keyboard.press('Control+B');
            await page.setViewportSize({ width: 1400, height: 860 });
        }, page);
        await check('trusted UI: Compare redraws when the budget setting changes', async () => {
            const before = await comparisonPage(page, (found) => found.rows > 0 && /24 MiB/.test(found.budget));
            changeWorkspaceSettings(workspace, { 'jax-lsp.advise.budget': '20MiB' });
            try {
                const after = await comparisonPage(page, (found) => found.rows > 0 && /20 MiB/.test(found.budget), 90000);
                log('Panel after the budget changed:', JSON.stringify({ before: before.budget, after: after.budget }));
            } finally {
                fs.rmSync(path.join(workspace, '.vscode'), { recursive: true, force: true }); // the user's 24 MiB again
            }
            await comparisonPage(page, (found) => found.rows > 0 && /24 MiB/.test(found.budget), 90000);
        }, page);
        await check('trusted UI: the quick fix makes the advice stale (lens and panel say so), the save advises again', async () => {
            try {
              await page.locator('.monaco-editor .view-line', { hasText: 'policy=' }).first().click();
              await page.keyboard.press('Control+.');
              const fix = page.locator('.action-widget .monaco-list-row', { hasText: 'Use the suggested policy' }).first();
              const title = await fix.innerText({ timeout: 20000 });
              log('Suggestion:', JSON.stringify(title));
              if (!/within the 24 MiB budget, on cpu\)/.test(title)) throw new Error(`the title does not say the budget and target: ${title}`);
              await fix.click();
              await page.locator('.monaco-editor .codelens-decoration', { hasText: 'Advise policy again: the site changed since it was advised' }).waitFor({ timeout: 20000 });
              const stale = await comparisonPage(page, (found) => found.stale);
              log('Panel once stale:', JSON.stringify(stale.stale));
              await page.keyboard.press('Control+S');
              await page.locator('.monaco-editor .codelens-decoration', { hasText: /recomputes 0 · peak \(est\.\) [\d.]+ MiB · step \(est\.\) [\d.]+ m?s on this CPU · jax [\d.]+, cpu · Compare policies/ }).waitFor({ timeout: 60000 });
              const fresh = await comparisonPage(page, (found) => !found.stale && found.current && found.current !== 'names(hidden, out)');
              log('Panel after the save:', JSON.stringify({ current: fresh.current, stale: fresh.stale }));
              // The editor repaints after the save once clicked (headless Chromium leaves it blank otherwise).
              await page.locator('.monaco-editor .view-line', { hasText: 'def mlp' }).first().click({ timeout: 20000 });
              await page.keyboard.press('Home'); // scrolled right by the long site line
              await page.mouse.move(0, 0);
              await page.waitForTimeout(1500);
              await page.screenshot({ path: path.join(OUT, 'advise-after-save-vscode.png') });
            } finally {
              // The extension-host suite below starts from the fixture as it was, whatever failed here.
              fs.copyFileSync(path.join(FIXTURE, 'mlp.py'), path.join(workspace, 'mlp.py'));
            }
        }, page);
        await check('trusted UI: a new jax-lsp.advise.budget advises again and offers the quick fix, with no edit or save', async () => {
            await page.keyboard.press('Escape');
            await runCommand(page, 'View: Close All Editors'); // the site's long line in full
            await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'llama.py' }).first().click({ timeout: 20000 });
            await page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Advise policy$/ }).click({ timeout: 60000 });
            await page.locator('.monaco-editor .codelens-decoration', { hasText: /Compare policies$/ }).waitFor({ timeout: 120000 });
            await quickFix(page, CONFIG_SITE, 'within the 24 MiB budget');
            await page.keyboard.press('Escape');
            changeWorkspaceSettings(workspace, { 'jax-lsp.advise.budget': '1KiB' }); // nothing fits
            for (const deadline = Date.now() + 60000; await offers(page, CONFIG_SITE, 'Use the suggested policy');) {
                if (Date.now() > deadline) throw new Error('the quick fix stayed for a budget nothing fits');
            }
            changeWorkspaceSettings(workspace, { 'jax-lsp.advise.budget': '8MiB' });
            const title = await quickFix(page, CONFIG_SITE, 'within the 8 MiB budget');
            log('Suggestion for the new budget:', JSON.stringify(title));
            await page.mouse.move(0, 0);
            await page.screenshot({ path: path.join(OUT, 'advise-budget-changed-vscode.png') });
        }, page);
        await check("trusted UI: a policy a config key chooses (EasyLM's): the quick fix sets the key's default in the config file", async () => {
            const fix = page.locator('.action-widget .monaco-list-row', { hasText: "set remat_policy to 'checkpoint_dots'" }).first();
            const title = await fix.innerText({ timeout: 20000 });
            if (!/^Use the suggested policy: set remat_policy to 'checkpoint_dots' \(llama_config\.py:9\) \(compiled [\d.]+ MiB within the 8 MiB budget, on cpu\)/.test(title)) {
                throw new Error(`the quick fix does not set the config's default: ${title}`);
            }
            await page.screenshot({ path: path.join(OUT, 'advise-config-key-vscode.png') });
            await fix.click();
            await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'llama_config.py' }).click({ timeout: 20000 });
            await page.locator('.monaco-editor .view-line', { hasText: 'config.remat_policy = "checkpoint_dots"' }).waitFor({ timeout: 20000 });
            const site = fs.readFileSync(path.join(workspace, 'llama.py'), 'utf8') === fs.readFileSync(path.join(FIXTURE, 'llama.py'), 'utf8');
            const dirty = await page.locator('.tabs-container .tab.dirty', { hasText: 'llama.py' }).count();
            if (!site || dirty) throw new Error('the quick fix edited the site');
            log('Config after the fix: remat_policy = "checkpoint_dots"; the site unchanged');
            await page.mouse.move(0, 0);
            await page.waitForTimeout(500);
            await page.screenshot({ path: path.join(OUT, 'advise-config-key-fixed-vscode.png') });
            await page.keyboard.press('Control+S');
            // the suite below expects the user's budget (24 MiB) and the fixture's config
            fs.rmSync(path.join(workspace, '.vscode'), { recursive: true, force: true });
            fs.copyFileSync(path.join(FIXTURE, 'llama_config.py'), path.join(workspace, 'llama_config.py'));
        }, page);
    } finally {
        await context.close();
    }
}

async function uiUntrusted(dir, workspace) {
    const context = await openBrowser(dir);
    try {
        const page = context.pages()[0];
        await check('untrusted UI: diagnostics still show, Trace Policy at Cursor says why it is off', async () => {
            await openModel(page, workspace);
            await page.locator('.monaco-editor .view-line', { hasText: 'def save_matmuls' }).click();
            await runCommand(page, 'jax-lsp: Trace Policy at Cursor');
            // The smoke-test driver turns notification toasts off: read the notification center.
            await runCommand(page, 'Notifications: Show Notifications');
            const toast = page.locator('.notifications-center .notification-list-item', { hasText: 'off in Restricted Mode' });
            await toast.waitFor({ timeout: 20000 });
            log('Notification:', JSON.stringify(await toast.innerText()));
            await page.waitForTimeout(500); // let the command palette fade out
            await page.screenshot({ path: path.join(OUT, 'screenshot-untrusted.png') });
        }, page);
    } finally {
        await context.close();
    }
}

/** Runs suite.js inside the window's extension host and records its checks. */
async function extensionHostSuite(mode, dir, workspace) {
    const context = await openBrowser(dir);
    const resultFile = path.join(dir, 'suite-result.json');
    try {
        const page = context.pages()[0];
        let exited;
        const exit = new Promise((resolve) => { exited = resolve; });
        await page.exposeFunction('codeAutomationLog', (type, args) => {
            const text = JSON.stringify(args);
            if (text.includes('API-TEST')) log('extension host:', text.slice(0, 800));
        });
        await page.exposeFunction('codeAutomationExit', (code) => exited(code));
        const installed = fs.readdirSync(EXTENSIONS).find((name) => name.startsWith('jax-lsp.jax-lsp-'));
        const host = `127.0.0.1:${PORT}`;
        const payload = JSON.stringify([
            ['extensionDevelopmentPath', `vscode-remote://${host}${path.join(EXTENSIONS, installed)}`],
            ['extensionTestsPath', `vscode-remote://${host}${SUITE}`],
            ['skipWelcome', 'true'],
        ]);
        await page.goto(`http://${host}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(payload)}`);
        const code = await Promise.race([exit, new Promise((resolve) => setTimeout(() => resolve('timeout'), 240000))]);
        log(`${mode} extension-host suite exit code:`, code);
    } finally {
        await context.close();
    }
    if (!fs.existsSync(resultFile)) {
        record(`${mode}: extension-host suite ran`, false, `no ${resultFile}; see ${path.join(dir, 'code-server.log')}`);
        return;
    }
    for (const result of JSON.parse(fs.readFileSync(resultFile, 'utf8'))) {
        record(`${result.name} (${(result.ms / 1000).toFixed(1)}s)`, result.ok, result.error);
    }
}

async function runWindow(mode, ui) {
    PORT = await freePort();
    const { dir, workspace } = prepareWindow(mode);
    const stop = await startCodeServer(mode, dir, workspace);
    try {
        await ui(dir, workspace);
        await extensionHostSuite(mode, dir, workspace);
    } finally {
        stop();
        await new Promise((resolve) => setTimeout(resolve, 1000));
    }
}

(async () => {
    fs.rmSync(WORK, { recursive: true, force: true });
    for (const old of fs.readdirSync(OUT).filter((name) => name.endsWith('.png'))) {
        fs.rmSync(path.join(OUT, old)); // screenshots of an earlier run
    }
    fs.mkdirSync(EXTENSIONS, { recursive: true });
    const bare = path.join(WORK, 'bare-python');
    execFileSync(PYTHON, ['-m', 'venv', '--without-pip', bare]);
    // Answers the extension's probe like the real interpreter, then dies as a broken server would.
    const crashing = path.join(WORK, 'crashing-python');
    fs.writeFileSync(crashing, `#!/bin/sh\n[ "$1" = "-c" ] && exec "${PYTHON}" "$@"\necho "simulated crash" >&2\nexit 3\n`, { mode: 0o755 });
    ENV.JAX_LSP_E2E_CRASHING_PYTHON = crashing;
    pythons.trusted = PYTHON;
    pythons.untrusted = executable(path.join(bare, 'bin', 'python'));
    log(`installing ${VSIX}; user's Python: ${PYTHON} (trusted window), ${pythons.untrusted} (untrusted, standard library only)`);
    execFileSync(CODE_SERVER, ['--user-data-dir', path.join(WORK, 'install-user-data'), '--extensions-dir', EXTENSIONS,
        '--install-extension', VSIX], { env: ENV, stdio: 'inherit' });
    await check('the .vsix installs', () => {
        if (!fs.readdirSync(EXTENSIONS).some((name) => name.startsWith('jax-lsp.jax-lsp-'))) throw new Error('not installed');
    });
    for (const [mode, ui] of [['trusted', uiTrusted], ['untrusted', uiUntrusted]]) {
        try {
            await runWindow(mode, ui);
        } catch (error) {
            record(`${mode}: window`, false, (error && error.stack) || error);
        }
    }
    const failed = results.filter((r) => !r.ok).length;
    log('done');
    console.log(`${results.length - failed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
})().catch((error) => {
    console.error(error);
    console.log(`${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length + 1} failed`);
    process.exit(1);
});

// Runs the extension's mocha suite inside code-server's real (Node) extension host.
// A headless Chromium opens the workbench with a payload naming the extension under development and its
// tests (extensionDevelopmentPath / extensionTestsPath); the workbench reports the tests' console output
// and exit code through two page functions it calls in automation mode.
//
// env: CS_BASE (http://127.0.0.1:PORT), WS (workspace folder), EXT_DEV, EXT_TESTS, CHROMIUM,
//      ARTIFACTS (console log + failure screenshot), TEST_TIMEOUT_MS
const { launchBrowser } = require('./browser');
const fs = require('fs');
const path = require('path');
const util = require('util');

const base = process.env.CS_BASE;
const authority = new URL(base).host; // code-server's remote authority is host:port
const artifacts = process.env.ARTIFACTS;
const t0 = Date.now();
const lap = (m) => console.log(`[runtests ${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);

(async () => {
  const { ctx, udd } = await launchBrowser({ width: 1400, height: 900 });
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    let resolveExit;
    const exited = new Promise((r) => (resolveExit = r));
    // The suite prints `mocha: N passed, N failed` when done; the workbench then calls codeAutomationExit.
    // Some failure paths never call it, so the summary line also ends the wait (after a grace period).
    await page.exposeFunction('codeAutomationLog', (type, args) => {
      const line = util.format(...(args || []));
      console.log(line);
      const m = /^mocha: (\d+) passed, (\d+) failed/.exec(line);
      if (m) setTimeout(() => resolveExit(+m[2] === 0 ? 0 : 1), 5000);
    });
    await page.exposeFunction('codeAutomationExit', (code) => resolveExit(code));
    const clog = fs.createWriteStream(path.join(artifacts, 'mocha-browser-console.log'));
    page.on('console', (m) => clog.write(`[${m.type()}] ${m.text()}\n`));
    const payload = [
      ['extensionDevelopmentPath', `vscode-remote://${authority}${process.env.EXT_DEV}`],
      ['extensionTestsPath', `vscode-remote://${authority}${process.env.EXT_TESTS}`],
    ];
    const url = `${base}/?folder=${encodeURIComponent(process.env.WS)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
    lap(`open ${url}`);
    await page.goto(url, { timeout: 180000 });
    const timeout = +(process.env.TEST_TIMEOUT_MS || 600000);
    let timer;
    const code = await Promise.race([exited, new Promise((r) => (timer = setTimeout(() => r('TIMEOUT'), timeout)))]);
    clearTimeout(timer);
    lap(`extension host tests finished: exit code ${code}`);
    if (code !== 0) await page.screenshot({ path: path.join(artifacts, 'mocha-failure.png') }).catch(() => {});
    process.exitCode = code === 0 ? 0 : 1;
  } finally {
    await ctx.close().catch(() => {});
    fs.rmSync(udd, { recursive: true, force: true });
  }
  process.exit(process.exitCode); // nothing may keep this process (and the harness) waiting
})().catch((e) => {
  console.error('runtests failed:', e);
  process.exit(2);
});

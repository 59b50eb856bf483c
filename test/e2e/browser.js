// Shared by the UI scripts (smoke.js, dashboard.js, chat.js): headless Debian Chromium with the flags this machine needs, and
// the few state-waiting helpers every UI check uses. Nothing here waits for a moment: each helper polls a state until
// its deadline and says what it last saw.
const fs = require('fs'),
  os = require('os'),
  path = require('path');
const { chromium } = require('playwright-core');

/** Headless chromium (no GPU, no sandbox as root, no background networking: the network is closed) in a fresh profile. */
async function launchBrowser(viewport) {
  const udd = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-chromium-'));
  const ctx = await chromium.launchPersistentContext(udd, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport,
  });
  return { ctx, udd };
}

const firstLine = (e) => String(e && e.message ? e.message : e).split('\n')[0];
const pause = (ms) => new Promise((r) => setTimeout(r, ms)); // a poll interval, never a settle delay

/** Poll until fn returns a truthy value (exceptions count as "not yet"); returns that value. */
async function until(what, fn, timeout = 20000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await pause(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${firstLine(last)})` : ''}`);
}

/**
 * Wait until an element matching `locator` is visible with a real size on screen; returns it. Polls the state until
 * the deadline rather than judging one frame: right after a render an item can be attached and "visible" while its
 * icon font or layout has not given it a size yet.
 */
async function visible(locator, what, timeout = 30000) {
  const el = locator.filter({ visible: true }).first();
  const deadline = Date.now() + timeout;
  let last = 'never visible';
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`${what}: ${last} after ${timeout} ms`);
    try {
      await el.waitFor({ state: 'visible', timeout: left });
      const box = await el.boundingBox({ timeout: Math.max(1, deadline - Date.now()) });
      if (box && box.width >= 2 && box.height >= 2) return el;
      last = `no size on screen (${box ? `${box.width}x${box.height}` : 'detached'})`;
    } catch (e) {
      last = firstLine(e);
    }
    await pause(100);
  }
}

/** The command palette row whose label is exactly `label`. */
const exactRow = (page, label) =>
  page.locator('.quick-input-list .monaco-list-row', {
    has: page.locator('.label-name', { hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
  });

/**
 * Take keyboard focus out of any webview (an iframe) so a key press reaches the workbench's own keybindings: a webview
 * only forwards keys while its document is loaded, and one that is reloading or being moved swallows them.
 */
async function focusWorkbench(page) {
  await page.evaluate(() => {
    const a = document.activeElement;
    if (a && a.tagName === 'IFRAME') a.blur();
  });
}

/**
 * Run a palette command; resolves with the time its entry was chosen. The palette closes whenever focus moves (an
 * editor that finishes opening, a webview that reloads), so each attempt waits for the palette's own state and, if the
 * palette closed before its entry could be chosen, opens it again until the deadline. Nothing is run twice: the entry is
 * clicked once, and only a click that failed to happen is retried.
 */
async function palette(page, command, timeout = 30000) {
  const deadline = Date.now() + timeout;
  const input = page.locator('.quick-input-widget input');
  let last = 'never opened';
  while (Date.now() < deadline) {
    const left = () => Math.max(1, Math.min(10000, deadline - Date.now()));
    try {
      if (await input.isVisible()) await page.keyboard.press('Escape'); // a palette left open by something else
      await focusWorkbench(page);
      await page.keyboard.press('F1');
      await visible(input, 'command palette', left());
      await input.fill(`>${command}`, { timeout: left() });
      const row = await visible(exactRow(page, command), `palette entry ${command}`, left());
      const at = Date.now();
      await row.click({ timeout: left() }); // the row with exactly this label (Enter would run whichever entry ranks first)
      return at;
    } catch (e) {
      last = firstLine(e);
    }
    await pause(250);
  }
  throw new Error(`command palette: ${command}: ${last} after ${timeout} ms`);
}

/** The frame of the webview whose document holds `selector` (found again each time: a webview may reload). */
async function webviewFrame(page, selector, what, timeout = 30000) {
  return until(
    what,
    async () => {
      for (const f of page.frames()) {
        if (f.isDetached()) continue;
        if (
          await f
            .locator(selector)
            .count()
            .catch(() => 0)
        )
          return f;
      }
      return null;
    },
    timeout,
  );
}

/**
 * The checks of one UI script: `check(name, shot, fn)` runs a step, screenshots it (`-FAILED.png` on failure) and
 * records the outcome; `finish(results, extra)` writes `{passed, failed, checks, ...extra}` and prints the count. A
 * script where no check ran counts as failed. `afterEach(page)` runs after every step (e.g. close an open menu).
 */
function checkRecorder({ name, art, page, afterEach }) {
  const t0 = Date.now();
  const lap = (m) => console.log(`[${name} ${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}`);
  const checks = [];
  async function check(title, shot, fn) {
    const started = Date.now();
    try {
      await fn();
      await page().screenshot({ path: path.join(art, shot) });
      checks.push({ name: title, ok: true, ms: Date.now() - started });
      lap(`ok   ${title} (${shot})`);
    } catch (e) {
      checks.push({ name: title, ok: false, error: firstLine(e) });
      lap(`FAIL ${title}: ${firstLine(e)}`);
      await page()
        .screenshot({ path: path.join(art, shot.replace('.png', '-FAILED.png')) })
        .catch(() => {});
    }
    if (afterEach) await afterEach(page(), checks[checks.length - 1].ok).catch((e) => lap(`after "${title}": ${firstLine(e)}`));
  }
  function finish(results, extra = {}) {
    if (!checks.length) checks.push({ name: 'the workbench loads', ok: false, error: 'no check ran' });
    const passed = checks.filter((c) => c.ok).length;
    const failed = checks.length - passed;
    fs.writeFileSync(results, JSON.stringify({ passed, failed, checks, ...extra }, null, 2));
    console.log(`${name}: ${passed} passed, ${failed} failed`);
  }
  return { lap, check, finish };
}

module.exports = { launchBrowser, until, visible, checkRecorder, exactRow, palette, focusWorkbench, webviewFrame };

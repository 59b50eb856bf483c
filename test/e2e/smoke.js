// UI smoke of the installed Cairn extension in code-server, driven through Debian's headless chromium.
// Each check asserts that elements are really visible on screen and saves a screenshot to ARTIFACTS:
//   01-memories-view.png   the Cairn view with the CLI-seeded memories and the "Needs review" group
//   02-hover.png           a memory hover on an anchored line, with its command links
//   03-search.png          Search Memories from the command palette, live results
//   04-memory-opened.png   the chosen memory opened in an editor tab
//   05-live-update.png     a memory written by the CLI while the view is open appears without a refresh
//   06-status-menu.png     the status bar item and its quick menu
// env: CS_URL, ARTIFACTS, RESULTS (json {passed, failed, checks}), CLI + NODE_BIN (the cairn CLI), CHROMIUM
const shared = require('./browser');
const { launchBrowser, visible, checkRecorder } = shared;
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ART = process.env.ARTIFACTS;
let page;
const { lap, check, finish } = checkRecorder({ name: 'smoke', art: ART, page: () => page, afterEach: (p) => p.keyboard.press('Escape') });

const treeRow = (label) => page.locator('.pane-body .monaco-list-row', { has: page.locator('.label-name', { hasText: label }) });

/**
 * Expand the tree row `label` until its child row `child` shows. Waits for that state rather than trusting one click:
 * a tree refresh (the daemon connecting, a git change) can re-render the rows between reading aria-expanded and the
 * click, so the click lands on a moved row or toggles a row that was just expanded.
 */
async function expand(label, child) {
  const deadline = Date.now() + 60000;
  for (;;) {
    const row = await visible(treeRow(label), `tree row "${label}"`, Math.max(1, deadline - Date.now()));
    if ((await row.getAttribute('aria-expanded').catch(() => null)) === 'false') await row.click().catch(() => {});
    try {
      return await visible(treeRow(child), `tree row "${child}" under "${label}"`, Math.min(5000, Math.max(1, deadline - Date.now())));
    } catch (e) {
      if (Date.now() >= deadline) throw e;
    }
  }
}

/** Run a palette command (the shared helper: focus out of any webview, reopen the palette if focus closed it). */
const palette = (command) => shared.palette(page, command);

(async () => {
  const { ctx, udd } = await launchBrowser({ width: 1440, height: 900 });
  try {
    page = ctx.pages()[0] || (await ctx.newPage());
    const clog = fs.createWriteStream(path.join(ART, 'smoke-browser-console.log'));
    page.on('console', (m) => clog.write(`[${m.type()}] ${m.text()}\n`));
    const opened = Date.now();
    await page.goto(process.env.CS_URL, { timeout: 180000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    lap('workbench loaded');

    await check('Cairn view shows the memories written by the CLI', '01-memories-view.png', async () => {
      await visible(page.locator('.activitybar .action-item a[aria-label^="Cairn"]'), 'Cairn activity bar icon', 60000);
      await (await visible(page.locator('.activitybar .action-item a[aria-label^="Cairn"]'), 'Cairn icon')).click();
      // The "Memories" view's title: in the side bar title ("CAIRN: MEMORIES") while it is the container's only
      // view, else in its own pane header (next to "Agent Tasks").
      await visible(page.locator('.sidebar .composite.title, .sidebar .pane-header', { hasText: /memories/i }), '"Memories" view title');
      await visible(treeRow('Needs review'), '"Needs review" group', 60000);
      await visible(treeRow('agent-guess'), 'the proposed memory');
      await expand('project', 'sample-app');
      await expand('sample-app', 'welcome');
      await visible(treeRow('rounding-rule'), 'memory "rounding-rule"');
      await visible(page.locator('.statusbar-item .codicon-database'), 'status bar: connected');
      lap(`view populated ${((Date.now() - opened) / 1000).toFixed(1)} s after opening the page`);
    });

    await check('hover on an anchored line shows the memory', '02-hover.png', async () => {
      await page.keyboard.press('Control+P');
      const input = page.locator('.quick-input-widget input');
      await visible(input, 'quick open');
      await input.fill('billing.py');
      await visible(page.locator('.quick-input-list .monaco-list-row', { hasText: 'billing.py' }), 'billing.py in quick open');
      await page.keyboard.press('Enter');
      const word = page.locator('.monaco-editor .view-lines span', { hasText: /^invoice_total$/ });
      const hover = page.locator('.monaco-hover', { hasText: 'banker rounding' });
      // Hover until the memory hover shows: the first moves can land before the language client serves hovers.
      const deadline = Date.now() + 60000;
      for (
        let i = 0;
        !(await hover
          .first()
          .isVisible()
          .catch(() => false));
        i++
      ) {
        if (Date.now() > deadline) throw new Error('the memory hover never appeared');
        const box = await (await visible(word, 'the anchored line')).boundingBox();
        if (!box) continue;
        await page.mouse.move(5, 5);
        await page.mouse.move(box.x + 10 + (i % 5) * 3, box.y + box.height / 2);
        await hover
          .first()
          .waitFor({ state: 'visible', timeout: 4000 })
          .catch(() => {});
      }
      await visible(hover, 'the memory hover');
      await visible(hover.locator('a', { hasText: 'Open' }), 'hover "Open" link');
      await visible(hover.locator('a', { hasText: 'Forget' }), 'hover "Forget" link');
    });

    await check('Search Memories from the palette shows live results', '03-search.png', async () => {
      await page.mouse.move(5, 5);
      await palette('Cairn: Search Memories');
      const input = page.locator('.quick-input-widget input');
      await visible(input, 'search input');
      await input.fill('auditors rounding');
      // results of the typed query (the picker opens with recent memories, titled "(recent)")
      await visible(page.locator('.quick-input-title', { hasText: /\((hybrid|fts|vector|full-text)/ }), 'search results title');
      await visible(page.locator('.quick-input-list .monaco-list-row', { hasText: 'rounding-rule' }), 'search hit "rounding-rule"');
    });

    await check('choosing a search result opens the memory', '04-memory-opened.png', async () => {
      await palette('Cairn: Search Memories');
      const input = page.locator('.quick-input-widget input');
      // Enter at once: the picker waits for the typed query's results and opens the top hit.
      await input.fill('auditors rounding');
      await page.keyboard.press('Enter');
      await visible(page.locator('.tab', { hasText: 'rounding-rule' }), 'editor tab of the memory');
      await visible(page.locator('.monaco-editor .view-line', { hasText: 'banker rounding' }), 'memory text in the editor');
    });

    await check('a CLI write appears in the open view without a refresh', '05-live-update.png', async () => {
      // The namespace must be open before the write (it is, from the first check, unless a re-render closed it).
      await expand('project', 'sample-app');
      await expand('sample-app', 'welcome');
      execFileSync(
        process.env.NODE_BIN,
        [process.env.CLI, 'add', 'project.sample-app', 'live-from-cli', 'Written by the CLI while the editor was open.', '--kind', 'note'],
        { stdio: 'pipe' },
      );
      await visible(treeRow('live-from-cli'), 'memory "live-from-cli" in the tree', 60000);
    });

    await check('status bar item opens the Cairn menu', '06-status-menu.png', async () => {
      await (await visible(page.locator('.statusbar-item', { has: page.locator('.codicon-database') }), 'Cairn status bar item')).click();
      await visible(
        page.locator('.quick-input-list .monaco-list-row', { hasText: 'Show Daemon Status' }),
        'menu entry "Show Daemon Status"',
      );
      await visible(page.locator('.quick-input-list .monaco-list-row', { hasText: 'Restart Daemon' }), 'menu entry "Restart Daemon"');
    });
  } finally {
    await ctx.close().catch(() => {});
    fs.rmSync(udd, { recursive: true, force: true });
    finish(process.env.RESULTS);
  }
})().catch((e) => {
  console.error('smoke failed:', e);
  process.exit(2);
});

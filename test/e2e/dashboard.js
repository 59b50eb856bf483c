// The Cairn dashboard driven through the UI as a person would, in code-server with the installed .vsix.
// Each step asserts visible elements inside the dashboard's webview and saves a screenshot to ARTIFACTS:
//   dash-01-open.png       "Cairn: Open Dashboard" from the palette; the first results appear (timed)
//   dash-02-search.png     typing a query shows highlighted results, their count and timing
//   dash-03-field-error.png a daemon validation error appears next to the field it names
//   dash-04a-conflict-view.png, dash-04-conflict.png   an edit racing a CLI write: "changed elsewhere", both versions side by side, keep mine
//   dash-04b-anchor.png    the memory's anchor opens the code; returning to the dashboard restores its state
//   dash-05-diff.png       history: two versions compared as a diff
//   dash-06-review.png     the review queue: approve a proposed memory
//   dash-06c-timeline*.png the timeline: an imported session, its file opened, a turn searched and expanded (-search),
//                          a fact proposed from it, beside its source event in review (-review), approved
//   dash-06b-overview.png  the overview: counts by namespace, kind, status; the writes-per-day chart
//   dash-07-graph.png      relations graph: click a node to navigate to the linked memory
//   dash-08-import.png     import a file: preview counts first (nothing written yet)
//   dash-08b-imported.png  then the import adds only the new memories (progress bar while it runs)
//   dash-09-light.png / dash-10-dark.png  the panel in light and dark themes, each view checked with axe-core
//   dashboard-panel.png    the panel alone (the README's picture); axe-*.json the axe reports
// env: CS_URL, ARTIFACTS, RESULTS (json {passed, failed, checks, metrics}), CLI + NODE_BIN, CHROMIUM
const { launchBrowser, until, visible, checkRecorder } = require('./browser');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ART = process.env.ARTIFACTS;
const metrics = {};
let page;
const { lap, check, finish } = checkRecorder({ name: 'dashboard', art: ART, page: () => page });

const cli = (...args) => execFileSync(process.env.NODE_BIN, [process.env.CLI, ...args], { stdio: 'pipe', encoding: 'utf8' });
const cliJson = (...args) => JSON.parse(cli(...args, '--json'));

/** The dashboard's document (the webview's inner frame); found again each time, as a webview may reload. */
async function dash(timeout = 30000) {
  return until(
    'the dashboard webview',
    async () => {
      for (const f of page.frames()) {
        if (f.isDetached()) continue;
        if (
          await f
            .locator('#cairn-dashboard-root')
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

const exactRow = (label) =>
  page.locator('.quick-input-list .monaco-list-row', {
    has: page.locator('.label-name', { hasText: new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
  });

/** Run a palette command; resolves with the time its entry was chosen. */
async function palette(command) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await visible(input, 'command palette');
  await input.fill(`>${command}`);
  const row = await visible(exactRow(command), `palette entry ${command}`);
  const at = Date.now();
  await row.click(); // the row with exactly this label (Enter would run whichever entry ranks first)
  return at;
}

/** Preferences: Color Theme, then pick `name` once the theme list is showing. */
async function chooseTheme(name) {
  await palette('Preferences: Color Theme');
  await visible(page.locator('.quick-input-list .monaco-list-row', { hasText: /Dark Modern|Light Modern/ }), 'the theme list');
  await page.locator('.quick-input-widget input').fill(name);
  await (await visible(exactRow(name), `theme "${name}"`)).click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

/** The result button of the memory with this key. */
const resultFor = (f, key) => f.locator('.results button.result', { has: f.locator('.key', { hasText: new RegExp(`^${key}$`) }) });

async function searchFor(f, query, expectKey) {
  const box = await visible(f.getByRole('searchbox', { name: 'Search memories' }), 'search field');
  await box.fill(query);
  return visible(resultFor(f, expectKey), `result ${expectKey}`);
}

async function axe(f, label) {
  const source = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  // evaluate() runs through the DevTools protocol, outside the page's CSP (which would refuse an injected script)
  await f.evaluate(source);
  const r = await f.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  fs.writeFileSync(path.join(ART, `axe-${label}.json`), JSON.stringify(r.violations, null, 2));
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) throw new Error(`axe (${label}): ${bad.map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`).join(', ')}`);
  return r.violations.length;
}

(async () => {
  const { ctx, udd } = await launchBrowser({ width: 1440, height: 900 });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-dash-e2e-'));
  try {
    page = ctx.pages()[0] || (await ctx.newPage());
    const clog = fs.createWriteStream(path.join(ART, 'dashboard-browser-console.log'));
    page.on('console', (m) => clog.write(`[${m.type()}] ${m.text()}\n`));
    page.on('pageerror', (e) => clog.write(`[pageerror] ${e.stack || e.message}\n`));
    // Data for the steps: a link for the graph (rounding-rule -> welcome), seeded through the CLI.
    const rule = cliJson('get', 'project.sample-app', 'rounding-rule');
    const welcome = cliJson('get', 'project.sample-app', 'welcome');
    cli('link', rule.id, welcome.id, 'relates_to');
    await page.goto(process.env.CS_URL);
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    await visible(page.locator('.statusbar-item .codicon-database'), 'status bar: connected', 90000);
    lap('workbench loaded and connected');

    await check('Open Dashboard from the palette shows the first results', 'dash-01-open.png', async () => {
      // timed from pressing Enter on the palette entry to the first result on screen
      const started = await palette('Cairn: Open Dashboard');
      const f = await dash();
      await visible(f.getByRole('tab', { name: 'Search' }), 'Search tab');
      await visible(f.locator('.results li button').first(), 'first result', 30000);
      metrics.openToFirstResultsMs = Date.now() - started;
      lap(`open → first results: ${metrics.openToFirstResultsMs} ms`);
      await visible(page.locator('.tab', { hasText: 'Cairn Dashboard' }), 'the editor tab "Cairn Dashboard"');
    });

    await check('typing a query shows highlighted results with count and timing', 'dash-02-search.png', async () => {
      const f = await dash();
      const hit = await searchFor(f, 'auditors rounding', 'rounding-rule');
      await visible(hit.locator('mark'), 'a highlighted match in the snippet');
      await visible(f.getByText(/^\d+ results? in \d+ ms/), 'result count and timing');
    });

    await check('a daemon validation error appears next to the field it names', 'dash-03-field-error.png', async () => {
      const f = await dash();
      await (await searchFor(f, 'auditors rounding', 'rounding-rule')).click();
      await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'detail heading');
      const validFrom = await visible(f.getByLabel('Valid from (ISO-8601)'), 'field "Valid from"');
      await validFrom.fill('next tuesday');
      await f.getByRole('button', { name: 'Save', exact: true }).click();
      const err = await visible(f.locator('#field-validFrom-error'), 'the error under "Valid from"');
      if (!/InvalidParams/.test(await err.textContent())) throw new Error('the error does not say InvalidParams');
      if ((await validFrom.getAttribute('aria-invalid')) !== 'true') throw new Error('the field is not marked invalid');
      await validFrom.fill('');
    });

    await check('an edit racing a CLI write shows both versions; keeping mine saves it', 'dash-04-conflict.png', async () => {
      const f = await dash();
      const value = await visible(f.getByLabel('Value'), 'value field');
      const before = cliJson('get', 'project.sample-app', 'rounding-rule');
      await value.fill('Invoice totals round half-even; edited in the dashboard.');
      cli(
        'add',
        'project.sample-app',
        'rounding-rule',
        'Invoice totals round half-up now (changed from the CLI).',
        '--kind',
        'decision',
        '--tags',
        'billing',
      );
      await visible(f.getByText(/changed elsewhere while you were editing/), 'the "changed elsewhere" notice (live update)');
      await f.getByRole('button', { name: 'Save', exact: true }).click();
      const conflict = await visible(f.getByRole('region', { name: 'Version conflict' }), 'the conflict view');
      await visible(conflict.getByRole('columnheader', { name: 'Your version' }), 'column "Your version"');
      await visible(conflict.getByRole('columnheader', { name: `Stored version ${before.version + 1}` }), 'column with the stored version');
      await visible(conflict.getByText('changed from the CLI'), 'the stored value side by side');
      await page.screenshot({ path: path.join(ART, 'dash-04a-conflict-view.png') });
      await conflict.getByRole('button', { name: 'Keep mine' }).click();
      await visible(f.getByText(`Saved version ${before.version + 2}.`), 'saved confirmation');
      const after = cliJson('get', 'project.sample-app', 'rounding-rule');
      if (after.value !== 'Invoice totals round half-even; edited in the dashboard.' || after.version !== before.version + 2)
        throw new Error(`store holds ${after.version}: ${after.value}`);
    });

    await check('an anchor opens its code; back on the dashboard, its state is restored', 'dash-04b-anchor.png', async () => {
      let f = await dash();
      await (await visible(f.getByRole('button', { name: 'Open src/billing.py:3' }), 'the anchor button')).click();
      await visible(page.locator('.tab', { hasText: 'billing.py' }), 'the anchored file in an editor');
      await visible(page.locator('.monaco-editor .view-line', { hasText: 'def invoice_total' }), 'the anchored code');
      await page.screenshot({ path: path.join(ART, 'dash-04b-anchor.png') });
      await page.locator('.tab', { hasText: 'Cairn Dashboard' }).click();
      f = await dash();
      await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'the open memory, restored');
      const q = await f.getByRole('searchbox', { name: 'Search memories' }).inputValue();
      if (q !== 'auditors rounding') throw new Error(`the query was not restored (${JSON.stringify(q)})`);
    });

    await check('history compares two versions as a diff', 'dash-05-diff.png', async () => {
      const f = await dash();
      await f.getByRole('tab', { name: 'History' }).click();
      const rows = f.getByRole('checkbox', { name: /^Compare version/ });
      await visible(rows.first(), 'history rows');
      await rows.nth(0).check();
      await rows.nth(1).check();
      const diff = await visible(f.getByRole('figure', { name: 'Diff' }), 'the diff');
      await visible(diff.locator('.diff-add', { hasText: 'edited in the dashboard' }), 'added line');
      await visible(diff.locator('.diff-del', { hasText: 'changed from the CLI' }), 'removed line');
      const actors = await f.locator('table.history td:nth-child(4)').allTextContents();
      if (!actors.includes('dashboard')) throw new Error(`the dashboard edit is not in the history (${actors.join(', ')})`);
    });

    await check('open the relations graph and navigate by clicking a node', 'dash-07-graph.png', async () => {
      const f = await dash();
      await f.getByRole('tab', { name: 'Relations' }).click();
      const graph = await visible(f.locator('.graph[data-ready="true"]'), 'the drawn graph', 30000);
      await visible(graph.locator('canvas'), 'the graph canvas');
      await visible(f.getByRole('list', { name: 'Linked memories' }).getByText('project.sample-app/welcome'), 'the link in the list');
      const nodes = JSON.parse(await graph.getAttribute('data-nodes'));
      const target = nodes.find((n) => n.label === 'welcome');
      if (!target) throw new Error(`no "welcome" node in ${JSON.stringify(nodes)}`);
      await graph.click({ position: { x: target.x, y: target.y } });
      await visible(f.getByRole('heading', { name: 'welcome' }), 'the linked memory opened from the graph');
    });

    await check('approve a proposed memory from the review queue', 'dash-06-review.png', async () => {
      const f = await dash();
      await f.getByRole('tab', { name: 'Review' }).click();
      await visible(f.getByRole('button', { name: 'project.sample-app/agent-guess' }), 'the proposed memory');
      await visible(f.getByText(/^1 proposed memory waiting/), 'the queue count');
      await f.getByRole('button', { name: 'Approve agent-guess', exact: true }).click();
      await visible(f.getByText(/^0 proposed memories waiting.*Approved 1 of 1\./), 'the emptied queue');
      const m = cliJson('get', 'project.sample-app', 'agent-guess');
      if (m.status !== 'active') throw new Error(`agent-guess is ${m.status}`);
    });

    await check(
      'the timeline: an episode, a turn found and expanded, a fact proposed from it and approved',
      'dash-06c-timeline.png',
      async () => {
        // A session imported as an agent's transcript (the editor's own capture is covered in the extension-host suite).
        const file = path.join(tmp, 'session.jsonl');
        const lines = [
          { type: 'episode', id: 'e2e-timeline-0001', title: 'Otter gateway session', source: 'agent:e2e' },
          { type: 'event', kind: 'user', text: 'Which port does the otter gateway listen on?' },
          {
            type: 'event',
            kind: 'agent',
            text: 'The otter gateway listens on port 8443; invoice totals are in billing.py.',
            context: { path: 'src/billing.py', startLine: 1, endLine: 3 },
          },
          { type: 'event', kind: 'user', text: 'Thanks, and the staging hostname?' },
        ];
        fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
        cli('episodes', 'import', file, '--root', 'project.sample-app');
        const f = await dash();
        await f.getByRole('tab', { name: 'Timeline' }).click();
        await (await visible(f.getByRole('button', { name: /Otter gateway session/ }), 'the episode on the timeline')).click();
        const events = await visible(f.getByRole('list', { name: 'Events of Otter gateway session' }), "the episode's events");
        await visible(events.getByText('Thanks, and the staging hostname?'), 'its last event');
        await (await visible(events.getByRole('button', { name: 'Open src/billing.py:1-3' }), "the event's file")).click();
        await visible(page.locator('.tab', { hasText: 'billing.py' }), 'the file in an editor');
        await page.locator('.tab', { hasText: 'Cairn Dashboard' }).click();
        const g = await dash();
        await (await visible(g.getByRole('searchbox', { name: 'Search events' }), 'the event search')).fill('port of the otter gateway');
        const hits = await visible(g.getByRole('list', { name: 'Event search results' }), 'event hits');
        const hit = await visible(hits.locator('li.event.hit', { hasText: 'listens on port 8443' }).first(), 'the turn, in context');
        await (await visible(hits.getByRole('button', { name: /^Expand event #/ }).first(), 'expand')).click();
        await visible(hits.getByText('Thanks, and the staging hostname?').first(), 'the events around it');
        await page.screenshot({ path: path.join(ART, 'dash-06c-timeline-search.png') });
        await hit.getByRole('checkbox').check();
        await g.getByRole('textbox', { name: 'Proposal key' }).fill('otter-gateway-port');
        await g.getByRole('textbox', { name: 'Proposal value' }).fill('The otter gateway listens on port 8443.');
        await g.getByRole('button', { name: 'Propose for review' }).click();
        await visible(g.getByText(/^Proposed project\.sample-app\/otter-gateway-port from events #\d+/), 'the proposal made');
        await g.getByRole('tab', { name: 'Review' }).click();
        await visible(g.getByRole('button', { name: 'project.sample-app/otter-gateway-port' }), 'the proposal in review');
        await visible(
          g.getByRole('list', { name: 'Source events' }).getByText(/listens on port 8443; invoice totals/),
          'its source event beside it',
        );
        await page.screenshot({ path: path.join(ART, 'dash-06c-timeline-review.png') });
        await g.getByRole('button', { name: 'Approve otter-gateway-port', exact: true }).click();
        await until(
          'the approved fact',
          () => cliJson('get', 'project.sample-app', 'otter-gateway-port').status === 'active' || null,
          15000,
        );
      },
    );

    await check('the overview shows counts and writes per day by source', 'dash-06b-overview.png', async () => {
      const f = await dash();
      await f.getByRole('tab', { name: 'Overview' }).click();
      const byNs = await visible(f.getByRole('table', { name: 'By namespace' }), 'counts by namespace');
      await visible(byNs.getByRole('rowheader', { name: 'project.sample-app' }), 'the project namespace row');
      await visible(f.getByRole('table', { name: 'By status' }).getByRole('rowheader', { name: 'active' }), 'counts by status');
      await visible(f.getByText(/^Memories written per day by source/), 'the chart caption');
      await visible(f.locator('svg rect.bar').first(), 'a bar of the chart');
    });

    await check('import a file: preview counts first, then the import', 'dash-08-import.png', async () => {
      // A file from another store: two new memories and one that clashes with this store's "welcome".
      const other = path.join(tmp, 'other.db');
      const env = { ...process.env, CAIRN_DB: other };
      const run = (...a) => execFileSync(process.env.NODE_BIN, [process.env.CLI, ...a, '--db', other], { stdio: 'pipe', env });
      run('add', 'project.sample-app', 'imported-one', 'Imported from a teammate: deploys freeze on Fridays.', '--kind', 'decision');
      run('add', 'project.sample-app', 'imported-two', 'Imported from a teammate: staging resets nightly.', '--kind', 'fact');
      run('add', 'project.sample-app', 'welcome', 'A different welcome in the other store.', '--kind', 'fact');
      const file = path.join(tmp, 'teammate.jsonl');
      run('export', file, '--root', 'project.sample-app');
      const f = await dash();
      await f.getByRole('tab', { name: 'Import / Export' }).click();
      await f.getByLabel('Choose a file to import').setInputFiles(file);
      const preview = await visible(f.getByRole('table', { name: 'What the import would do' }), 'the preview counts');
      const count = async (outcome) => (await preview.locator(`tr[data-outcome="${outcome}"] td`).textContent()).trim();
      if ((await count('new')) !== '2' || (await count('conflicting')) !== '1')
        throw new Error(`preview: new ${await count('new')}, conflicting ${await count('conflicting')}`);
      let wrote = true;
      try {
        cli('get', 'project.sample-app', 'imported-one');
      } catch {
        wrote = false; // NotFound: the preview wrote nothing
      }
      if (wrote) throw new Error('the preview wrote something');
    });
    // the import itself, a separate step so a failure says which half broke
    await check('applying the previewed import adds only the new memories', 'dash-08b-imported.png', async () => {
      const f = await dash();
      await f.getByRole('button', { name: 'Import 2 new memories' }).click();
      await visible(f.getByText(/^Imported 2 memories/), 'the import result');
      const m = cliJson('get', 'project.sample-app', 'imported-one');
      if (!/deploys freeze/.test(m.value)) throw new Error('imported-one not in the store');
      const w = cliJson('get', 'project.sample-app', 'welcome');
      if (/different welcome/.test(w.value)) throw new Error('the import overwrote "welcome"');
    });

    const themeIs = (kind) =>
      until(`the ${kind} theme in the webview`, async () =>
        new RegExp(`vscode-${kind}\\b`).test(await (await dash()).locator('body').getAttribute('class')),
      );
    await check('light theme: the panel follows it and axe-core finds no serious violations', 'dash-09-light.png', async () => {
      await chooseTheme('Light Modern');
      await themeIs('light');
      let f = await dash();
      await f.getByRole('tab', { name: 'Search' }).click();
      await searchFor(f, 'invoice', 'rounding-rule');
      metrics.axeLightSearch = await axe(f, 'light-search');
      await (await visible(resultFor(f, 'rounding-rule'), 'a result')).click();
      await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'detail heading');
      f = await dash();
      metrics.axeLightDetail = await axe(f, 'light-detail');
    });

    await check('dark theme: the panel follows it and axe-core finds no serious violations', 'dash-10-dark.png', async () => {
      await chooseTheme('Dark Modern');
      await themeIs('dark');
      const f = await dash();
      await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'detail heading in the dark theme');
      metrics.axeDarkDetail = await axe(f, 'dark-detail');
      await f.getByRole('tab', { name: 'Review' }).click();
      await visible(f.getByText(/proposed memor(y|ies) waiting/), 'the review queue');
      metrics.axeDarkReview = await axe(f, 'dark-review');
      await f.getByRole('tab', { name: 'Search' }).click();
      await visible(f.locator('.results li button').first(), 'results in the dark theme');
      // the panel alone, for the documentation
      await page
        .locator('iframe.webview')
        .first()
        .screenshot({ path: path.join(ART, 'dashboard-panel.png') });
    });
  } finally {
    await ctx.close().catch(() => {});
    fs.rmSync(udd, { recursive: true, force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
    console.log(`dashboard metrics: ${JSON.stringify(metrics)}`);
    finish(process.env.RESULTS, { metrics });
  }
})().catch((e) => {
  console.error('dashboard e2e failed:', e);
  process.exit(2);
});

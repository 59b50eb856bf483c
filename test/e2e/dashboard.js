// The Cairn dashboard driven through the UI as a person would, in code-server with the installed .vsix.
// Each step asserts visible elements inside the dashboard's webview and saves a screenshot to ARTIFACTS:
//   dash-01-open.png       "Cairn: Open Dashboard" from the palette; the first results appear (timed)
//   dash-02-search.png     typing a query shows highlighted results, their count and timing
//   dash-03-field-error.png a daemon validation error appears next to the field it names, as a sentence (code on a details line)
//   dash-04a-conflict-view.png, dash-04-conflict.png   an edit racing a CLI write: "changed elsewhere", both versions side by side, keep mine
//   dash-04b-anchor.png    the memory's anchor opens the code; returning to the dashboard restores its state
//   dash-05-diff.png       history: two versions compared as a diff
//   dash-06-review.png     the review queue: approve a proposed memory
//   dash-06c-new.png       "New memory" creates a memory and opens it
//   dash-06c-timeline*.png the timeline: an imported session, its file opened, a turn searched and expanded (-search),
//                          a fact proposed from it, beside its source event in review (-review), approved
//   dash-06b-overview.png  the overview: counts by namespace, kind, status; the writes-per-day chart
//   dash-07-graph.png      relations graph: click a node to navigate to the linked memory
//   dash-08-import.png     import a file: preview counts first (nothing written yet)
//   dash-08b-imported.png  then the import adds only the new memories (progress bar while it runs)
//   dash-08c-branch-*.png  "Cairn: Review Memory Branches": a conflict side by side, Merge off until decided, merged
//   dash-08d-branch-discard.png  Discard asks first, then the branch is gone
//   dash-08e-branch-*.png  New branch: a bad name and a taken one refused at the name field (-taken), then one created and listed (-new)
//   dash-09-light.png / dash-10-dark.png  the panel in light and dark themes, each view checked with axe-core
//   dashboard-panel.png    the panel alone (the README's picture); axe-*.json the axe reports
//   dash-04b-anchor-beside.png  an anchor opened beside the dashboard, an unsaved edit kept across reload and hide/show
//   dash-07b-deleted.png, dash-07b-undo.png   Delete asks first, then Undo restores
//   dash-06a-reject.png    Reject (one and bulk) asks first; Undo puts it back in the queue
//   dash-layout-<1440|1024|800>-<dark|light>.png  the detail at each width with the sidebar open (nothing cut off)
// env: CS_URL, ARTIFACTS, RESULTS (json {passed, failed, checks, metrics}), CLI + NODE_BIN, CHROMIUM
const shared = require('./browser');
const { launchBrowser, until, visible, checkRecorder, webviewFrame } = shared;
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ART = process.env.ARTIFACTS;
const metrics = {};
let page;
/**
 * After a failed check, put the workbench back the way the next check expects it (no dialog or palette open, one editor
 * group, the dashboard in front), so one failure is reported once instead of breaking every check after it.
 */
async function recover(p, ok) {
  if (ok) return;
  for (let i = 0; i < 3; i++) await p.keyboard.press('Escape'); // a dialog or palette left open: Cancel
  await shared.focusWorkbench(p);
  await shared.palette(p, 'View: Join All Editor Groups', 10000);
  await p.locator('.tab', { hasText: 'Cairn Dashboard' }).click({ timeout: 10000 });
  // an unsaved edit left in the form would make the next check's navigation ask first: discard it
  const discard = (await dash(10000)).getByRole('button', { name: 'Discard changes', exact: true });
  // the webview may still be drawing after the tab came to the front: give the button a few seconds to show
  const draft = await until('an unsaved edit', () => discard.isVisible(), 5000).catch(() => false);
  if (draft) {
    await discard.click({ timeout: 10000 });
    await (
      await visible(p.locator('.monaco-dialog-box').getByRole('button', { name: 'Discard changes' }), 'the discard question', 10000)
    ).click();
  }
}
const { lap, check, finish } = checkRecorder({ name: 'dashboard', art: ART, page: () => page, afterEach: recover });

const cli = (...args) => execFileSync(process.env.NODE_BIN, [process.env.CLI, ...args], { stdio: 'pipe', encoding: 'utf8' });
const cliJson = (...args) => JSON.parse(cli(...args, '--json'));

/** The dashboard's document (the webview's inner frame); found again each time, as a webview may reload. */
const dash = (timeout = 30000) => webviewFrame(page, '#cairn-dashboard-root', 'the dashboard webview', timeout);
const exactRow = (label) => shared.exactRow(page, label);
/** Run a palette command; resolves with the time its entry was chosen. */
const palette = (command) => shared.palette(page, command);

/** Preferences: Color Theme, then pick `name` once the theme list is showing. */
async function chooseTheme(name) {
  await palette('Preferences: Color Theme');
  await visible(page.locator('.quick-input-list .monaco-list-row', { hasText: /Dark Modern|Light Modern/ }), 'the theme list');
  await page.locator('.quick-input-widget input').fill(name);
  await (await visible(exactRow(name), `theme "${name}"`)).click();
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

/** Answer the editor's modal dialog that asks `question`; returns the dialog's whole text (message and detail). */
async function answer(question, button) {
  const box = await visible(page.locator('.monaco-dialog-box', { hasText: question }), `the question "${question}"`);
  const text = await box.textContent();
  await box.getByRole('button', { name: button, exact: true }).click();
  await page.locator('.monaco-dialog-box').waitFor({ state: 'hidden' });
  return text;
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
      await visible(err.locator('.error-text', { hasText: /^Valid from must be a date and time/ }), 'a sentence, not the protocol error');
      await visible(err.locator('.error-details', { hasText: 'InvalidParams (1001)' }), 'the error code on a details line');
      if ((await validFrom.getAttribute('aria-invalid')) !== 'true') throw new Error('the field is not marked invalid');
      await validFrom.fill('');
      // the issue's example: a word where a number belongs
      const importance = f.getByLabel('Importance (0–1)');
      const was = await importance.inputValue();
      await importance.fill('high');
      await f.getByRole('button', { name: 'Save', exact: true }).click();
      await visible(
        f.locator('#field-importance-error .error-text', { hasText: /^Importance must be a number between 0 and 1\.$/ }),
        'the importance error as a sentence',
      );
      await importance.fill(was);
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

    await check(
      'an unsaved edit survives opening an anchor beside the panel, hiding it and a reload; Close asks first',
      'dash-04b-anchor.png',
      async () => {
        let f = await dash();
        const edited = 'Invoice totals round half-even; an UNSAVED edit kept across hide and reload.';
        await (await visible(f.getByLabel('Value'), 'value field')).fill(edited);
        await visible(f.getByText('Unsaved changes', { exact: true }), 'the "Unsaved changes" mark');
        await (await visible(f.getByRole('button', { name: 'Open src/billing.py:3' }), 'the anchor button')).click();
        await visible(page.locator('.monaco-editor .view-line', { hasText: 'def invoice_total' }), 'the anchored code');
        // beside: the code opened in another group, the dashboard is still the active tab of its own
        await visible(page.locator('.tab.active', { hasText: 'billing.py' }), 'billing.py active in its group');
        await visible(page.locator('.tab.active', { hasText: 'Cairn Dashboard' }), 'the dashboard still shown beside it');
        await page.screenshot({ path: path.join(ART, 'dash-04b-anchor-beside.png') });
        // a reload of the webview: the edit comes back from vscode.getState
        await palette('Developer: Reload Webviews');
        await until(
          'the reloaded form with the unsaved edit',
          async () => (await (await dash()).getByLabel('Value').inputValue()) === edited,
          30000,
        );
        // hidden: one group, the code in front; the webview is destroyed (retainContextWhenHidden is off)
        await page.locator('.tab', { hasText: 'billing.py' }).click();
        await palette('View: Join All Editor Groups');
        await visible(page.locator('.tab.active', { hasText: 'billing.py' }), 'billing.py in front of the dashboard');
        await until('the hidden dashboard', async () => (await page.locator('.tab.active', { hasText: 'Cairn Dashboard' }).count()) === 0);
        await page.locator('.tab', { hasText: 'Cairn Dashboard' }).click();
        f = await dash();
        await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'the open memory, restored');
        await until(
          'the form with the unsaved edit after hide and show',
          async () => (await (await dash()).getByLabel('Value').inputValue()) === edited,
        );
        const q = await f.getByRole('searchbox', { name: 'Search memories' }).inputValue();
        if (q !== 'auditors rounding') throw new Error(`the query was not restored (${JSON.stringify(q)})`);
        if (cliJson('get', 'project.sample-app', 'rounding-rule').value === edited) throw new Error('the draft was saved without Save');
        // Close would discard it: the editor asks; Cancel keeps it
        await f.getByRole('button', { name: 'Close', exact: true }).click();
        await answer('Discard your unsaved changes to "rounding-rule"?', 'Cancel');
        f = await dash();
        if ((await f.getByLabel('Value').inputValue()) !== edited) throw new Error('Cancel did not keep the edit');
        await f.getByRole('button', { name: 'Discard changes', exact: true }).click();
        await answer('Discard your unsaved changes to "rounding-rule"?', 'Discard changes');
        await until('the stored value back in the form', async () =>
          /edited in the dashboard\.$/.test(await (await dash()).getByLabel('Value').inputValue()),
        );
      },
    );

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

    await check('Delete and Forget ask first; Undo restores a delete', 'dash-07b-undo.png', async () => {
      let f = await dash();
      await visible(f.getByRole('heading', { name: 'welcome' }), 'welcome open');
      await f.getByRole('button', { name: 'Forget…' }).click();
      const detail = await answer('Forget "welcome"?', 'Cancel');
      if (!/refuses to store this value in project\.sample-app again/.test(detail) || !/permanent/.test(detail))
        throw new Error(`the Forget question does not explain it: ${detail}`);
      if (cliJson('get', 'project.sample-app', 'welcome').deletedAt) throw new Error('Forget acted before the answer');
      await f.getByRole('button', { name: 'Delete…' }).click();
      await answer('Delete "welcome"?', 'Cancel');
      if (cliJson('get', 'project.sample-app', 'welcome', '--include-deleted').deletedAt) throw new Error('Delete acted on Cancel');
      await f.getByRole('button', { name: 'Delete…' }).click();
      await answer('Delete "welcome"?', 'Delete');
      f = await dash();
      const toast = await visible(f.locator('.toast', { hasText: 'Deleted project.sample-app/welcome.' }), 'the "Deleted" notice');
      await until(
        'welcome deleted in the store',
        async () => !!cliJson('get', 'project.sample-app', 'welcome', '--include-deleted').deletedAt,
      );
      await page.screenshot({ path: path.join(ART, 'dash-07b-deleted.png') });
      await toast.getByRole('button', { name: 'Undo' }).click();
      await visible(f.locator('.toast', { hasText: 'Undone' }), 'the undo confirmed');
      await until('welcome restored in the store', async () => !cliJson('get', 'project.sample-app', 'welcome').deletedAt);
    });

    await check(
      'Reject asks first, the Review tab counts the queue, and Undo puts a rejected memory back',
      'dash-06a-reject.png',
      async () => {
        cli(
          'add',
          'project.sample-app',
          'agent-guess-2',
          'An agent thinks invoices are due in 7 days.',
          '--kind',
          'fact',
          '--proposed',
          '--actor',
          'agent:e2e',
        );
        const f = await dash();
        const tab = f.getByRole('tab', { name: 'Review' });
        await until('the count 2 on the Review tab', async () => /2/.test(await tab.textContent()));
        await tab.click();
        await visible(f.getByRole('button', { name: 'project.sample-app/agent-guess-2' }), 'the second proposal');
        await f.getByRole('button', { name: 'Reject agent-guess-2', exact: true }).click();
        await answer('Reject "agent-guess-2"?', 'Reject');
        const toast = await visible(
          f.locator('.toast', { hasText: 'Rejected project.sample-app/agent-guess-2.' }),
          'the "Rejected" notice',
        );
        await until(
          'the proposal forgotten',
          async () => !!cliJson('get', 'project.sample-app', 'agent-guess-2', '--include-deleted').deletedAt,
        );
        await toast.getByRole('button', { name: 'Undo' }).click();
        await until('the proposal back', async () => cliJson('get', 'project.sample-app', 'agent-guess-2').status === 'proposed');
        await visible(f.getByRole('button', { name: 'project.sample-app/agent-guess-2' }), 'the proposal back in the queue');
        // bulk: select it, Reject 1 selected asks too; this time it stays rejected
        await f.getByRole('checkbox', { name: 'Select project.sample-app/agent-guess-2' }).check();
        await f.getByRole('button', { name: 'Reject 1 selected…' }).click();
        await answer('Reject "agent-guess-2"?', 'Reject');
        await until(
          'the proposal rejected again',
          async () => !!cliJson('get', 'project.sample-app', 'agent-guess-2', '--include-deleted').deletedAt,
        );
        await visible(f.getByText(/^1 proposed memory waiting/), 'one left in the queue');
      },
    );

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

    await check('"New memory" creates a memory and opens it', 'dash-06c-new.png', async () => {
      let f = await dash();
      await f.getByRole('tab', { name: 'Search' }).click();
      await f.getByRole('button', { name: 'New memory', exact: true }).click();
      await visible(f.getByRole('heading', { name: 'New memory' }), 'the new-memory form');
      await f.getByLabel('Key', { exact: true }).fill('made-in-dashboard');
      await f.getByLabel('Value', { exact: true }).fill('Created with the New memory form of the dashboard.');
      await f.getByRole('button', { name: 'Create', exact: true }).click();
      f = await dash();
      await visible(f.getByRole('heading', { name: 'made-in-dashboard' }), 'the created memory, opened');
      const m = cliJson('get', 'project.sample-app', 'made-in-dashboard');
      if (!/New memory form/.test(m.value)) throw new Error(`stored: ${m.value}`);
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
        // the file opened beside the dashboard, in a group of its own: one group again, so the steps after this one
        // (the layout checks at given window widths) see the dashboard as wide as the editor area
        await palette('View: Join All Editor Groups');
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
      // the editor's own open dialog (code-server's simple file dialog: a quick input holding a path)
      await f.getByRole('button', { name: 'Choose a file to import…' }).click();
      const pathBox = await visible(page.locator('.quick-input-widget input'), "the editor's open dialog");
      // The dialog fills in its start folder itself, later on a loaded machine: a path typed before that is
      // overwritten. Wait for its own value, then type the file's path until the dialog has accepted it (it
      // closes); a reset value is typed again.
      await until("the open dialog's start folder", async () => (await pathBox.inputValue()).length > 0);
      await until(
        'the open dialog to accept the file',
        async () => {
          if (!(await page.locator('.quick-input-widget').isVisible())) return true; // accepted on an earlier round
          if ((await pathBox.inputValue()) !== file) await pathBox.fill(file);
          // the dialog has read the folder and lists the file: its "Preview import" button accepts the path
          await visible(
            page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(file) }),
            'the file in the dialog',
            5000,
          );
          if ((await pathBox.inputValue()) !== file) return false;
          await page.locator('.quick-input-widget .monaco-button', { hasText: 'Preview import' }).click({ timeout: 5000 });
          await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 5000 });
          return true;
        },
        60000,
      );
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

    await check(
      'memory branches: a conflict side by side, Merge off until decided, then merged into the base',
      'dash-08c-branch-merge.png',
      async () => {
        // A branch of project.sample-app with a conflict (the base moved after the branch wrote the key) and an added key.
        cli('add', 'project.sample-app', 'cache-policy', 'Cache API responses for 5 minutes.', '--kind', 'decision');
        cli('branch', 'create', 'ui-merge', 'project.sample-app');
        cli('add', 'project.sample-app', 'cache-policy', 'Cache API responses for 1 hour (branch).', '--branch', 'ui-merge');
        cli('add', 'project.sample-app', 'cache-added', 'Added on the branch only.', '--branch', 'ui-merge');
        cli('add', 'project.sample-app', 'cache-policy', 'Cache API responses for 10 minutes (base).', '--kind', 'decision');
        const base = cliJson('get', 'project.sample-app', 'cache-policy');
        await palette('Cairn: Review Memory Branches');
        let f = await dash();
        await visible(f.getByRole('tab', { name: 'Branches', selected: true }), 'the Branches tab, selected');
        await (await visible(f.getByRole('button', { name: 'ui-merge' }), 'the open branch')).click();
        const conflict = await visible(f.getByRole('region', { name: 'Conflict: project.sample-app/cache-policy' }), 'the conflict');
        await visible(conflict.getByRole('columnheader', { name: `Base now (version ${base.version})` }), 'the base column');
        await visible(conflict.getByRole('columnheader', { name: 'Branch (changed)' }), 'the branch column');
        await visible(conflict.getByText('10 minutes (base)'), 'the base value');
        await visible(conflict.getByText('1 hour (branch)'), 'the branch value side by side');
        await visible(f.getByRole('list', { name: 'Changes' }).getByText('project.sample-app/cache-added'), 'the added key');
        const merge = f.getByRole('button', { name: 'Merge into project.sample-app' });
        await visible(merge, 'the Merge button');
        if (!(await merge.isDisabled())) throw new Error('Merge is enabled before the conflict has a decision');
        await visible(f.getByText(/^Decide 1 more conflict to merge/), 'what Merge waits for');
        metrics.axeDarkBranches = await axe(f, 'dark-branches');
        await conflict.getByLabel('Take branch').check();
        await until('Merge enabled once decided', async () => !(await merge.isDisabled()));
        // an edited merged value: Merge is off again while it is empty
        await conflict.getByLabel('Edit a merged value').check();
        const merged = await visible(conflict.getByLabel('Merged value for cache-policy'), 'the merged value field');
        await merged.fill('');
        await until('Merge off with an empty merged value', () => merge.isDisabled());
        await merged.fill('Cache API responses for 30 minutes (merged in the dashboard).');
        await until('Merge enabled with a merged value', async () => !(await merge.isDisabled()));
        await page.screenshot({ path: path.join(ART, 'dash-08c-branch-conflict.png') });
        await merge.click();
        f = await dash();
        await visible(f.getByText(/Merged ui-merge into project\.sample-app: 2 changes written\./), 'the merge result');
        const after = cliJson('get', 'project.sample-app', 'cache-policy');
        if (after.value !== 'Cache API responses for 30 minutes (merged in the dashboard).') throw new Error(`base holds: ${after.value}`);
        if (cliJson('get', 'project.sample-app', 'cache-added').value !== 'Added on the branch only.')
          throw new Error('cache-added not merged');
        if (cliJson('branch', 'list').branches.some((b) => b.name === 'ui-merge')) throw new Error('ui-merge is still open');
      },
    );

    await check('memory branches: Discard asks first, then the branch is gone', 'dash-08d-branch-discard.png', async () => {
      cli('branch', 'create', 'ui-discard', 'project.sample-app');
      cli('add', 'project.sample-app', 'discard-me', 'Only on the discarded branch.', '--branch', 'ui-discard');
      const f = await dash();
      await f.getByRole('button', { name: 'Refresh', exact: true }).click();
      await (await visible(f.getByRole('button', { name: 'ui-discard' }), 'the new branch')).click();
      await visible(f.getByRole('list', { name: 'Changes' }).getByText('project.sample-app/discard-me'), 'its change');
      await f.getByRole('button', { name: 'Discard…' }).click();
      const text = await answer('Discard memory branch "ui-discard"?', 'Discard branch');
      if (!/cannot be undone/.test(text)) throw new Error(`the question: ${text}`);
      await visible(f.getByText(/Discarded ui-discard\./), 'the discard result');
      if (cliJson('branch', 'list').branches.some((b) => b.name === 'ui-discard')) throw new Error('ui-discard is still open');
      let found = true;
      try {
        cli('get', 'project.sample-app', 'discard-me');
      } catch {
        found = false;
      }
      if (found) throw new Error('the discarded write reached the base');
    });

    await check(
      'memory branches: New branch refuses a bad name and a taken one at the field, then creates one and lists it',
      'dash-08e-branch-new.png',
      async () => {
        cli('branch', 'create', 'ui-taken', 'project.sample-app');
        const form = async () => (await dash()).getByRole('region', { name: 'New memory branch' });
        // open the form (retried: the tab may re-render under the click)
        await until('the New branch form open', async () => {
          const f = await dash();
          if (await (await form()).isVisible()) return true;
          await f.getByRole('button', { name: 'New branch', exact: true }).click({ timeout: 2000 });
          return (await form()).isVisible();
        });
        const root = await visible((await form()).getByLabel('Namespace it branches'), 'the namespace field');
        if ((await root.inputValue()) !== 'project.sample-app') throw new Error(`the root starts as "${await root.inputValue()}"`);
        const submit = async (name) => {
          const fm = await form();
          await (await visible(fm.getByLabel('Name', { exact: true }), 'the name field')).fill(name);
          await fm.getByRole('button', { name: 'Create branch' }).click();
        };
        const nameError = async () => (await form()).locator('#branch-name-error');
        await submit('bad name!');
        await visible(
          (await nameError()).locator('.error-text', { hasText: /^A branch name is letters, digits/ }),
          'the rule under the name',
        );
        const name = (await form()).getByLabel('Name', { exact: true });
        if ((await name.getAttribute('aria-invalid')) !== 'true') throw new Error('the name field is not marked invalid');
        await submit('ui-taken');
        const err = await nameError();
        await visible(
          err.locator('.error-text', { hasText: 'A memory branch of that name is already open; choose another name.' }),
          'the taken name',
        );
        await visible(err.locator('.error-details', { hasText: /^Details: InvalidState/ }), "the daemon's error on a details line");
        await visible(
          (await dash()).getByRole('list', { name: 'Open branches' }).getByRole('button', { name: 'ui-taken' }),
          'the list reloaded after the refusal: the branch made elsewhere is listed',
        );
        await page.screenshot({ path: path.join(ART, 'dash-08e-branch-taken.png') });
        await submit('ui-new');
        const f = await dash();
        await visible(f.getByText(/Created ui-new of project\.sample-app\./), 'the result');
        await visible(f.getByRole('list', { name: 'Open branches' }).getByRole('button', { name: 'ui-new' }), 'the new branch listed');
        const made = cliJson('branch', 'list').branches.find((b) => b.name === 'ui-new');
        if (!made || made.root !== 'project.sample-app' || made.createdBy !== 'dashboard')
          throw new Error(`branch list: ${JSON.stringify(made)}`);
        cli('branch', 'discard', 'ui-new');
        cli('branch', 'discard', 'ui-taken');
      },
    );

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

    // Layout: at every width, with the sidebar open, nothing is cut off; one column below ~900 px of panel.
    const layout = async (theme, width) => {
      await page.setViewportSize({ width, height: 900 });
      if (!(await page.locator('.part.sidebar').isVisible())) await palette('View: Toggle Primary Side Bar Visibility');
      await visible(page.locator('.part.sidebar'), 'the sidebar');
      let f = await dash();
      await f.getByRole('tab', { name: 'Search' }).click();
      await (await searchFor(f, 'invoice', 'rounding-rule')).click();
      f = await dash();
      await visible(f.getByRole('heading', { name: 'rounding-rule' }), 'detail heading');
      await f.getByRole('tab', { name: 'History' }).click();
      await visible(f.locator('table.history'), 'the history table');
      const m = await f.evaluate(() => {
        const vw = document.documentElement.clientWidth;
        const box = (sel) => document.querySelector(sel)?.getBoundingClientRect();
        const detail = box('.detail-pane');
        const list = box('.dashboard > .pane:not(.detail-pane)');
        const cut = [...document.querySelectorAll('.dashboard *')]
          .filter((el) => {
            const r = el.getBoundingClientRect();
            return r.width > 0 && r.right > vw + 1 && !el.closest('.table-scroll, .tabs');
          })
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}`.slice(0, 40));
        const tabs = [...document.querySelectorAll('.tabs [role=tab]')].map((t) => Math.round(t.getBoundingClientRect().height));
        const scrollers = [...document.querySelectorAll('.table-scroll, .tabs')].filter((el) => el.scrollWidth > el.clientWidth + 1).length;
        return { vw, scrollW: document.documentElement.scrollWidth, oneColumn: detail.left === list.left, cut, tabs, scrollers };
      });
      await page.screenshot({ path: path.join(ART, `dash-layout-${width}-${theme}.png`) });
      metrics[`layout${width}${theme}`] = m;
      if (m.scrollW > m.vw + 1) throw new Error(`the panel scrolls sideways (${m.scrollW} > ${m.vw})`);
      if (m.cut.length) throw new Error(`cut off at the right edge: ${m.cut.slice(0, 5).join(', ')}`);
      if (new Set(m.tabs).size !== 1) throw new Error(`a tab label wraps (heights ${m.tabs.join(', ')})`);
      if (m.scrollers) throw new Error(`${m.scrollers} table(s) or tab rows need scrolling at ${m.vw} px`);
      if (m.oneColumn !== m.vw < 900) throw new Error(`${m.oneColumn ? 'one column' : 'two columns'} at a ${m.vw} px panel`);
      await f.getByRole('tab', { name: 'Details' }).click();
    };
    for (const theme of ['dark', 'light']) {
      if (theme === 'light') {
        await page.setViewportSize({ width: 1440, height: 900 });
        await chooseTheme('Light Modern');
        await themeIs('light');
      }
      for (const width of [1440, 1024, 800])
        await check(
          `${theme} theme at ${width} px with the sidebar open: nothing cut off, one column below ~900 px`,
          `dash-11-${theme}-${width}.png`,
          () => layout(theme, width),
        );
    }
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

// @cairn in the editor's real Chat view, with episode capture on, through to the dashboard's Timeline: the issue's
// "done when" walked as a person would, in code-server with the installed .vsix and the offline chat fixture
// (fixtures/chat-model: a default chat participant and a deterministic language model, so the Chat view is on
// without a network or Copilot). Screenshots in ARTIFACTS:
//   chat-01-capture.png    capture turned on in the Settings editor; the status bar shows the record mark
//   chat-02-view.png       the Chat view opened from the palette; the fixture's default participant answers
//   chat-03-search.png     `@cairn /search …` typed into the chat input: @cairn's answer in the chat
//   chat-04-answer.png     plain @cairn questions: the model's answers, with the memories @cairn gave it
//   chat-05-timeline.png   the session on the dashboard's Timeline: the turns and @cairn's answers
//   chat-06-found.png      a turn found by meaning (no word in common with it), expanded
//   chat-07-approved.png   a fact proposed from that turn, beside it in Review, approved
// env: CS_URL, ARTIFACTS, RESULTS (json {passed, failed, checks}), CLI + NODE_BIN, CHROMIUM
const { launchBrowser, until, visible, checkRecorder, palette, webviewFrame } = require('./browser');
const { execFileSync } = require('child_process');
const fs = require('fs');

const ART = process.env.ARTIFACTS;
let page;
const { lap, check, finish } = checkRecorder({ name: 'chat', art: ART, page: () => page });

const cli = (...args) => execFileSync(process.env.NODE_BIN, [process.env.CLI, ...args], { stdio: 'pipe', encoding: 'utf8' });
const cliJson = (...args) => JSON.parse(cli(...args, '--json'));
const dash = () => webviewFrame(page, '#cairn-dashboard-root', 'the dashboard webview');

// The turn the Timeline steps look for, and a query about it that shares none of its words: only its meaning matches.
const GATEWAY_TURN = 'the otter gateway listens on port 8443 now, right?';
const BY_MEANING = 'which network socket does that service accept connections at';

/**
 * Type a request into the chat input and send it; resolves with the response, signed by `by`, and its text once `done`
 * matches it. `done` must match the whole answer (answers stream in word by word), and the text returned is the one
 * that matched: the chat list may re-render the row afterwards.
 */
async function ask(text, done, what, by = 'Cairn') {
  const input = await visible(page.locator('.interactive-input-part .interactive-input-editor .monaco-editor'), 'the chat input');
  await input.click();
  await page.keyboard.type(text);
  // the send button, not Enter: Enter would accept a completion if the @/slash suggestions are open
  await (await visible(page.locator('.interactive-input-part .chat-execute-toolbar .codicon-send'), 'the send button')).click();
  const request = page.locator('.interactive-item-container.interactive-request', { hasText: text.replace(/^@cairn /, '') }).last();
  await visible(request, `the request "${text}" in the chat`);
  const response = page.locator('.interactive-item-container.interactive-response').last();
  const answer = await until(
    what,
    async () => {
      const t = (await response.textContent()) || '';
      return done.test(t) ? t : null;
    },
    60000,
  );
  await visible(response.locator('.username', { hasText: by }), `the answer signed by ${by}`);
  return { response, text: answer };
}

(async () => {
  const { ctx, udd } = await launchBrowser({ width: 1440, height: 900 });
  try {
    page = ctx.pages()[0] || (await ctx.newPage());
    const clog = fs.createWriteStream(`${ART}/chat-browser-console.log`);
    page.on('console', (m) => clog.write(`[${m.type()}] ${m.text()}\n`));
    page.on('pageerror', (e) => clog.write(`[pageerror] ${e.stack || e.message}\n`));
    await page.goto(process.env.CS_URL);
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    await visible(page.locator('.statusbar-item .codicon-database'), 'status bar: connected', 90000);
    lap('workbench loaded and connected');

    await check('capture turned on in the Settings editor shows the record mark', 'chat-01-capture.png', async () => {
      if (await page.locator('.statusbar-item .codicon-record').count()) throw new Error('the record mark shows before capture is on');
      await palette(page, 'Preferences: Open Settings (UI)');
      const search = await visible(page.locator('.settings-editor .settings-header .monaco-editor'), 'the settings search');
      await search.click();
      await page.keyboard.type('cairn.episodes.capture');
      const box = await visible(page.getByRole('checkbox', { name: 'cairn.episodes.capture' }), 'the Capture checkbox');
      if ((await box.getAttribute('aria-checked')) !== 'false') throw new Error('capture is already on');
      await box.click();
      await until('the checkbox ticked', async () => (await box.getAttribute('aria-checked')) === 'true');
      await visible(page.locator('.statusbar-item .codicon-record'), 'the record mark in the status bar');
    });

    await check('the Chat view opens offline, with @cairn in it', 'chat-02-view.png', async () => {
      await palette(page, 'Chat: Focus on Chat View');
      await visible(page.locator('.interactive-input-part .interactive-input-editor .monaco-editor'), 'the chat input');
      // a request without @: the fixture's default participant answers, so the fixture (and its model) is active
      await ask(
        'hello from the e2e test',
        /The e2e default participant got: hello from the e2e test/,
        'the default answer',
        'E2E default chat',
      );
    });

    await check('@cairn /search typed into the chat input answers in the chat', 'chat-03-search.png', async () => {
      const r = await ask(
        '@cairn /search invoice rounding',
        /1 memory for invoice rounding in project\.sample-app/,
        "@cairn's search answer",
      );
      await visible(r.response.getByText(/project\.sample-app\/rounding-rule/), 'the memory found');
      await visible(r.response.getByText(/Invoice totals round half-even/), 'its value');
    });

    await check('plain @cairn questions: the model answers with the memories @cairn chose', 'chat-04-answer.png', async () => {
      // the fixture model repeats the question and names the memory keys in the <workspace_memories> block it was given
      const r = await ask(
        '@cairn how are invoice totals rounded?',
        /E2E model answer to "how are invoice totals rounded\?"\. (Memories in the prompt: [^.]*|No memories in the prompt)\./,
        'the whole model answer',
      );
      const said = r.text;
      if (!/Memories in the prompt: [^.]*\brounding-rule\b/.test(said)) throw new Error(`the prompt lacked rounding-rule: ${said}`);
      await ask(
        `@cairn ${GATEWAY_TURN}`,
        /E2E model answer to "the otter gateway listens on port 8443[^"]*"\. (Memories in the prompt: [^.]*|No memories in the prompt)\./,
        'the whole second answer',
      );
    });

    await check("the session on the Timeline: the turns and @cairn's answers", 'chat-05-timeline.png', async () => {
      await palette(page, 'Cairn: Open Dashboard');
      const f = await dash();
      await (await visible(f.getByRole('tab', { name: 'Timeline' }), 'the Timeline tab')).click();
      await (await visible(f.getByRole('button', { name: /Editor session in ws/ }), 'the editor session on the timeline')).click();
      const events = await visible(f.getByRole('list', { name: 'Events of Editor session in ws' }), "the session's events");
      await visible(events.getByText('/search invoice rounding'), 'the /search turn');
      await visible(events.getByText(/1 memory for \**invoice rounding/), "@cairn's search answer");
      await visible(events.getByText('how are invoice totals rounded?'), 'the question');
      await visible(events.getByText(GATEWAY_TURN), 'the last turn');
      await visible(events.getByText(/E2E model answer to "the otter gateway/), "the model's last answer");
    });

    await check('a turn found by meaning and expanded', 'chat-06-found.png', async () => {
      const words = (s) => new Set(s.toLowerCase().match(/[a-z0-9]+/g));
      const shared = [...words(BY_MEANING)].filter((w) => words(GATEWAY_TURN).has(w));
      if (shared.length) throw new Error(`the query shares words with the turn: ${shared.join(', ')}`);
      const f = await dash();
      await (await visible(f.getByRole('searchbox', { name: 'Search events' }), 'the event search')).fill(BY_MEANING);
      const hits = await visible(f.getByRole('list', { name: 'Event search results' }), 'event hits');
      const top = hits.locator('li.hit-group').first();
      await visible(top.locator('li.event.hit', { hasText: 'otter gateway listens on port 8443' }), 'the gateway turn as the top hit');
      // in context (one event each side), then expanded: the session's first turn comes into view
      if (await top.getByText('/search invoice rounding').count()) throw new Error('expanded before Expand');
      await (await visible(top.getByRole('button', { name: /^Expand event #/ }), 'Expand')).click();
      await visible(top.getByText('/search invoice rounding'), 'the events around it, expanded');
    });

    await check('a fact proposed from the turn, shown beside it in Review, approved', 'chat-07-approved.png', async () => {
      const f = await dash();
      const hits = f.getByRole('list', { name: 'Event search results' });
      const turn = hits.locator('li.event.hit', { hasText: GATEWAY_TURN }).first();
      await (await visible(turn.getByRole('checkbox'), 'the turn\'s "use for a proposal" box')).check();
      await f.getByRole('textbox', { name: 'Proposal key' }).fill('otter-gateway-port');
      await f.getByRole('textbox', { name: 'Proposal value' }).fill('The otter gateway listens on port 8443.');
      await f.getByRole('button', { name: 'Propose for review' }).click();
      await visible(f.getByText(/^Proposed project\.sample-app\/otter-gateway-port from events #\d+/), 'the proposal made');
      if (cliJson('get', 'project.sample-app', 'otter-gateway-port').status !== 'proposed') throw new Error('not waiting for review');
      await f.getByRole('tab', { name: 'Review' }).click();
      await visible(f.getByRole('button', { name: 'project.sample-app/otter-gateway-port' }), 'the proposal in review');
      await visible(f.getByRole('list', { name: 'Source events' }).getByText(GATEWAY_TURN), 'its source turn beside it');
      await f.getByRole('button', { name: 'Approve otter-gateway-port', exact: true }).click();
      await until('the approved fact', () => cliJson('get', 'project.sample-app', 'otter-gateway-port').status === 'active' || null, 15000);
    });
  } finally {
    await ctx.close().catch(() => {});
    fs.rmSync(udd, { recursive: true, force: true });
    finish(process.env.RESULTS);
  }
})().catch((e) => {
  console.error('chat e2e failed:', e);
  process.exit(2);
});

/**
 * Anchors that follow the code, through the daemon: LSP documents (opened, edited, saved), `anchors/check` on a real
 * temporary git repository (git mv followed, a commit that changes the anchored code), injection's just-in-time
 * citation check, and the write rules that keep what the daemon knows of an anchor. Hovers show only anchors that
 * still match; an anchor whose code is gone is stale and its memory goes to review, with the reason in history.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Anchor, Memory } from '../../daemon/src/protocol/types';
import { memoryFull } from '../../daemon/src/mcp/format';
import { LspDocuments } from '../../daemon/src/server/lsp';
import { fingerprint } from '../../daemon/src/text/anchor-locate';
import { rejectsWith, tempCore, tempDir } from '../helpers';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

const NS = 'project.app';
const SCOPE = { root: NS, includeUser: true };

const SOURCE = [
  'import { round } from "./money";',
  '',
  'export function computeTotal(items: Item[]): number {',
  '  let total = 0;',
  '  for (const item of items) total += item.price * item.quantity;',
  '  return round(total, 2);',
  '}',
  '',
  'export function describeItem(item: Item): string {',
  '  return `${item.name} x${item.quantity}`;',
  '}',
  '',
].join('\n');

/** LspDocuments on a fake connection: the handlers it registers, callable like a client's notifications. */
function lspFor(root: string) {
  const lsp = new LspDocuments(t.store);
  const handlers = new Map<string, (p: unknown) => unknown>();
  const conn = {
    onNotification: (m: string, f: (p: unknown) => unknown) => handlers.set(m, f),
    onRequest: (m: string, f: (p: unknown) => unknown) => handlers.set(m, f),
  };
  lsp.register(conn as never);
  lsp.initialize({ rootUri: `file://${root}`, initializationOptions: { projectNamespace: NS } });
  const send = (m: string, p: unknown) => handlers.get(m)!(p);
  return { lsp, send };
}

async function remember(key: string, anchor: Anchor): Promise<Memory> {
  return (await t.core.call(R.upsert, { namespace: NS, key, value: `about ${key}`, anchors: [anchor] })).memory;
}
const get = (id: string) => t.core.call(R.get, { id });

describe('LSP documents', () => {
  const root = '/home/dev/space';
  const uri = `file://${root}/src/billing.ts`;

  it('records a fingerprint when it first sees the file, and follows code moved and saved', async () => {
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const { lsp, send } = lspFor(root);
    send('textDocument/didOpen', { textDocument: { uri, text: SOURCE } });
    const fp = (await get(m.id)).anchors[0];
    assert.deepEqual({ ...fp }, { path: 'src/billing.ts', startLine: 4, endLine: 6, ...fingerprint(SOURCE, 4, 6)! });

    // the function moves below the other one (a whole-text change, as a formatter or a paste sends it), then saved
    const l = SOURCE.split('\n');
    const moved = [...l.slice(0, 2), ...l.slice(8, 12), ...l.slice(2, 8)].join('\n');
    send('textDocument/didChange', { textDocument: { uri }, contentChanges: [{ text: moved }] });
    const a = (await get(m.id)).anchors[0];
    assert.deepEqual([a.startLine, a.endLine, a.relocated?.how, a.relocated?.from], [8, 10, 'moved', 'src/billing.ts:4-6']);
    assert.equal((await get(m.id)).version, m.version, 'moving an anchor is bookkeeping, not a new version');
    // agents reading it through MCP are told too
    assert.match(memoryFull(await get(m.id)), /anchor: src\/billing\.ts:8-10 \[re-located from src\/billing\.ts:4-6\]/);
    const hover = lsp.hover(uri, { line: 8, character: 2 })?.contents.value ?? '';
    assert.match(hover, /about rounding/);
    assert.match(hover, /Anchor re-located, from src\/billing\.ts:4-6/);
    assert.equal(lsp.hover(uri, { line: 4, character: 2 }), null, 'nothing on the lines it left');
  });

  it('hides an anchor whose lines were edited away at once, and sends its memory to review on save', async () => {
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const { lsp, send } = lspFor(root);
    send('textDocument/didOpen', { textDocument: { uri, text: SOURCE } });
    assert.match(lsp.hover(uri, { line: 4, character: 0 })?.contents.value ?? '', /about rounding/);
    // delete lines 4-6 (0-based 3..5) while typing: not saved yet
    send('textDocument/didChange', {
      textDocument: { uri },
      contentChanges: [{ range: { start: { line: 3, character: 0 }, end: { line: 6, character: 0 } }, text: '' }],
    });
    for (let line = 0; line < 9; line++) assert.equal(lsp.hover(uri, { line, character: 0 }), null, `a hover on line ${line + 1}`);
    assert.equal((await get(m.id)).status, 'active', 'nothing is decided before the save');
    send('textDocument/didSave', { textDocument: { uri } });
    const after = await get(m.id);
    assert.deepEqual([after.status, after.version, after.anchors[0].stale], ['proposed', m.version + 1, true]);
    assert.match(after.anchors[0].staleReason!, /no longer in the file/);
    assert.match(memoryFull(after), /anchor: src\/billing\.ts:4 \[stale: src\/billing\.ts:4: the anchored lines are no longer in the file/);
    const h = await t.core.call(R.history, { id: m.id });
    const last = h.entries[0];
    assert.equal(last.actor, 'system:anchors');
    assert.match(last.reason ?? '', /^the code it describes changed: src\/billing\.ts:4: the anchored lines are no longer in the file/);
    assert.equal(last.previous?.status, 'active', 'the previous state is kept in history');
    // a stale anchor is never shown, and is not checked again
    assert.equal(lsp.hover(uri, { line: 3, character: 0 }), null);
    send('textDocument/didSave', { textDocument: { uri } });
    assert.equal((await get(m.id)).version, after.version);
  });

  it('judges code gone only on saved text: not on a whole-text change, nor on a document opened with unsaved edits', async () => {
    const dir = tempDir('cairn-anchors-lsp-');
    fs.mkdirSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src', 'billing.ts'), SOURCE);
    const fileUri = `file://${dir}/src/billing.ts`;
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6, ...fingerprint(SOURCE, 4, 6)! });
    const without = SOURCE.split('\n')
      .filter((_, i) => i < 3 || i > 5)
      .join('\n');
    const { lsp, send } = lspFor(dir);
    // opened with edits the disk does not have (an editor restoring a dirty buffer)
    send('textDocument/didOpen', { textDocument: { uri: fileUri, text: without } });
    assert.deepEqual([(await get(m.id)).status, (await get(m.id)).anchors[0].stale], ['active', undefined]);
    assert.equal(lsp.hover(fileUri, { line: 3, character: 0 }), null, 'but no hover on lines that no longer hold the code');
    send('textDocument/didChange', { textDocument: { uri: fileUri }, contentChanges: [{ text: without + '\n// more\n' }] });
    assert.equal((await get(m.id)).status, 'active');
    send('textDocument/didSave', { textDocument: { uri: fileUri } });
    assert.deepEqual([(await get(m.id)).status, (await get(m.id)).anchors[0].stale], ['proposed', true]);
  });

  it('a cut and paste before saving is followed, not staled', async () => {
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const { send } = lspFor(root);
    send('textDocument/didOpen', { textDocument: { uri, text: SOURCE } });
    send('textDocument/didChange', {
      textDocument: { uri },
      contentChanges: [{ range: { start: { line: 3, character: 0 }, end: { line: 6, character: 0 } }, text: '' }],
    });
    // paste the three lines into the other function's body, then save
    send('textDocument/didChange', {
      textDocument: { uri },
      contentChanges: [
        {
          range: { start: { line: 6, character: 0 }, end: { line: 6, character: 0 } },
          text: SOURCE.split('\n').slice(3, 6).join('\n') + '\n',
        },
      ],
    });
    send('textDocument/didSave', { textDocument: { uri } });
    const a = (await get(m.id)).anchors[0];
    assert.deepEqual([a.stale, a.startLine, a.endLine, a.relocated?.how], [undefined, 7, 9, 'moved']);
    assert.equal((await get(m.id)).status, 'active');
  });

  it('shows code changed in place with a note, as long as it is still like itself', async () => {
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const { lsp, send } = lspFor(root);
    send('textDocument/didOpen', { textDocument: { uri, text: SOURCE } });
    send('textDocument/didSave', { textDocument: { uri }, text: SOURCE.replace('round(total, 2)', 'round(total, 4)') });
    const a = (await get(m.id)).anchors[0];
    assert.deepEqual([a.startLine, a.endLine, a.relocated?.how, a.stale], [4, 6, 'similar', undefined]);
    assert.match(lsp.hover(uri, { line: 5, character: 0 })?.contents.value ?? '', /The code changed since this was anchored/);
    // and back as it was: the note goes
    send('textDocument/didSave', { textDocument: { uri }, text: SOURCE });
    assert.equal((await get(m.id)).anchors[0].relocated, undefined);
  });
});

describe('write rules keep what the daemon knows of an anchor', () => {
  it('an anchor given back as read, or without a fingerprint, keeps the stored one (stale stays stale); a new fingerprint starts afresh', async () => {
    const fp = fingerprint(SOURCE, 4, 6)!;
    const m = await remember('k', { path: 'a.ts', startLine: 4, endLine: 6, ...fp, stale: true, staleReason: 'client says' });
    assert.deepEqual(m.anchors[0], { path: 'a.ts', startLine: 4, endLine: 6, ...fp }, 'daemon-only fields are dropped');
    t.store.staleAnchors(
      t.store.anchorsOf(m.id)!.rowid,
      [{ ...m.anchors[0], stale: true, staleReason: 'gone' }],
      'the code it describes changed: test',
    );
    const stored = (await get(m.id)).anchors[0];
    // saving the memory with the anchor as a form shows it (path and lines) keeps it stale
    const saved = (
      await t.core.call(R.upsert, { namespace: NS, key: 'k', value: 'edited', anchors: [{ path: 'a.ts', startLine: 4, endLine: 6 }] })
    ).memory;
    assert.deepEqual(saved.anchors[0], stored);
    // and so does saving it with the anchors as read (an editor keeps the stored fields)
    const asRead = (await t.core.call(R.upsert, { namespace: NS, key: 'k', value: 'edited again', anchors: saved.anchors })).memory;
    assert.deepEqual(asRead.anchors[0], stored);
    // anchoring again (a new fingerprint of the lines as they are now) starts afresh
    const now = fingerprint(SOURCE.replace('round(total, 2)', 'round(total, 4)'), 4, 6)!;
    const again = (
      await t.core.call(R.upsert, {
        namespace: NS,
        key: 'k',
        value: 'edited',
        anchors: [{ path: 'a.ts', startLine: 4, endLine: 6, ...now }],
      })
    ).memory;
    assert.deepEqual([again.anchors[0].stale, again.anchors[0].hash], [undefined, now.hash]);
  });

  it('refuses a malformed fingerprint', async () => {
    await rejectsWith(
      t.core.request('memory/upsert', { namespace: NS, key: 'k', value: 'v', anchors: [{ path: 'a', hash: 'xyz' }] }),
      'InvalidParams',
      'anchors[0].hash',
    );
    await rejectsWith(
      t.core.request('memory/upsert', { namespace: NS, key: 'k', value: 'v', anchors: [{ path: 'a', commit: '--upload-pack=x' }] }),
      'InvalidParams',
      'anchors[0].commit',
    );
  });
});

// ---------------------------------------------------------------------------
// a real git repository
// ---------------------------------------------------------------------------
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
  });
}

function repo(): string {
  const dir = tempDir('cairn-anchors-git-');
  git(dir, 'init', '-q');
  fs.mkdirSync(path.join(dir, 'src'));
  fs.writeFileSync(path.join(dir, 'src', 'billing.ts'), SOURCE);
  fs.writeFileSync(path.join(dir, 'README.md'), '# app\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-qm', 'first');
  return dir;
}

describe('anchors/check on a git repository', () => {
  it('fingerprints with the HEAD commit, follows a git mv (committed or only staged) and code moved in the file', async () => {
    const dir = repo();
    const head = git(dir, 'rev-parse', 'HEAD').trim();
    const m = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const first = await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.deepEqual([first.checked, first.fingerprinted], [1, 1]);
    assert.equal((await get(m.id)).anchors[0].commit, head);

    git(dir, 'mv', 'src/billing.ts', 'src/invoice.ts');
    const staged = await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.deepEqual(
      [staged.relocated, staged.stale, staged.changes[0].status, staged.changes[0].to],
      [1, 0, 'renamed', 'src/invoice.ts:4-6'],
    );
    let a = (await get(m.id)).anchors[0];
    assert.deepEqual([a.path, a.relocated?.how, a.relocated?.from], ['src/invoice.ts', 'renamed', 'src/billing.ts:4-6']);

    // a second rename, committed, with the function moved down in the file
    git(dir, 'commit', '-qm', 'rename');
    git(dir, 'mv', 'src/invoice.ts', 'src/totals.ts');
    const l = SOURCE.split('\n');
    fs.writeFileSync(path.join(dir, 'src', 'totals.ts'), ['// totals', '', ...l].join('\n'));
    git(dir, 'commit', '-qam', 'rename again');
    const r = await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.deepEqual([r.relocated, r.stale], [1, 0]);
    a = (await get(m.id)).anchors[0];
    assert.deepEqual([a.path, a.startLine, a.endLine], ['src/totals.ts', 6, 8]);
    assert.equal((await get(m.id)).status, 'active');
  });

  it('a commit that rewrites the anchored code sends the memory to review; a deleted file too', async () => {
    const dir = repo();
    const rounding = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const readme = await remember('readme', { path: 'README.md', startLine: 1 });
    await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    fs.writeFileSync(
      path.join(dir, 'src', 'billing.ts'),
      SOURCE.replace(
        / {2}let total[\s\S]*?return round\(total, 2\);/,
        '  const prices = await pricesOf(items.map((i) => i.sku));\n  return sumExact(prices);',
      ),
    );
    git(dir, 'rm', '-q', 'README.md');
    git(dir, 'commit', '-qam', 'rewrite');
    const r = await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.equal(r.stale, 2);
    for (const m of [rounding, readme]) {
      const now = await get(m.id);
      assert.deepEqual([now.status, now.anchors[0].stale], ['proposed', true], m.key);
    }
    assert.match((await get(readme.id)).anchors[0].staleReason!, /the file README\.md is gone/);
    // a proposed memory is out of hovers and injection until someone reviews it
    assert.deepEqual(t.store.anchoredAt(['src/billing.ts'], SCOPE), []);
  });

  it('outside any repository: no commit, and a missing file is stale', async () => {
    const dir = tempDir('cairn-anchors-plain-');
    fs.writeFileSync(path.join(dir, 'a.py'), 'def f():\n    return 1\n');
    const m = await remember('f', { path: 'a.py', startLine: 1, endLine: 2 });
    await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.equal((await get(m.id)).anchors[0].commit, undefined);
    assert.equal((await get(m.id)).anchors[0].hash, fingerprint('def f():\n    return 1\n', 1, 2)!.hash);
    fs.rmSync(path.join(dir, 'a.py'));
    assert.equal((await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE, paths: ['a.py'] })).stale, 1);
  });

  it('leaves what it cannot judge: an anchor never fingerprinted on a missing file, and the user tree by default', async () => {
    const dir = repo();
    const never = await remember('never', { path: 'src/elsewhere.ts', startLine: 3 });
    const elsewhere = fingerprint('const a = 1;\nconst b = 2;\n', 1, 2)!;
    const mine = (
      await t.core.call(R.upsert, {
        namespace: 'user',
        key: 'personal',
        value: 'a note about some other checkout',
        anchors: [{ path: 'src/billing.ts', startLine: 1, endLine: 2, ...elsewhere }],
      })
    ).memory;
    const r = await t.core.call(R.anchorsCheck, { root: dir, scope: { root: NS, includeUser: false } });
    assert.deepEqual([r.checked, r.stale, r.fingerprinted], [0, 0, 0]);
    assert.deepEqual((await get(never.id)).anchors[0], { path: 'src/elsewhere.ts', startLine: 3 });
    // the default scope is the folder's project without the user tree
    assert.equal((await t.core.call(R.anchorsCheck, { root: dir })).checked, 0);
    assert.deepEqual([(await get(mine.id)).anchors[0].stale, (await get(mine.id)).status], [undefined, 'active']);
    // nor does opening the file in an editor judge the user tree's anchors
    const { send } = lspFor(dir);
    send('textDocument/didOpen', { textDocument: { uri: `file://${dir}/src/billing.ts`, text: SOURCE } });
    assert.equal((await get(mine.id)).version, mine.version);
  });

  it('works in chunks that yield to other requests, and stops at the time limit with what it did kept', async () => {
    const dir = repo();
    await t.core.call(R.upsertBatch, {
      items: Array.from({ length: 150 }, (_, i) => ({
        namespace: NS,
        key: `k${i}`,
        value: `v${i}`,
        anchors: [{ path: 'README.md', startLine: 1 }],
      })),
    });
    t.core.requestTimeMs = 0;
    const e = await rejectsWith(t.core.request('anchors/check', { root: dir, scope: SCOPE }), 'RequestTimeLimit');
    assert.deepEqual(e.progress, { checked: 100 });
    assert.equal(t.store.anchorsByPath(['README.md'], SCOPE).filter((r) => r.anchors[0].hash).length, 100, 'the first chunk stands');
    t.core.requestTimeMs = 60_000;
    const rest = await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.deepEqual([rest.checked, rest.matched, rest.fingerprinted], [150, 100, 50]);
  });

  it('a write made while it yields is not overwritten by the anchors it read before', async () => {
    const dir = repo();
    await t.core.call(R.upsertBatch, {
      items: Array.from({ length: 150 }, (_, i) => ({
        namespace: NS,
        key: `k${i}`,
        value: `v${i}`,
        anchors: [{ path: 'README.md', startLine: 1 }],
      })),
    });
    // the rows are checked in order of their first anchor's path, then as stored: the last one is in the second chunk
    const last = t.store.anchorsByPath(['README.md'], SCOPE).at(-1)!;
    const read = t.store.anchorsOf.bind(t.store);
    let wrote = false;
    t.store.anchorsOf = (id: string) => {
      if (!wrote) {
        wrote = true; // a client's write lands between the two chunks
        t.store.upsert({ namespace: NS, key: last.key, value: 'moved', anchors: [{ path: 'src/billing.ts', startLine: 4, endLine: 6 }] });
      }
      return read(id);
    };
    await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.ok(wrote, 'the second chunk read its rows again');
    const now = await get(last.id);
    assert.deepEqual([now.value, now.anchors[0].path, now.anchors[0].startLine], ['moved', 'src/billing.ts', 4]);
  });

  it('checks only the scope it is given, and refuses a bad root', async () => {
    const dir = repo();
    const other = (
      await t.core.call(R.upsert, { namespace: 'project.other', key: 'x', value: 'v', anchors: [{ path: 'src/billing.ts', startLine: 4 }] })
    ).memory;
    await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    assert.equal((await get(other.id)).anchors[0].hash, undefined, 'another project’s anchor was touched');
    await rejectsWith(t.core.request('anchors/check', { root: 'relative/dir' }), 'InvalidParams', 'root');
    await rejectsWith(t.core.request('anchors/check', { root: path.join(dir, 'missing') }), 'NotFound', 'root');
    await rejectsWith(t.core.request('anchors/check', { root: path.join(dir, 'README.md') }), 'NotFound', 'root');
    await rejectsWith(t.core.request('anchors/check', { root: '/nul\u0000byte' }), 'NotFound', 'root');
    await rejectsWith(t.core.request('anchors/check', { root: dir, extra: 1 }), 'InvalidParams');
  });
});

describe('injection re-checks the anchors it cites', () => {
  it('cites the lines where the code is now, and leaves out (and sends to review) a memory whose code is gone', async () => {
    const dir = repo();
    const moved = await remember('rounding', { path: 'src/billing.ts', startLine: 4, endLine: 6 });
    const gone = (
      await t.core.call(R.upsert, {
        namespace: NS,
        key: 'describe',
        value: 'about rounding in describeItem, which prints the quantity',
        anchors: [{ path: 'src/billing.ts', startLine: 10 }],
      })
    ).memory;
    await t.core.call(R.anchorsCheck, { root: dir, scope: SCOPE });
    const l = SOURCE.split('\n');
    fs.writeFileSync(path.join(dir, 'src', 'billing.ts'), ['// header', ...l.slice(0, 8)].join('\n'));
    const without = await t.core.call(R.injectBlock, { prompt: 'rounding', scope: SCOPE });
    assert.match(without.block, /key="rounding" kind="note" anchors="src\/billing\.ts:4-6"/, 'without root: the anchors as stored');
    const r = await t.core.call(R.injectBlock, { prompt: 'rounding', scope: SCOPE, root: dir });
    assert.match(r.block, /key="rounding" kind="note" anchors="src\/billing\.ts:5-7 \(re-located\)"/);
    assert.deepEqual(r.memoryIds, [moved.id]);
    const g = await get(gone.id);
    assert.deepEqual([g.status, g.anchors[0].stale], ['proposed', true]);
  });
});

/**
 * Hostile requests against a real daemon over its socket: hundreds of malformed, oversized, deep,
 * huge, wrongly typed and Unicode-edge requests to every method. Every request with an id gets exactly
 * one reply; every error is a documented code (never Internal, never JSON-RPC's -32603); and other
 * clients keep being served throughout. Also: a connection over the cap is served (an idle one makes room; fairness.test.ts has the rest).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ErrorCodes } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Limits } from '../../daemon/src/protocol/types';
import { spawnDaemon, type SpawnedDaemon } from '../helpers';

/** The documented codes: JSON-RPC's parse/request/method errors and Cairn's own, except Internal. */
const DOCUMENTED = new Set<number>([-32700, -32600, -32601, ...Object.values(ErrorCodes).filter((c) => c !== ErrorCodes.Internal)]);

let d: SpawnedDaemon;
before(async () => {
  d = await spawnDaemon();
});
after(async () => {
  await d.stop();
});

interface Reply {
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: { name?: string } };
}

/** A raw connection that parses every framed reply it receives. */
class Raw {
  readonly sock: net.Socket;
  readonly replies: Reply[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  constructor(path: string) {
    this.sock = net.connect(path);
    this.sock.on('data', (c) => {
      this.buf = Buffer.concat([this.buf, c]);
      for (;;) {
        const end = this.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const m = /Content-Length: (\d+)/i.exec(this.buf.subarray(0, end).toString('latin1'));
        const len = Number(m![1]);
        if (this.buf.length < end + 4 + len) return;
        this.replies.push(JSON.parse(this.buf.subarray(end + 4, end + 4 + len).toString('utf8')));
        this.buf = this.buf.subarray(end + 4 + len);
      }
    });
    this.sock.on('close', () => (this.closed = true));
    this.sock.on('error', () => {});
  }
  ready(): Promise<void> {
    return new Promise((r) => (this.sock.connecting ? this.sock.once('connect', () => r()) : r()));
  }
  send(body: string | Buffer): void {
    const b = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    this.sock.write(Buffer.concat([Buffer.from(`Content-Length: ${b.length}\r\n\r\n`), b]));
  }
  async waitFor(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; ${this.replies.length} replies so far`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

function nest(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? { a: v } : [v];
  return v;
}
const filterLeaf = { field: 'importance', op: 'gte', value: 0 };
/** JSON text of a filter nested `depth` deep (built as text: JSON.stringify itself recurses). */
function deepFilter(depth: number): string {
  return '{"not":'.repeat(depth) + JSON.stringify(filterLeaf) + '}'.repeat(depth);
}
function wideFilter(): unknown {
  let f: unknown = filterLeaf;
  for (let i = 0; i < 3; i++) f = { or: Array.from({ length: 64 }, () => f) };
  return f; // 262,144 leaves, ~10 MB of JSON
}

/** Hostile params bodies (raw JSON text, so keys like __proto__ survive) for any method. */
const GENERIC: string[] = [
  'null',
  '[]',
  '[1, "two", {"three": 3}]',
  '{"unexpected": true}',
  JSON.stringify(nest(300)),
  JSON.stringify({ id: nest(200), namespace: nest(200) }),
  '{"__proto__": {"polluted": true}, "id": "x"}',
  '{"constructor": {"prototype": {"x": 1}}}',
  '{"prototype": 1}',
  JSON.stringify({
    id: 5,
    namespace: 7,
    key: [],
    value: {},
    query: 3,
    scope: 'x',
    filter: 1,
    limit: -1,
    title: false,
    position: 'p',
    records: 'r',
    items: {},
  }),
  '{"id": "\\ud800", "namespace": "a\\udc00", "key": "k", "value": "v", "query": "\\udbff", "title": "\\ud800", "prompt": "\\udfff"}',
  JSON.stringify({
    id: 'x'.repeat(100_000),
    namespace: 'n'.repeat(100_000),
    key: 'k'.repeat(100_000),
    query: 'q'.repeat(100_000),
    title: 't'.repeat(100_000),
    prompt: 'p'.repeat(200_000),
  }),
];

/** Method-specific hostile params. */
const SPECIFIC: [string, string][] = [
  [R.list.method, `{"filter":${deepFilter(1000)}}`],
  [R.search.method, `{"query":"x","filter":${deepFilter(100_000)}}`],
  [R.upsert.method, `{"namespace":"p","key":"k","value":"v","properties":{"p":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`],
  [R.list.method, JSON.stringify({ filter: wideFilter() })],
  [R.list.method, JSON.stringify({ filter: { and: [] } })],
  [R.list.method, JSON.stringify({ filter: { field: 'tags', op: 'has', value: ['a', 'b'] } })],
  [R.list.method, JSON.stringify({ filter: { field: 'createdAt', op: 'lt', value: 'not a date' } })],
  [R.list.method, JSON.stringify({ filter: { property: 'x"); DROP TABLE memories; --', op: 'eq', value: 1 } })],
  [R.list.method, JSON.stringify({ filter: { field: 'namespace', op: 'in', value: Array(300).fill('a') } })],
  [R.list.method, JSON.stringify({ limit: 1e9 })],
  [R.list.method, '{"limit": 1e309}'],
  [R.list.method, JSON.stringify({ limit: 1.5 })],
  [R.list.method, JSON.stringify({ cursor: '!!!not-a-cursor!!!' })],
  [R.list.method, JSON.stringify({ cursor: Buffer.from('9:9:9').toString('base64url') })],
  [R.list.method, JSON.stringify({ scope: { namespaces: Array.from({ length: 300 }, (_, i) => `p.n${i}`) } })],
  [R.list.method, JSON.stringify({ scope: { root: 'project.%' } })],
  [R.list.method, JSON.stringify({ scope: { root: 'project..x' } })],
  [R.list.method, JSON.stringify({ scope: { root: 'PROJECT' } })],
  [R.list.method, JSON.stringify({ scope: { root: 'projeçt' } })],
  [R.list.method, JSON.stringify({ scope: { root: 'project\u200b.x' } })],
  [R.list.method, JSON.stringify({ include: { deleted: 'yes' } })],
  [R.search.method, JSON.stringify({ query: 'q'.repeat(Limits.queryChars + 1) })],
  [R.search.method, JSON.stringify({ query: 'x', mode: 'telepathy' })],
  [R.search.method, JSON.stringify({ query: 'x', limit: 0 })],
  [R.search.method, JSON.stringify({ query: '"unterminated OR NEAR( * ^ -' })],
  [R.search.method, JSON.stringify({ query: '\u202egnirts desrever\u202c \u0000 \ufeff' })],
  [R.search.method, JSON.stringify({ query: '🚀'.repeat(1000) })],
  [R.search.method, JSON.stringify({ query: 'x', mode: 'vector' })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'big', value: 'v'.repeat(Limits.valueBytes + 1) })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'empty', value: '   ' })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', tags: Array(65).fill('t') })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', tags: ['   '] })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', anchors: [{ path: 'a', startLine: 5, endLine: 2 }] })],
  [
    R.upsert.method,
    JSON.stringify({ namespace: 'p', key: 'k', value: 'v', validFrom: '2026-01-02T00:00:00Z', validTo: '2026-01-01T00:00:00Z' }),
  ],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', expiresAt: 'tomorrow' })],
  [
    R.upsert.method,
    JSON.stringify({
      namespace: 'p',
      key: 'k',
      value: 'v',
      properties: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`p${i}`, i])),
    }),
  ],
  [R.upsert.method, '{"namespace": "p", "key": "k", "value": "v", "properties": {"__proto__": "x"}}'],
  [R.upsert.method, '{"namespace": "p", "key": "k", "value": "v", "properties": {"a": {"nested": 1}}}'],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', supersedes: 'no-such-id' })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', importance: 'high' })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', ifVersion: -1 })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k', value: 'v', scope: { root: 'q' } })],
  [R.upsert.method, JSON.stringify({ namespace: 'a.'.repeat(20) + 'b', key: 'k', value: 'v' })],
  [R.upsert.method, JSON.stringify({ namespace: 'p', key: 'k'.repeat(Limits.keyChars + 1), value: 'v' })],
  [
    R.upsertBatch.method,
    JSON.stringify({ items: Array.from({ length: Limits.batchItems + 1 }, (_, i) => ({ namespace: 'p', key: `k${i}`, value: 'v' })) }),
  ],
  [R.upsertBatch.method, JSON.stringify({ items: [] })],
  [R.get.method, JSON.stringify({ id: 'x', namespace: 'p', key: 'k' })],
  [R.history.method, JSON.stringify({ id: 'nope', scope: { root: 'p' } })],
  [R.delete.method, JSON.stringify({ id: 'nope', namespace: 'p', key: 'k' })],
  [R.link.method, JSON.stringify({ from: 'a', to: 'a', type: 'relates_to' })],
  [R.link.method, JSON.stringify({ from: 'a', to: 'b', type: 'loves' })],
  [R.namespacesRename.method, JSON.stringify({ from: 'p', to: 'p.q' })],
  [R.namespacesDelete.method, JSON.stringify({ path: '' })],
  [
    R.importRecords.method,
    JSON.stringify({ records: [{ type: 'memory', memory: { id: 1 } }, 'junk', null, { type: 'header', format: 'x' }] }),
  ],
  [R.importRecords.method, '{"records": [{"type": "namespace", "__proto__": {"path": "user"}}]}'],
  [R.indexWait.method, JSON.stringify({ position: -1 })],
  [R.indexWait.method, JSON.stringify({ position: 1, timeoutMs: 10_000_000 })],
  [R.injectBlock.method, JSON.stringify({ prompt: 'x', k: 0 })],
  [R.injectBlock.method, JSON.stringify({ prompt: 'x'.repeat(100_001) })],
  [R.injectBlock.method, JSON.stringify({ prompt: 'x', taskId: 'no-such-task' })],
  [R.tasksUpdate.method, JSON.stringify({ id: 'no-such-task', status: 'open' })],
  [R.configure.method, JSON.stringify({ historyCap: 0 })],
  [R.sweep.method, JSON.stringify({ batch: 1e12 })],
  ['textDocument/hover', 'null'],
  ['textDocument/hover', '{}'],
  ['textDocument/hover', JSON.stringify({ textDocument: { uri: 42 }, position: { line: 0, character: 0 } })],
  ['textDocument/hover', JSON.stringify({ textDocument: { uri: 'file:///x' }, position: { line: -1, character: 'a' } })],
  ['textDocument/hover', JSON.stringify({ textDocument: { uri: 'file:///%%%' }, position: { line: 0, character: 0 } })],
  ['textDocument/hover', JSON.stringify({ textDocument: { uri: 'file:///x' }, position: { line: 1e9, character: 0 } })],
  ['initialize', JSON.stringify({ workspaceFolders: 'x', rootUri: 5, initializationOptions: { projectNamespace: 7 } })],
  ['initialize', JSON.stringify({ workspaceFolders: [null, 1, { uri: 2 }], rootPath: ['x'] })],
  ['no/such/method', '{}'],
  ['', '{}'],
  ['__proto__', '{}'],
  ['constructor', '{}'],
  ['memory/upsert\u0000', '{}'],
];

describe('hostile requests', () => {
  it('get documented codes only, one reply each, and never stop the daemon serving others', async () => {
    const bystander = await d.client();
    await bystander.initialize('bystander');
    const raw = new Raw(d.socket);
    await raw.ready();
    const cases: { id: number; method: string; params: string }[] = [];
    const methods = [
      ...Object.values(R)
        .map((r) => r.method)
        .filter((m) => m !== 'shutdown'),
    ];
    for (const method of methods) for (const params of GENERIC) cases.push({ id: cases.length + 1, method, params });
    for (const [method, params] of SPECIFIC) cases.push({ id: cases.length + 1, method, params });
    assert.ok(cases.length >= 190, `only ${cases.length} hostile requests`);

    // The bystander keeps working while the hostile requests are in flight.
    let bystanderCalls = 0;
    let flooding = true;
    const background = (async () => {
      while (flooding) {
        const r = await bystander.call(R.upsert, {
          namespace: 'project.bystander',
          key: `k${bystanderCalls}`,
          value: `still served ${bystanderCalls}`,
        });
        assert.equal(r.changed, true);
        bystanderCalls++;
      }
    })();
    for (const c of cases) raw.send(`{"jsonrpc":"2.0","id":${c.id},"method":${JSON.stringify(c.method)},"params":${c.params}}`);
    // (memory/didChange notifications of the bystander's writes arrive on this connection too: count replies only)
    const answered = () => new Set(raw.replies.filter((r) => 'result' in r || 'error' in r).map((r) => r.id)).size;
    await raw.waitFor('a reply to every hostile request', () => answered() >= cases.length, 240_000);
    flooding = false;
    await background;
    assert.ok(bystanderCalls > 0);

    const byId = new Map<unknown, Reply[]>();
    for (const r of raw.replies) if ('result' in r || 'error' in r) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
    const problems: string[] = [];
    const codes = new Map<number, number>();
    for (const c of cases) {
      const rs = byId.get(c.id) ?? [];
      if (rs.length !== 1) {
        problems.push(`${c.method} #${c.id}: ${rs.length} replies`);
        continue;
      }
      const e = rs[0].error;
      if (!e) continue;
      codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
      if (!DOCUMENTED.has(e.code))
        problems.push(`${c.method} #${c.id} (${c.params.slice(0, 60)}): undocumented code ${e.code}: ${e.message.slice(0, 200)}`);
      if (e.code >= 1000 && e.data?.name === undefined) problems.push(`${c.method} #${c.id}: error without data.name`);
    }
    // replies with id null come only from frame-level refusals; none were expected here
    assert.deepEqual(problems, [], problems.join('\n'));
    assert.equal(codes.get(ErrorCodes.Internal) ?? 0, 0);
    assert.ok(!raw.closed, 'the hostile connection itself is still served');
    // nothing was polluted, nothing the hostile requests wrote exists
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    const st = await bystander.call(R.status, {});
    assert.equal(st.counts.active, bystanderCalls, 'only the bystander’s writes are in the store');
    raw.sock.destroy();
  });

  it('frame-level attacks get documented replies; other connections keep working', async () => {
    const attacks: (string | Buffer)[] = [
      '{"jsonrpc": "2.0", "id": 1, "method": ',
      Buffer.from([0x7b, 0x22, 0x6a, 0xc3, 0x28, 0x22, 0x7d]),
      Buffer.from('{"jsonrpc":"2.0","id":1,"method":"store/status","params":{"x":"\xff\xfe"}}', 'latin1'),
      '[{"jsonrpc":"2.0","id":1,"method":"store/status"}]',
      '"just a string"',
      '{"jsonrpc":"1.0","id":1,"method":"store/status"}',
      '{"jsonrpc":"2.0","id":{},"method":"store/status"}',
      '{"jsonrpc":"2.0","id":true,"method":"store/status"}',
      '{"jsonrpc":"2.0","id":1,"method":5}',
      '{"jsonrpc":"2.0","id":1,"method":"store/status","params":5}',
      '{"jsonrpc":"2.0","id":1}',
      '', // Content-Length: 0
      Buffer.from('{"jsonrpc":"2.0","id":"bad-utf8","method":"store/status","params":{"x":"\xff\xfe"}}', 'latin1'),
    ];
    const raw = new Raw(d.socket);
    await raw.ready();
    for (const a of attacks) raw.send(a);
    raw.send('{"jsonrpc":"2.0","id":99,"method":"store/status"}');
    await raw.waitFor('replies to every frame', () => raw.replies.some((r) => r.id === 99));
    const errors = raw.replies.filter((r) => r.id !== 99 && 'error' in r);
    assert.equal(errors.length, attacks.length);
    for (const r of errors) assert.ok([-32700, -32600, ErrorCodes.InvalidParams].includes(r.error!.code), JSON.stringify(r));
    // a request holding invalid UTF-8 is answered under its own id, so its caller is not left waiting
    assert.equal(raw.replies.find((r) => r.id === 'bad-utf8')?.error?.code, ErrorCodes.InvalidParams);
    assert.equal(raw.replies.find((r) => r.id === 99)!.error, undefined);
    raw.sock.destroy();

    // An oversized frame is refused with ValueTooLarge; broken headers close only that connection.
    const big = new Raw(d.socket);
    await big.ready();
    big.sock.write(`Content-Length: ${Limits.messageBytes + 1}\r\n\r\n`);
    await big.waitFor('ValueTooLarge', () => big.replies.length === 1);
    assert.equal(big.replies[0].error!.code, ErrorCodes.ValueTooLarge);
    big.sock.destroy();
    // however many digits the length has
    const huge = new Raw(d.socket);
    await huge.ready();
    huge.sock.write('Content-Length: 100000000000000000000\r\n\r\n');
    await huge.waitFor('ValueTooLarge', () => huge.replies.length === 1);
    assert.equal(huge.replies[0].error!.code, ErrorCodes.ValueTooLarge);
    huge.sock.destroy();
    const broken = new Raw(d.socket);
    await broken.ready();
    broken.sock.write('Content-Length: nope\r\n\r\n{}');
    await broken.waitFor('the connection to close', () => broken.closed);
    assert.equal(broken.replies[0].error!.code, -32700);

    // A client that writes again before it reads the reply still gets it: the daemon ends its side after the reply
    // and drops what comes after, rather than closing at once (the write would fail with EPIPE, and a client whose
    // socket fails loses what it had not read yet).
    const closes = () => d.stderr().split('closing a connection: ').length;
    const closedBefore = closes();
    const eager = new Raw(d.socket);
    await eager.ready();
    eager.sock.pause();
    eager.sock.write('Content-Length: nope\r\n\r\n');
    await eager.waitFor('the daemon to close the connection', () => closes() > closedBefore);
    const wrote = await new Promise<Error | null | undefined>((r) => eager.sock.write('Content-Length: 2\r\n\r\n{}', r));
    assert.equal(wrote ?? null, null, 'writing after the reply is not refused');
    eager.sock.resume();
    await eager.waitFor('the connection to close', () => eager.closed);
    assert.equal(eager.replies.length, 1);
    assert.equal(eager.replies[0].error!.code, -32700);
    assert.match(eager.replies[0].error!.message, /malformed frame/);

    const c = await d.client();
    assert.equal((await c.call(R.status, {})).daemon?.pid, d.proc.pid);
  });

  it('a connection over the limit is served: the least recently active idle one is closed to make room', async () => {
    const open: Raw[] = [];
    try {
      for (let i = 0; i < Limits.connections + 5; i++) {
        const r = new Raw(d.socket);
        await r.ready();
        open.push(r);
        // a probe per connection: every one is answered, none is refused
        r.send(`{"jsonrpc":"2.0","id":${i},"method":"store/status"}`);
        await r.waitFor('an answer', () => r.replies.length > 0 || r.closed);
        assert.ok(r.replies[0] && 'result' in r.replies[0], `connection ${i}: ${JSON.stringify(r.replies[0])}`);
      }
      // the first ones (least recently active) made room; the newest are still open
      await open[0].waitFor('the oldest connection to close', () => open[0].closed);
      assert.ok(!open[open.length - 1].closed);
    } finally {
      for (const r of open) r.sock.destroy();
    }
    const c = await d.client();
    await c.call(R.status, {});
  });
});

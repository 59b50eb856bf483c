/**
 * Secrets are kept from agents: tags are normalized on write (and compared normalized on read, for rows
 * written before), memories tagged `secret` in any spelling never come back through injection, the MCP
 * tools or the language-model tools (the same handlers) unless the user allows it, and values that look
 * like credentials are tagged `secret` with a warning in the write result.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TOOLS, type ToolContext } from '../../daemon/src/mcp/tools';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Memory } from '../../daemon/src/protocol/types';
import { detectCredentials, normalizeTags } from '../../daemon/src/text/secrets';
import { AGENT_TOOLS } from '../../extension/src/agents/toolDefs';
import { rejectsWith, tempCore } from '../helpers';

// Assembled at run time so the repository holds no literal token (secret scanners).
const j = (...p: string[]) => p.join('');
const SAMPLES: Record<string, string> = {
  'AWS access key id': `aws key ${j('AKIA', 'IOSFODNN7', 'EXAMPLE')} for deploys`,
  'AWS secret access key': `aws_secret_access_key = ${j('wJalrXUtnFEMI/K7MDENG/', 'bPxRfiCYEXAMPLEKEY')}`,
  'GitHub token': `token ${j('ghp_', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8')}`,
  'GitHub fine-grained token': j('github_pat_', '11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz'),
  'GitLab token': `use ${j('glpat-', 'xYz12AbC34dEf56GhI78')}`,
  'Slack token': j('xoxb-', '123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'),
  'Slack webhook': j('https://hooks.slack.com/services/', 'T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX'),
  'OpenAI API key': `OPENAI_API_KEY is ${j('sk-proj-', 'abc123DEF456ghi789JKL012mno345')}`,
  'Stripe key': j('sk_live_', '4eC39HqLyjWDarjtT1zdp7dc'),
  'JSON Web Token': j('eyJhbGciOiJIUzI1NiJ9', '.', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', '.', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'),
  'private key': `${j('-----BEGIN ', 'RSA PRIVATE KEY-----')}\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----`,
  'password or key assignment': 'db config: password=Xk9#mQ2$vL8pZr',
  'credentials in a URL': 'postgres://app:Tr0ub4dor3xQ@db.internal:5432/app',
};
const HARMLESS = [
  'We use AWS for hosting and GitHub for code review.',
  'password=changeme in the example config is a placeholder',
  'the token = ${API_TOKEN} comes from the environment',
  'Run `npm test` before pushing; the sk- prefix marks secret keys.',
  'eyJ alone is just a prefix',
  'postgres://localhost:5432/app has no credentials',
  'set password: <your password here>',
];

describe('credential detector', () => {
  for (const [kind, text] of Object.entries(SAMPLES)) {
    it(`flags a ${kind}`, () => {
      const kinds = detectCredentials(text).map((c) => c.kind);
      assert.ok(kinds.includes(kind), `${kind} not found in ${JSON.stringify(kinds)}`);
    });
  }
  it('leaves ordinary prose and placeholders alone', () => {
    for (const text of HARMLESS) assert.deepEqual(detectCredentials(text), [], text);
  });
});

describe('tags are normalized on write', () => {
  let t: ReturnType<typeof tempCore>;
  before(() => (t = tempCore()));
  after(() => t.close());

  it('trims, lowercases, deduplicates and sorts', async () => {
    assert.deepEqual(normalizeTags([' Secret', 'SECRET', 'secret ', 'Beta', 'alpha']), ['alpha', 'beta', 'secret']);
    const m = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'v', tags: [' Secret', 'SECRET', 'Ops'] })).memory;
    assert.deepEqual(m.tags, ['ops', 'secret']);
  });

  it('refuses a tag that is only whitespace', async () => {
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.a', key: 'k2', value: 'v', tags: ['ok', '   '] }),
      'InvalidParams',
      'tags[1]',
    );
  });

  it('filters compare tags normalized, also for rows stored before normalization', async () => {
    const m = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'legacy', value: 'legacy row' })).memory;
    t.store.db.prepare('UPDATE memories SET tags = ? WHERE id = ?').run(JSON.stringify([' Secret', 'Ops']), m.id);
    const has = await t.core.call(R.list, { scope: { root: 'project.a' }, filter: { field: 'tags', op: 'has', value: 'SECRET' } });
    assert.deepEqual(has.items.map((x) => x.key).sort(), ['k', 'legacy']);
    const none = await t.core.call(R.list, { scope: { root: 'project.a' }, filter: { field: 'tags', op: 'hasNone', value: ['secret'] } });
    assert.deepEqual(
      none.items.map((x) => x.key),
      [],
    );
    const all = await t.core.call(R.list, {
      scope: { root: 'project.a' },
      filter: { field: 'tags', op: 'hasAll', value: ['ops', ' SECRET '] },
    });
    assert.deepEqual(all.items.map((x) => x.key).sort(), ['k', 'legacy']);
  });
});

describe('credential-looking values are tagged secret on write', () => {
  let t: ReturnType<typeof tempCore>;
  before(() => (t = tempCore()));
  after(() => t.close());

  it('tags the memory, warns in the result and records why in history', async () => {
    const r = await t.core.call(R.upsert, { namespace: 'project.a', key: 'deploy', value: SAMPLES['GitHub token'], tags: ['ci'] });
    assert.deepEqual(r.memory.tags, ['ci', 'secret']);
    assert.equal(r.warnings?.[0].code, 'credential');
    assert.equal(r.warnings?.[0].kind, 'GitHub token');
    const h = await t.core.call(R.history, { id: r.memory.id });
    assert.deepEqual(h.entries[0].detail, { autoSecret: ['GitHub token'] });
  });

  it('looks at string property values too, and reports in batch results', async () => {
    const r = await t.core.call(R.upsertBatch, {
      items: [{ namespace: 'project.a', key: 'p', value: 'the staging database', properties: { dsn: SAMPLES['credentials in a URL'] } }],
    });
    assert.ok(r.results[0].ok && r.results[0].warnings?.[0].kind === 'credentials in a URL');
    assert.deepEqual((await t.core.call(R.get, { namespace: 'project.a', key: 'p' })).tags, ['secret']);
  });

  it('adds nothing to an ordinary value', async () => {
    const r = await t.core.call(R.upsert, { namespace: 'project.a', key: 'plain', value: HARMLESS[0] });
    assert.deepEqual(r.memory.tags, []);
    assert.equal(r.warnings, undefined);
  });
});

describe('secret memories never reach an agent', () => {
  let t: ReturnType<typeof tempCore>;
  const secrets: Memory[] = [];
  let open: Memory;
  const variants = ['secret', 'Secret', 'SECRET', ' secret', 'secret\t'];

  before(async () => {
    t = tempCore();
    open = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'open', value: 'kumquat deploy notes everyone may read' })).memory;
    for (const [i, tag] of variants.entries()) {
      const m = (
        await t.core.call(R.upsert, { namespace: 'project.a', key: `hidden-${i}`, value: `kumquat deploy credential number ${i}` })
      ).memory;
      // Stored in the variant's own spelling, as a store written before tags were normalized holds it.
      t.store.db.prepare('UPDATE memories SET tags = ? WHERE id = ?').run(JSON.stringify([tag]), m.id);
      secrets.push({ ...m, tags: [tag] });
    }
    await t.core.call(R.link, { from: open.id, to: secrets[1].id, type: 'relates_to' });
  });
  after(() => t.close());

  const ctx = (allowSecrets: boolean): ToolContext => ({
    call: ((def: { method: string }, params: unknown) => t.core.request(def.method, params)) as ToolContext['call'],
    scope: { root: 'project.a', source: 'option' },
    actor: () => 'agent:test',
    reviewAgentWrites: false,
    allowSecrets,
  });
  const tool = (name: string) => TOOLS.find((x) => x.name === name)!;
  const run = (name: string, args: Record<string, unknown>, allow = false) => tool(name).run(args as never, ctx(allow));
  const hiddenIn = (text: string) => variants.map((_, i) => `credential number ${i}`).filter((s) => text.includes(s));

  it('injection leaves out every spelling (and allowSecrets lets them in)', async () => {
    const r = await t.core.call(R.injectBlock, { prompt: 'kumquat deploy', scope: { root: 'project.a' }, k: 20 });
    assert.deepEqual(
      r.memories.map((m) => m.key),
      ['open'],
    );
    assert.deepEqual(hiddenIn(r.block), []);
    const allowed = await t.core.call(R.injectBlock, { prompt: 'kumquat deploy', scope: { root: 'project.a' }, k: 20, allowSecrets: true });
    assert.equal(allowed.memories.length, 1 + variants.length);
  });

  for (const mode of ['fts', 'hybrid']) {
    it(`cairn_search (${mode}) leaves them out`, async () => {
      const r = await run('cairn_search', { query: 'kumquat deploy', mode, limit: 50 });
      assert.deepEqual(hiddenIn(r.text), []);
      assert.deepEqual(
        (r.structured.hits as { memory: Memory }[]).map((h) => h.memory.key),
        ['open'],
      );
      const allowed = await run('cairn_search', { query: 'kumquat deploy', mode, limit: 50 }, true);
      assert.equal((allowed.structured.hits as unknown[]).length, 1 + variants.length);
    });
  }

  it('cairn_search cannot get them back through an explicit tags filter', async () => {
    const r = await run('cairn_search', { query: 'kumquat', tags: ['secret'], limit: 50 });
    assert.deepEqual(r.structured.hits, []);
    const f = await run('cairn_list', { filter: { field: 'tags', op: 'has', value: 'SECRET' } });
    assert.deepEqual(f.structured.items, []);
  });

  it('cairn_list leaves them out', async () => {
    const r = await run('cairn_list', { limit: 100 });
    assert.deepEqual(
      (r.structured.items as Memory[]).map((m) => m.key),
      ['open'],
    );
    assert.deepEqual(hiddenIn(r.text), []);
  });

  it('cairn_recall, cairn_forget, cairn_neighbors and cairn_link treat them as not found', async () => {
    for (const [i, m] of secrets.entries()) {
      await rejectsWith(run('cairn_recall', { id: m.id }), 'NotFound', 'id');
      await rejectsWith(run('cairn_recall', { key: `hidden-${i}` }), 'NotFound');
      await rejectsWith(run('cairn_recall', { namespace: 'project.a', key: `hidden-${i}` }), 'NotFound');
      await rejectsWith(run('cairn_forget', { id: m.id }), 'NotFound');
      await rejectsWith(run('cairn_neighbors', { id: m.id }), 'NotFound');
      await rejectsWith(run('cairn_link', { from: open.id, to: m.id, type: 'supports' }), 'NotFound', 'to');
    }
    const n = await run('cairn_neighbors', { id: open.id });
    assert.deepEqual(n.structured.neighbors, [], 'a linked secret memory is left out of neighbours');
    // nothing was forgotten
    for (const m of secrets) assert.equal((await t.core.call(R.get, { id: m.id })).deletedAt, null);
    // with the setting on, recall works
    const r = await run('cairn_recall', { id: secrets[2].id }, true);
    assert.equal((r.structured.memory as Memory).id, secrets[2].id);
  });

  it('cairn_remember cannot rewrite a secret memory (nor drop its tag): the same NotFound as a read', async () => {
    const read = await rejectsWith(run('cairn_recall', { key: 'hidden-0' }), 'NotFound');
    for (const [i, m] of secrets.entries()) {
      for (const args of [
        { key: `hidden-${i}`, value: 'replaced by an agent', tags: [] },
        { namespace: 'project.a', key: `hidden-${i}`, value: 'replaced by an agent' },
        { key: `hidden-${i}`, value: 'replaced by an agent', ifVersion: m.version },
      ]) {
        const data = await rejectsWith(run('cairn_remember', args), 'NotFound', 'key');
        assert.equal(data.name, read.name);
      }
      await rejectsWith(run('cairn_remember', { key: `new-${i}`, value: 'takes its place', supersedes: m.id }), 'NotFound', 'supersedes');
    }
    await assert.rejects(run('cairn_remember', { key: 'hidden-1', value: 'x', tags: [] }), (e) =>
      /not shown to agents/.test((e as Error).message),
    );
    for (const m of secrets) {
      const now = await t.core.call(R.get, { id: m.id });
      assert.deepEqual([now.value, now.version, now.status], [m.value, m.version, 'active'], 'untouched');
      assert.equal(now.tags.length, 1);
    }
    await rejectsWith(t.core.call(R.get, { namespace: 'project.a', key: 'new-0' }), 'NotFound');
    // A deleted secret memory is as hidden as a live one.
    const d = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'gone-secret', value: 'kumquat old', tags: ['secret'] })).memory;
    await t.core.call(R.delete, { id: d.id });
    await rejectsWith(run('cairn_remember', { key: 'gone-secret', value: 'x' }), 'NotFound', 'key');
    // An ordinary memory is still rewritten, and a stale ifVersion is refused as before.
    await rejectsWith(run('cairn_remember', { key: 'open', value: 'x', ifVersion: open.version + 5 }), 'VersionConflict', 'ifVersion');
    const w = await run('cairn_remember', { key: 'fresh', value: 'a new fact about kumquat builds' });
    assert.equal((w.structured.memory as Memory).version, 1);
    const again = await run('cairn_remember', { key: 'fresh', value: 'the fact, corrected' });
    assert.equal((again.structured.memory as Memory).version, 2);
    // With the setting on, the agent may rewrite it.
    const allowed = await run('cairn_remember', { key: 'hidden-4', value: 'kumquat deploy credential number 4, rotated' }, true);
    assert.equal((allowed.structured.memory as Memory).version, secrets[4].version + 1);
    await t.core.call(R.delete, { id: (w.structured.memory as Memory).id });
  });

  it('a memory tagged secret between the look and the write is not rewritten', async () => {
    const m = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'racing', value: 'plain at first' })).memory;
    const c = ctx(false);
    const racing: ToolContext = {
      ...c,
      call: (async (def: { method: string }, params: Record<string, unknown>) => {
        if (def.method === R.upsert.method)
          await t.core.call(R.upsert, { namespace: 'project.a', key: 'racing', value: 'plain at first', tags: ['secret'] });
        return c.call(def as never, params as never);
      }) as ToolContext['call'],
    };
    await rejectsWith(tool('cairn_remember').run({ key: 'racing', value: 'rewritten', tags: [] } as never, racing), 'VersionConflict');
    const now = await t.core.call(R.get, { id: m.id });
    assert.deepEqual([now.value, now.tags], ['plain at first', ['secret']]);
  });

  it('the language-model tools are these handlers', async () => {
    for (const name of Object.keys(AGENT_TOOLS) as (keyof typeof AGENT_TOOLS)[]) assert.equal(AGENT_TOOLS[name], tool(name));
    await rejectsWith(AGENT_TOOLS.cairn_recall.run({ id: secrets[0].id }, ctx(false)), 'NotFound');
  });

  it('cairn_remember warns the agent when it stores a credential', async () => {
    const r = await run('cairn_remember', { key: 'oops', value: SAMPLES['Stripe key'] });
    assert.match(r.text, /Warning: .*Stripe key.*tagged "secret"/);
    await rejectsWith(run('cairn_recall', { key: 'oops' }), 'NotFound');
  });

  it('an error from a hidden memory is a CairnError', async () => {
    await assert.rejects(
      run('cairn_recall', { id: secrets[0].id }),
      (e) => e instanceof CairnError && /not shown to agents/.test(e.message),
    );
  });
});

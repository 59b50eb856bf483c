/**
 * Episodic memory over a running daemon with the built-in embedding model: `cairn log` (off until capture is turned
 * on, then continuing one open episode), `cairn episodes import` (the generic format and a Claude Code transcript,
 * idempotent on a second import), index/wait covering the events' full text and vectors, hybrid event search, and
 * `cairn episodes find` (the sessions a query is about).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import { CAIRN_BIN, spawnDaemon, type SpawnedDaemon } from '../helpers';

describe('episodes through the daemon and the CLI', () => {
  let d: SpawnedDaemon;
  let env: NodeJS.ProcessEnv;
  let cwd: string;
  const cli = (args: string[], extra: NodeJS.ProcessEnv = {}, input?: string) => {
    const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...env, ...extra },
      input,
      cwd,
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const on = { CAIRN_EPISODES_CAPTURE: '1' };

  before(async () => {
    d = await spawnDaemon({ args: ['--model', 'builtin'], env: { CAIRN_ALLOW_REMOTE_MODELS: '0' } });
    env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: d.dir, CAIRN_EPISODES_CAPTURE: '0' };
    cwd = path.join(d.dir, 'widget-shop');
    fs.mkdirSync(cwd);
  });
  after(async () => d.stop());

  it('cairn log records nothing while capture is off, then continues one open episode of the project', async () => {
    const off = cli(['log', 'should not be stored']);
    assert.equal(off.code, 0, off.err);
    assert.match(off.err, /capture is off/);
    const c = await d.client();
    assert.equal((await c.call(Requests.episodesList, {})).episodes.length, 0);

    const a = cli(['log', 'deploy', 'started', '--kind', 'command', '--command', 'make deploy', '--exit-code', '0', '--json'], on);
    assert.equal(a.code, 0, a.err);
    const b = cli(['log', 'the canary looks healthy', '--file', 'deploy/canary.yaml:3-9', '--json'], on);
    assert.equal(b.code, 0, b.err);
    const ra = JSON.parse(a.out);
    const rb = JSON.parse(b.out);
    assert.equal(ra.episodeId, rb.episodeId, 'the second log continues the open episode');
    assert.ok(rb.results[0].position > ra.results[0].position);
    const g = await c.call(Requests.episodesGet, { id: ra.episodeId });
    assert.equal(g.episode.namespace, 'project.widget-shop');
    assert.equal(g.episode.source, 'cli');
    assert.deepEqual(
      g.events.map((e) => [e.kind, e.text, e.context]),
      [
        ['command', 'deploy started', { command: 'make deploy', exitCode: 0 }],
        ['note', 'the canary looks healthy', { path: 'deploy/canary.yaml', startLine: 3, endLine: 9 }],
      ],
    );
    const bad = cli(['log', 'x', '--kind', 'Bad Kind'], on);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /InvalidParams/);
  });

  it('imports generic and Claude Code transcripts once, and finds a turn by meaning after index/wait', async () => {
    const generic = [
      {
        type: 'episode',
        id: 'ci-run-000042',
        title: 'CI run 42',
        source: 'ci',
        startedAt: '2024-06-03T08:00:00Z',
        endedAt: '2024-06-03T08:30:00Z',
      },
      { type: 'event', kind: 'command', text: 'npm run e2e', at: '2024-06-03T08:01:00Z', context: { command: 'npm run e2e', exitCode: 1 } },
      { type: 'event', kind: 'tool_result', text: 'Timeout waiting for the login button to appear', at: '2024-06-03T08:20:00Z' },
    ];
    const sid = '5f1c2b7e-1111-4222-8333-944455556666';
    const claude = [
      { type: 'summary', summary: 'Speed up the product image thumbnails', leafUuid: 'x' },
      {
        type: 'user',
        sessionId: sid,
        timestamp: '2024-06-04T10:00:00Z',
        gitBranch: 'perf/thumbs',
        message: { role: 'user', content: 'The product pictures load slowly on the catalogue page' },
      },
      {
        type: 'assistant',
        sessionId: sid,
        timestamp: '2024-06-04T10:01:00Z',
        message: {
          role: 'assistant',
          content: [
            { type: 'text', text: 'I will resize images when they are uploaded instead of in the browser.' },
            { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: 'src/images/resize.ts', old_string: 'a', new_string: 'b' } },
          ],
        },
      },
      {
        type: 'user',
        sessionId: sid,
        timestamp: '2024-06-04T10:02:00Z',
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'edited' }] },
      },
    ];
    const file = path.join(d.dir, 'transcripts.jsonl');
    fs.writeFileSync(file, [...generic, ...claude].map((x) => JSON.stringify(x)).join('\n') + '\n');
    const first = cli(['episodes', 'import', file, '--json']);
    assert.equal(first.code, 0, first.err);
    const r1 = JSON.parse(first.out);
    assert.equal(r1.created, 6);
    assert.deepEqual(
      r1.episodes.map((e: { id: string }) => e.id),
      ['ci-run-000042', `claude-code:${sid}`],
    );
    const again = JSON.parse(cli(['episodes', 'import', file, '--json']).out);
    assert.deepEqual([again.created, again.existing], [0, 6]);

    const c = await d.client();
    const cc = await c.call(Requests.episodesGet, { id: `claude-code:${sid}` });
    assert.equal(cc.episode.title, 'Speed up the product image thumbnails', 'the summary line names the session');
    assert.equal(cc.episode.branch, 'perf/thumbs');
    assert.equal(cc.episode.source, 'agent:claude-code');
    assert.deepEqual(
      cc.events.map((e) => e.kind),
      ['user', 'agent', 'tool_call', 'tool_result'],
    );
    assert.equal(cc.events[2].context?.path, 'src/images/resize.ts');
    const ci = await c.call(Requests.episodesGet, { id: 'ci-run-000042' });
    assert.equal(ci.episode.endedAt, '2024-06-03T08:30:00.000Z');

    const w = await c.call(Requests.indexWait, { position: 0, timeoutMs: 30_000 });
    assert.ok(w.events?.reached, JSON.stringify(w));
    assert.equal(w.events?.vector, w.events?.position);

    const s = cli(['episodes', 'search', 'slow', 'photos', '--root', 'project.widget-shop', '--json']);
    assert.equal(s.code, 0, s.err);
    const res = JSON.parse(s.out);
    assert.equal(res.mode, 'hybrid');
    assert.equal(res.degraded, undefined);
    assert.equal(res.hits[0].event.text, 'The product pictures load slowly on the catalogue page');
    // "photos" is not in the text: the vector arm found it by meaning.
    const vec = await c.call(Requests.eventsSearch, { query: 'photos', mode: 'vector', scope: { root: 'project.widget-shop' }, limit: 3 });
    assert.ok(
      vec.hits.some((h) => h.event.text.includes('pictures')),
      JSON.stringify(vec.hits.map((h) => h.event.text)),
    );

    const human = cli(['episodes', 'search', 'login button timeout', '--expand', '1']);
    assert.match(human.out, /tool_result: «Timeout» waiting for the «login» «button»/);
    assert.match(human.out, /in "CI run 42" \(ci-run-000042\)/);
    assert.match(human.out, /npm run e2e/, 'the hit is shown with its neighbour');
    const list = cli(['episodes', 'list', '--source', 'ci']);
    assert.match(list.out, /ci-run-000042 .* 2 events {2}CI run 42/);

    // cairn episodes find: the sessions (episodes/search), each with its best events.
    const found = cli(['episodes', 'find', 'pictures', 'load', 'slowly', '--root', 'project.widget-shop', '--json']);
    assert.equal(found.code, 0, found.err);
    const fr = JSON.parse(found.out);
    assert.equal(fr.episodes[0].episode.id, `claude-code:${sid}`);
    assert.equal(fr.episodes[0].hits[0].position, cc.events[0].position);
    assert.match(fr.episodes[0].hits[0].snippet, /«pictures» «load» «slowly»/);
    const sessions = cli(['episodes', 'find', 'login button timeout']);
    assert.equal(sessions.code, 0, sessions.err);
    assert.match(
      sessions.out,
      /^ci-run-000042 .* 2 events {2}CI run 42\n {3}#\d+ 2024-06-03T08:20:00\.000Z tool_result: «Timeout» waiting/,
    );
    const later = JSON.parse(cli(['episodes', 'find', 'login button timeout', '--since', '2024-06-04T00:00:00Z', '--json']).out);
    assert.ok(!later.episodes.some((h: { episode: { id: string } }) => h.episode.id === 'ci-run-000042'), 'its events are before --since');
    assert.equal(cli(['episodes', 'find', 'login', '--limit', '1', '--json']).code, 0);
    const badSince = cli(['episodes', 'find', 'login', '--since', 'last tuesday']);
    assert.equal(badSince.code, 1);
    assert.match(
      badSince.err,
      /^error: since must be an ISO 8601 date .+\n {2}\(code InvalidParams \d+, field since, in episodes\/search\)/,
    );
    const empty = cli(['episodes', 'find', ' ']);
    assert.equal(empty.code, 2);
    assert.match(empty.err, /usage: cairn episodes find <query\.\.\.>/);

    const receipt = path.join(d.dir, 'episode-receipt.json');
    const erased = cli(['episodes', 'erase', 'ci-run-000042', '--reason', 'test', '--receipt', receipt]);
    assert.equal(erased.code, 0, erased.err);
    assert.match(erased.out, /erased episode ci-run-000042: 2 events, 2 vectors/);
    assert.match(erased.out, /receipt \S+ written to /);
    const verified = cli(['verify-receipt', receipt]);
    assert.equal(verified.code, 0, verified.err);
    assert.match(verified.out, /^valid: receipt \S+, episode ci-run-000042 \(2 events\) erased at /);
    assert.match(cli(['episodes', 'removals']).out, /erase\s+ci-run-000042 {2}project\.widget-shop {2}2 events {2}by \S+: test/);
    assert.equal(JSON.parse(cli(['episodes', 'search', 'login button timeout', '--json']).out).hits.length, 0);
    const bad = cli(['episodes', 'import', '-'], {}, '{"type":"event","kind":"note","text":"orphan"}\n');
    assert.equal(bad.code, 1);
    assert.match(bad.err, /line 1: an event before any/);
  });

  it('cairn log of a seq that retention removed says so and stores nothing', async () => {
    const c = await d.client();
    const ep = (
      await c.call(Requests.episodesStart, { namespace: 'project.retry-cli', title: 'old run', startedAt: '2020-01-01T00:00:00Z' })
    ).episode;
    await c.call(Requests.eventsAppend, {
      episodeId: ep.id,
      events: [{ seq: 0, kind: 'note', text: 'an old note', at: '2020-01-02T00:00:00Z' }],
    });
    await c.call(Requests.retention, { set: { root: 'project.retry-cli', events: { maxAgeDays: 30 } } });
    assert.equal((await c.call(Requests.sweep, {})).retention!.removedEvents, 1);
    const r = cli(['log', 'an old note', '--episode', ep.id, '--root', 'project.retry-cli', '--seq', '0'], on);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /not logged again \(retention removed it\): event #\d+ \(seq 0\)/);
    assert.deepEqual((await c.call(Requests.episodesGet, { id: ep.id })).events, []);
    await c.call(Requests.retention, { clear: 'project.retry-cli' });
  });
});

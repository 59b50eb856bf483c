/**
 * Episodic memory through `cairn mcp`: an agent finds past sessions, searches their events, reads the timeline and the events in
 * context, and proposes a memory from them; the proposal is in the review queue with its source events. The session's
 * scope and the secret rule hold on every tool.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { StreamClient } from '../../daemon/src/client/socket-client';
import { Requests } from '../../daemon/src/protocol/methods';
import { tempDir } from '../helpers';
import { daemonClient, fails, fakeRepo, ok, rmDir, startMcp, stopDaemon, type McpSession } from './harness';

describe('cairn mcp: episodic memory tools', () => {
  let dir: string;
  let s: McpSession;
  let d: StreamClient;
  const PROJECT = 'project.shop';
  let positions: number[] = [];
  let otherPosition = 0;

  before(async () => {
    dir = tempDir('cairn-mcp-ep-');
    const repo = fakeRepo(dir, 'shop', 'https://example.com/acme/shop.git');
    s = await startMcp({ dir, cwd: repo });
    await ok(s, 'cairn_status'); // starts the daemon
    d = await daemonClient(s.db);
    await d.initialize('episodes-test');
    const e = await d.call(Requests.episodesStart, {
      namespace: PROJECT,
      title: 'fix the checkout rounding bug',
      source: 'agent:claude-code',
      startedAt: '2024-03-04T09:00:00Z',
    });
    const r = await d.call(Requests.eventsAppend, {
      episodeId: e.episode.id,
      events: [
        { kind: 'user', text: 'Totals in the checkout are off by one cent', at: '2024-03-04T09:00:00Z' },
        {
          kind: 'command',
          text: 'npm test -- checkout',
          at: '2024-03-04T09:05:00Z',
          context: { command: 'npm test -- checkout', exitCode: 1 },
        },
        {
          kind: 'agent',
          text: 'The cent rounding happens per line item instead of on the order total; prices must be summed in integer cents.',
          at: '2024-03-04T09:10:00Z',
          context: { path: 'src/checkout/total.ts', startLine: 12 },
        },
        { kind: 'note', text: 'checkout payment key sk_live_51HdkEJ2eZvKYlo2C9xQ7rT0aBcDeFgHiJkLmNoP', at: '2024-03-04T09:11:00Z' },
        { kind: 'user', text: 'Great, the checkout tests pass now', at: '2024-03-04T09:20:00Z' },
      ],
    });
    positions = r.results.map((x) => x.position);
    assert.ok(r.results[3].warnings?.length, 'the key was recognised as a credential');
    const o = await d.call(Requests.episodesStart, { namespace: 'project.other', title: 'elsewhere' });
    otherPosition = (
      await d.call(Requests.eventsAppend, {
        episodeId: o.episode.id,
        events: [{ kind: 'agent', text: 'checkout rounding in integer cents, another project' }],
      })
    ).results[0].position;
  });

  after(async () => {
    await d?.close();
    await s?.close();
    await stopDaemon(path.join(dir, 'cairn.db'));
    rmDir(dir);
  });

  test('lists the episodic tools', async () => {
    const names = (await s.client.listTools()).tools.map((t) => t.name);
    for (const n of [
      'cairn_events_search',
      'cairn_episodes_search',
      'cairn_events_timeline',
      'cairn_events_expand',
      'cairn_propose_from_events',
    ])
      assert.ok(names.includes(n), n);
  });

  test('search → timeline → expand → propose, inside the session scope, without secrets', async () => {
    const found = await ok(s, 'cairn_events_search', { query: 'checkout rounding cents' });
    const hits = found.data.hits as { position: number; episode: { namespace: string }; event: { secret: boolean } }[];
    assert.ok(hits.length > 0);
    assert.equal(hits[0].position, positions[2], 'the agent turn that explains the bug ranks first');
    assert.ok(
      hits.every((h) => h.episode.namespace === PROJECT),
      'nothing from another project',
    );
    assert.ok(!hits.some((h) => h.position === positions[3]), 'the secret event is not returned');
    assert.match(found.text, new RegExp(`#${positions[2]} `));

    const tl = await ok(s, 'cairn_events_timeline', { position: positions[2], before: 5, after: 5 });
    assert.deepEqual(
      tl.data.entries.map((e: { position: number }) => e.position),
      [positions[0], positions[1], positions[2], positions[4]],
    );
    assert.match(tl.text, /→ #\d+ .*cent rounding/);

    const ex = await ok(s, 'cairn_events_expand', { position: positions[2], before: 1, after: 1 });
    assert.deepEqual(
      ex.data.events.map((e: { position: number }) => e.position),
      [positions[1], positions[2], positions[4]],
    );
    assert.match(ex.text, /src\/checkout\/total\.ts:12/);
    assert.match(ex.text, /\$ npm test -- checkout \(exit 1\)/);

    const p = await ok(s, 'cairn_propose_from_events', {
      events: [positions[0], positions[2]],
      key: 'checkout-rounding',
      value: 'Checkout totals are summed in integer cents and rounded once on the order total, never per line item.',
      kind: 'decision',
    });
    const id = p.data.memory.id as string;
    const stored = await d.call(Requests.get, { id });
    assert.equal(stored.status, 'proposed');
    assert.equal(stored.namespace, PROJECT);
    assert.equal(stored.kind, 'decision');
    assert.equal(stored.properties.sourceEvents, `${positions[0]},${positions[2]}`);
    assert.match(stored.source, /^agent:/);
    const queue = await d.call(Requests.list, {
      scope: { root: PROJECT },
      filter: { field: 'status', op: 'eq', value: 'proposed' },
      include: { proposed: true },
    });
    assert.deepEqual(
      queue.items.map((m) => m.id),
      [id],
    );
  });

  test('cairn_episodes_search finds the session, inside the session scope, without its secret event', async () => {
    const found = await ok(s, 'cairn_episodes_search', { query: 'checkout rounding cents' });
    const eps = found.data.episodes as { episode: { title: string; namespace: string }; hits: { position: number }[] }[];
    assert.equal(eps[0].episode.title, 'fix the checkout rounding bug');
    assert.equal(eps[0].hits[0].position, positions[2], 'its best event is the turn that explains the bug');
    assert.ok(
      eps.every((h) => h.episode.namespace === PROJECT),
      'nothing from another project',
    );
    assert.deepEqual(found.data.scope.root, PROJECT);
    assert.match(
      found.text,
      /^Session "fix the checkout rounding bug" \(.+\):\n {2}#\d+ 2024-03-04T09:10:00\.000Z agent: The cent «rounding»/m,
    );
    const secret = await ok(s, 'cairn_episodes_search', { query: 'payment key sk_live_51HdkEJ2eZvKYlo2C9xQ7rT0aBcDeFgHiJkLmNoP' });
    assert.ok(
      !secret.data.episodes.some((h: { hits: { position: number }[] }) => h.hits.some((x) => x.position === positions[3])),
      'the secret event is not returned',
    );
    assert.doesNotMatch(secret.text, /sk_live/);
    const none = await ok(s, 'cairn_episodes_search', { query: 'checkout', before: '2024-01-01T00:00:00Z' });
    assert.deepEqual(none.data.episodes, []);
    assert.match(none.text, /^No sessions found for "checkout"\.$/m);
    await fails(s, 'cairn_episodes_search', { query: 'checkout', scope: { root: 'project.other' } }, 'InvalidParams', 'scope.root');
    await fails(s, 'cairn_episodes_search', { query: '' }, 'InvalidParams', 'query');
    await fails(s, 'cairn_episodes_search', { query: 'checkout', since: 'last week' }, 'InvalidParams', 'since');
  });

  test('events outside the session scope, and secret ones, are NotFound to the agent', async () => {
    await fails(s, 'cairn_events_expand', { position: otherPosition }, 'NotFound', 'position');
    await fails(s, 'cairn_events_timeline', { position: otherPosition }, 'NotFound', 'anchor');
    await fails(s, 'cairn_events_expand', { position: positions[3] }, 'NotFound', 'position');
    await fails(s, 'cairn_propose_from_events', { events: [otherPosition], key: 'k', value: 'v' }, 'NotFound', 'events[0]');
    await fails(s, 'cairn_propose_from_events', { events: [positions[3]], key: 'k', value: 'v' }, 'NotFound', 'events[0]');
    await fails(s, 'cairn_events_search', { query: 'checkout', scope: { root: 'project.other' } }, 'InvalidParams', 'scope.root');
  });

  test('capture is off by default: the session records no episode of its own', async () => {
    const all = await d.call(Requests.episodesList, {});
    assert.deepEqual(all.episodes.map((e) => e.title).sort(), ['elsewhere', 'fix the checkout rounding bug']);
  });
});

describe('cairn mcp with cairn.episodes.capture on', () => {
  test('records each tool call of the session, with its answer, as events of one episode', async () => {
    const dir = tempDir('cairn-mcp-cap-');
    const repo = fakeRepo(dir, 'shop', 'https://example.com/acme/shop.git');
    const s = await startMcp({ dir, cwd: repo, env: { CAIRN_EPISODES_CAPTURE: '1', CAIRN_REVIEW_AGENT_WRITES: '0' } });
    let d: StreamClient | null = null;
    try {
      await ok(s, 'cairn_remember', { key: 'build-tool', value: 'The shop builds with pnpm.' });
      await fails(s, 'cairn_recall', { id: 'no-such-memory' }, 'NotFound');
      await ok(s, 'cairn_events_search', { query: 'pnpm' });
      await s.close(); // the server appends what it captured before it exits
      d = await daemonClient(s.db);
      await d.initialize('capture-test');
      // Wait for the state (the server process may still be appending after the client closed).
      for (const end = Date.now() + 10_000; ;) {
        const l = await d.call(Requests.episodesList, {});
        if (l.episodes[0]?.events === 5 || Date.now() > end) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const list = await d.call(Requests.episodesList, {});
      assert.equal(list.episodes.length, 1);
      const ep = list.episodes[0];
      assert.equal(ep.namespace, 'project.shop');
      assert.equal(ep.source, 'agent:cairn-test-client');
      assert.match(ep.id, /^mcp:/);
      const got = await d.call(Requests.episodesGet, { id: ep.id });
      assert.deepEqual(
        got.events.map((e) => [e.kind, e.context?.tool]),
        [
          ['tool_call', 'cairn_remember'],
          ['tool_result', 'cairn_remember'],
          ['tool_call', 'cairn_recall'],
          ['tool_result', 'cairn_recall'],
          ['tool_call', 'cairn_events_search'],
        ],
      );
      assert.match(got.events[0].text, /The shop builds with pnpm/);
      assert.match(got.events[3].text, /^error: .*NotFound/);
    } finally {
      await d?.close();
      await s.close();
      await stopDaemon(path.join(dir, 'cairn.db'));
      rmDir(dir);
    }
  });
});

/**
 * Episodes in the real extension host: with cairn.episodes.capture on, @cairn's turn (its handler called directly:
 * code-server has no chat model) and a language-model tool call become events of the window's episode, the status bar
 * shows the record mark, and the dashboard's requests (through DashboardHost, as the Timeline tab sends them) list the
 * session, find the turn, expand it, propose a fact from it and approve it. Capture off records nothing. The same walk
 * through the real Chat view and the dashboard's UI (with an offline chat fixture): test/e2e/chat.js.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { EpisodeListResult, EventExpandResult, EventSearchResult, ListResult, Memory } from '../../../../daemon/src/protocol/types';
import type { ToWebview } from '../../../../daemon/src/protocol/webview';
import type { AgentsExports } from '../../agents';
import { DashboardHost } from '../../dashboard/host';
import type { CairnApi } from '../../main';
import { EXTENSION_ID, uniq, waitFor } from './helpers';

type Exports = CairnApi & AgentsExports;

async function exportsOf(): Promise<Exports> {
  const ext = vscode.extensions.getExtension<Exports>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
  return ext.isActive ? ext.exports : await ext.activate();
}

const stream = () => {
  const md: string[] = [];
  return {
    md,
    stream: {
      markdown: (v: string | vscode.MarkdownString) => void md.push(typeof v === 'string' ? v : v.value),
      progress: () => undefined,
      reference: () => undefined,
      button: () => undefined,
    },
  };
};

suite('episodes', () => {
  let x: Exports;
  const posted: ToWebview[] = [];
  let host: DashboardHost;
  let id = 5000;
  /** One dashboard request through the host; the result, or a failed assertion with the typed error. */
  const call = async <T>(method: string, params: unknown): Promise<T> => {
    const mine = ++id;
    await host.handle({ type: 'request', id: mine, method, params });
    const reply = posted.find((m) => (m.type === 'response' || m.type === 'error') && m.id === mine);
    assert.ok(reply && reply.type === 'response', `${method}: ${JSON.stringify(reply)}`);
    return reply.result as T;
  };
  const capture = (on: boolean | undefined) =>
    vscode.workspace.getConfiguration('cairn').update('episodes.capture', on, vscode.ConfigurationTarget.Global);

  suiteSetup(async function () {
    this.timeout(90_000);
    x = await exportsOf();
    await x.ctx.client.whenConnected(60_000);
    host = new DashboardHost(x.ctx, (m) => posted.push(m));
  });

  suiteTeardown(async () => {
    await capture(undefined);
  });

  test('capture off (the default) records no turn and shows no record mark', async () => {
    await capture(undefined);
    assert.equal(x.agents.service.capture.enabled, false);
    assert.doesNotMatch(x.ctx.statusBar.item.text, /\$\(record\)/);
    const s = stream();
    const r = await x.agents.chat({ prompt: uniq('nothing-captured'), command: 'search' }, s.stream);
    assert.equal(r.metadata.episodeId, undefined);
    assert.equal(x.agents.service.capture.pending, 0);
  });

  test('capture on: a turn and a tool call land on the Timeline, the turn is found, expanded, proposed from and approved', async function () {
    this.timeout(60_000);
    await capture(true);
    await waitFor('capture on', () => x.agents.service.capture.enabled || undefined);
    await waitFor('the record mark in the status bar', () => /\$\(record\)/.test(x.ctx.statusBar.item.text) || undefined);

    // A turn with @cairn (a /search needs no language model) and a tool call, as a model would make it.
    const word = uniq('marmot').replace(/-/g, '');
    const s = stream();
    const r = await x.agents.chat({ prompt: `which port does the ${word} gateway listen on`, command: 'search' }, s.stream);
    const episodeId = r.metadata.episodeId;
    assert.ok(episodeId, 'the turn was recorded');
    const tool = await x.agents.runTool('cairn_search', { query: `${word} gateway port` });
    assert.equal(tool.ok, true);
    await x.agents.service.capture.flush();
    assert.equal(x.agents.service.capture.pending, 0);

    // The Timeline: the session among the episodes, with its four events in order.
    const list = await call<EpisodeListResult>('episodesList', { limit: 100 });
    const ep = list.episodes.find((e) => e.id === episodeId);
    assert.ok(ep, `the session is listed: ${list.episodes.map((e) => e.id).join(', ')}`);
    assert.equal(ep.source, 'vscode');
    const got = await call<{ events: { kind: string; text: string; position: number; context: { tool?: string } | null }[] }>(
      'episodesGet',
      { id: episodeId, limit: 200 },
    );
    const last = got.events.slice(-4);
    assert.deepEqual(
      last.map((e) => e.kind),
      ['user', 'agent', 'tool_call', 'tool_result'],
      'the turn, @cairn’s answer, the tool call and its result, in order',
    );
    assert.match(last[0].text, new RegExp(`^/search which port does the ${word}`));
    assert.equal(last[2].context?.tool, 'cairn_search');
    assert.match(last[2].text, new RegExp(word));

    // Search finds the turn, with its neighbours; expand reads more around it.
    const found = await waitFor('the turn in events/search', async () => {
      const res = await call<EventSearchResult>('eventsSearch', { query: `${word} gateway`, expand: 2, limit: 10 });
      return res.hits.find((h) => h.event.kind === 'user' && h.event.episodeId === episodeId);
    });
    assert.ok(found.context && found.context.some((e) => e.position === found.position));
    const around = await call<EventExpandResult>('eventsExpand', { position: found.position, before: 10, after: 10 });
    assert.equal(around.episode.id, episodeId);
    assert.ok(around.events.some((e) => e.kind === 'tool_call'));

    // A fact proposed from the turn waits in review with its source event, and is approved as the Review tab does.
    const key = uniq('gateway-port');
    const proposed = await call<{ memory: Memory; sourceEvents: number[] }>('episodesPropose', {
      events: [found.position],
      key,
      value: `The ${word} gateway listens on port 8443.`,
      kind: 'fact',
      actor: 'dashboard',
    });
    assert.equal(proposed.memory.status, 'proposed');
    assert.deepEqual(proposed.sourceEvents, [found.position]);
    const queue = await call<ListResult>('list', {
      filter: { field: 'status', op: 'eq', value: 'proposed' },
      include: { proposed: true },
      limit: 200,
    });
    const item = queue.items.find((m) => m.id === proposed.memory.id);
    assert.ok(item, 'in the review queue');
    assert.equal(item.properties.sourceEvents, String(found.position));
    await call('upsert', {
      namespace: item.namespace,
      key: item.key,
      value: item.value,
      status: 'active',
      ifVersion: item.version,
      actor: 'dashboard',
      reason: 'approved in review',
    });
    const approved = await call<Memory>('get', { id: item.id });
    assert.equal(approved.status, 'active');
  });
});

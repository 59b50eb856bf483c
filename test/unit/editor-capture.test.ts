/**
 * Episode capture in the editor (extension/src/agents/capture.ts) over an in-process daemon: off by default, one
 * episodes/start per episode, client seq numbers kept across retries so a lost reply never duplicates an event, the
 * active task's episode continued after its stored events, and an episode the daemon refuses left alone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests, type ParamsOf, type RequestName, type ResultOf } from '../../daemon/src/protocol/methods';
import type { TeamRouter } from '../../daemon/src/team/router';
import { EditorCapture, episodeIdFor, type CaptureHost } from '../../extension/src/agents/capture';
import { tempCore } from '../helpers';

type Core = ReturnType<typeof tempCore>['core'];

/** A capture host over a Core; requests named in `lostReply` run but answer Unavailable, those in `down` do not run. */
function host(core: Core, o: { enabled?: boolean; root?: string; task?: string; git?: CaptureHost['git'] } = {}) {
  const calls: string[] = [];
  const logs: string[] = [];
  const state = { enabled: o.enabled ?? true, task: o.task, lostReply: new Set<string>(), down: new Set<string>() };
  const h: CaptureHost = {
    enabled: () => state.enabled,
    root: () => o.root ?? 'project.app',
    activeTaskId: () => state.task,
    ...(o.git ? { git: o.git } : {}),
    request: async <K extends RequestName>(name: K, params: ParamsOf<K>): Promise<ResultOf<K>> => {
      calls.push(name);
      if (state.down.has(name)) throw new CairnError('Unavailable', 'the daemon is not connected', {});
      const r = (await core.call(Requests[name] as never, params as never)) as ResultOf<K>;
      if (state.lostReply.has(name)) throw new CairnError('Unavailable', 'the reply was lost', {});
      return r;
    },
    log: (level, m) => void logs.push(`${level}: ${m}`),
    sessionId: 'session/42 x',
    workspaceName: () => 'app',
  };
  return { h, calls, logs, state };
}

const events = async (core: Core, id: string) => (await core.call(Requests.episodesGet, { id, limit: 100 })).events;

describe('editor capture', () => {
  it('records nothing while cairn.episodes.capture is off', async () => {
    const t = tempCore();
    try {
      const { h, calls, state } = host(t.core, { enabled: false });
      const c = new EditorCapture(h);
      assert.equal(c.record([{ kind: 'user', text: 'hello', actor: 'vscode' }]), undefined);
      await c.flush();
      assert.deepEqual(calls, []);
      assert.equal((await t.core.call(Requests.episodesList, {})).episodes.length, 0);
      state.enabled = true;
      assert.equal(c.record([{ kind: 'user', text: 'hello', actor: 'vscode' }]), episodeIdFor(undefined, 'session/42 x'));
      await c.flush();
      assert.equal((await t.core.call(Requests.episodesList, {})).episodes.length, 1);
    } finally {
      t.close();
    }
  });

  it('starts the episode once and appends turns in order with seq numbers from 0', async () => {
    const t = tempCore();
    try {
      const { h, calls } = host(t.core);
      const c = new EditorCapture(h);
      const id = c.record([{ kind: 'user', text: 'where do deploys run?', actor: 'vscode' }])!;
      assert.equal(id, 'vscode-session:session-42-x');
      c.record([
        { kind: 'tool_call', text: 'cairn_search {"query":"deploy"}', actor: 'agent:cairn_search', context: { tool: 'cairn_search' } },
        { kind: 'tool_result', text: 'no memories', actor: 'agent:cairn_search', context: { tool: 'cairn_search' } },
      ]);
      c.record([{ kind: 'agent', text: 'On Tuesdays.', actor: 'agent:cairn-chat' }]);
      await c.flush();
      assert.equal(calls.filter((n) => n === 'episodesStart').length, 1);
      const got = await events(t.core, id);
      assert.deepEqual(
        got.map((e) => [e.seq, e.kind, e.actor]),
        [
          [0, 'user', 'vscode'],
          [1, 'tool_call', 'agent:cairn_search'],
          [2, 'tool_result', 'agent:cairn_search'],
          [3, 'agent', 'agent:cairn-chat'],
        ],
      );
      assert.equal(got[1].context?.tool, 'cairn_search');
      const ep = (await t.core.call(Requests.episodesGet, { id, limit: 0 })).episode;
      assert.equal(ep.source, 'vscode');
      assert.equal(ep.namespace, 'project.app');
      assert.equal(ep.title, 'Editor session in app');
    } finally {
      t.close();
    }
  });

  it('sends a batch whose reply was lost again with the same seq numbers: the daemon keeps one copy', async () => {
    const t = tempCore();
    try {
      const { h, calls, state } = host(t.core);
      const c = new EditorCapture(h);
      state.lostReply.add('eventsAppend'); // stored, but the editor never hears so
      const id = c.record([{ kind: 'user', text: 'first turn', actor: 'vscode' }])!;
      await c.flush();
      assert.equal(c.pending, 1, 'the event waits to be sent again');
      const tries = calls.filter((n) => n === 'eventsAppend').length;
      assert.ok(tries >= 1);
      state.lostReply.clear();
      c.record([{ kind: 'agent', text: 'first answer', actor: 'agent:cairn-chat' }]);
      await c.flush();
      assert.equal(c.pending, 0);
      assert.ok(calls.filter((n) => n === 'eventsAppend').length > tries, 'sent again');
      assert.deepEqual(
        (await events(t.core, id)).map((e) => [e.seq, e.text]),
        [
          [0, 'first turn'],
          [1, 'first answer'],
        ],
      );
      // A daemon that was away when the episode started: it starts on the next attempt (reconnect calls flush).
      const t2 = tempCore();
      try {
        const b = host(t2.core);
        const c2 = new EditorCapture(b.h);
        b.state.down.add('episodesStart');
        const id2 = c2.record([{ kind: 'user', text: 'while away', actor: 'vscode' }])!;
        await c2.flush();
        assert.equal(c2.pending, 1);
        assert.equal((await t2.core.call(Requests.episodesList, {})).episodes.length, 0);
        b.state.down.clear();
        await c2.flush();
        assert.deepEqual(
          (await events(t2.core, id2)).map((e) => e.text),
          ['while away'],
        );
      } finally {
        t2.close();
      }
    } finally {
      t.close();
    }
  });

  it("records in the active task's episode, titled like the task, and continues it after its stored events", async () => {
    const t = tempCore();
    try {
      const task = await t.core.call(Requests.tasksCreate, { title: 'Fix the deploy script', scope: { root: 'project.app' } });
      const first = host(t.core, { task: task.id });
      const a = new EditorCapture(first.h);
      const id = a.record([{ kind: 'user', text: 'one', actor: 'vscode' }])!;
      assert.equal(id, `vscode-task:${task.id}`);
      await a.flush();
      // A new window session on the same task.
      const second = host(t.core, { task: task.id });
      const b = new EditorCapture(second.h);
      assert.equal(b.record([{ kind: 'user', text: 'two', actor: 'vscode' }]), id);
      await b.flush();
      assert.deepEqual(
        (await events(t.core, id)).map((e) => [e.seq, e.text]),
        [
          [0, 'one'],
          [1, 'two'],
        ],
      );
      const ep = (await t.core.call(Requests.episodesGet, { id, limit: 0 })).episode;
      assert.equal(ep.title, 'Fix the deploy script');
      assert.equal(ep.taskId, task.id);
      // Without an active task the turn goes to the window's own episode.
      second.state.task = undefined;
      assert.equal(b.record([{ kind: 'user', text: 'three', actor: 'vscode' }]), 'vscode-session:session-42-x');
    } finally {
      t.close();
    }
  });

  it('two windows on the same task: a seq number the other window took is replaced, nothing is lost', async () => {
    const t = tempCore();
    try {
      const task = await t.core.call(Requests.tasksCreate, { title: 'Shared task', scope: { root: 'project.app' } });
      const a = new EditorCapture(host(t.core, { task: task.id }).h);
      const b = new EditorCapture(host(t.core, { task: task.id }).h);
      const id = a.record([{ kind: 'user', text: 'a1', actor: 'vscode' }])!;
      await a.flush();
      b.record([{ kind: 'user', text: 'b1', actor: 'vscode' }]);
      await b.flush();
      a.record([{ kind: 'user', text: 'a2', actor: 'vscode' }]); // a's next number (1) is b's
      await a.flush();
      assert.deepEqual(
        (await events(t.core, id)).map((e) => [e.seq, e.text]),
        [
          [0, 'a1'],
          [1, 'b1'],
          [2, 'a2'],
        ],
      );
    } finally {
      t.close();
    }
  });

  it('stops capturing an episode the daemon refuses (a team namespace), says so once, and never throws', async () => {
    const t = tempCore();
    try {
      t.core.team = { claims: () => false, isTeam: (ns: string) => ns === 'team' || ns.startsWith('team.') } as unknown as TeamRouter;
      const { h, calls, logs } = host(t.core, { root: 'team.web' });
      const c = new EditorCapture(h);
      c.record([{ kind: 'user', text: 'x', actor: 'vscode' }]);
      await c.flush();
      assert.equal(c.pending, 0);
      assert.equal(logs.filter((l) => l.startsWith('warn: episode capture stopped')).length, 1, logs.join('\n'));
      assert.equal(c.record([{ kind: 'user', text: 'y', actor: 'vscode' }]), undefined);
      await c.flush();
      assert.deepEqual(calls, ['episodesStart']);
      assert.equal((await t.core.call(Requests.episodesList, {})).episodes.length, 0);
    } finally {
      t.close();
    }
  });

  it('cuts text to the event limit and makes a valid episode id of any session id', () => {
    assert.equal(episodeIdFor('2f0c', 'x'), 'vscode-task:2f0c');
    assert.match(episodeIdFor(undefined, 'a b/c'.repeat(60)), /^[A-Za-z0-9_.:-]{8,128}$/);
  });

  it("records the git branch and HEAD commit on the episode, as the window's writes do (git-aware memory)", async () => {
    const t = tempCore();
    try {
      const commit = 'ab'.repeat(20);
      const asked: string[] = [];
      const { h } = host(t.core, {
        git: (namespace) => {
          asked.push(namespace);
          return { branch: 'feature/x', commit };
        },
      });
      const c = new EditorCapture(h);
      const id = c.record([{ kind: 'user', text: 'hello', actor: 'vscode' }])!;
      await c.flush();
      assert.deepEqual(asked, ['project.app'], 'asked for the namespace the episode starts in');
      const ep = (await t.core.call(Requests.episodesGet, { id, limit: 0 })).episode;
      assert.equal(ep.branch, 'feature/x');
      assert.equal(ep.commit, commit);
      // outside a repository (no git context): none recorded
      const t2 = tempCore();
      try {
        const c2 = new EditorCapture(host(t2.core, { git: () => undefined }).h);
        const id2 = c2.record([{ kind: 'user', text: 'hello', actor: 'vscode' }])!;
        await c2.flush();
        const ep2 = (await t2.core.call(Requests.episodesGet, { id: id2, limit: 0 })).episode;
        assert.equal(ep2.branch, null);
        assert.equal(ep2.commit, null);
      } finally {
        t2.close();
      }
    } finally {
      t.close();
    }
  });
});

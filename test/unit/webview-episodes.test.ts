/** The dashboard's Timeline logic: episodes by day, an event's file as an anchor, a proposal's source events, episodic params. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Anchor,
  EpisodeProposeParams,
  EventExpandParams,
  EventSearchParams,
  type Episode,
  type EpisodeEvent,
} from '../../daemon/src/protocol/types';
import { WEBVIEW_DAEMON_REQUESTS } from '../../daemon/src/protocol/webview';
import {
  anchorLabel,
  draftProblem,
  eventAnchor,
  eventDetail,
  eventSearchParams,
  expandParams,
  groupByDay,
  HIT_CONTEXT,
  proposeParams,
  sourceEventsOf,
} from '../../webview/src/episodes';
import { restoreState, TABS } from '../../webview/src/state';

const episode = (id: string, startedAt: string): Episode => ({
  id,
  title: id,
  namespace: 'project.app',
  taskId: null,
  source: 'vscode',
  branch: null,
  commit: null,
  startedAt,
  endedAt: null,
  events: 1,
  lastEventAt: startedAt,
});
const event = (context: EpisodeEvent['context'], actor = 'vscode'): Pick<EpisodeEvent, 'context' | 'actor'> => ({ context, actor });

describe('webview episodes', () => {
  it('groups episodes (newest first) by the UTC day they started, keeping their order', () => {
    const eps = [
      episode('ep-c-0001', '2026-05-03T23:59:00.000Z'),
      episode('ep-b-0001', '2026-05-03T00:00:00.000Z'),
      episode('ep-a-0001', '2026-05-01T12:00:00.000Z'),
    ];
    const g = groupByDay(eps);
    assert.deepEqual(
      g.map((d) => [d.day, d.episodes.map((e) => e.id)]),
      [
        ['2026-05-03', ['ep-c-0001', 'ep-b-0001']],
        ['2026-05-01', ['ep-a-0001']],
      ],
    );
    assert.deepEqual(groupByDay([]), []);
  });

  it("turns an event's file and range into an anchor host/openAnchor accepts, and none without a file", () => {
    const a = eventAnchor(event({ path: 'src/a.ts', startLine: 3, endLine: 9, symbol: 'main' }));
    assert.deepEqual(a, { path: 'src/a.ts', startLine: 3, endLine: 9, symbol: 'main' });
    assert.ok(Anchor.safeParse(a).success);
    assert.equal(anchorLabel(a!), 'src/a.ts:3-9');
    // An end before the start is dropped rather than sent as a backwards range; a lone end means nothing.
    assert.deepEqual(eventAnchor(event({ path: 'src/a.ts', startLine: 9, endLine: 3 })), { path: 'src/a.ts', startLine: 9 });
    assert.deepEqual(eventAnchor(event({ path: 'b.py', endLine: 4 })), { path: 'b.py' });
    assert.equal(anchorLabel({ path: 'b.py', startLine: 4, endLine: 4 }), 'b.py:4');
    assert.equal(anchorLabel({ path: 'b.py' }), 'b.py');
    assert.equal(eventAnchor(event({ tool: 'cairn_search' })), null);
    assert.equal(eventAnchor(event(null)), null);
  });

  it('describes the actor, tool and command of an event', () => {
    assert.equal(eventDetail(event({ tool: 'cairn_search' }, 'agent:cairn_search')), 'agent:cairn_search · tool cairn_search');
    assert.equal(eventDetail(event({ command: 'npm test', exitCode: 1 })), 'vscode · $ npm test (exit 1)');
    assert.equal(eventDetail(event(null)), 'vscode');
  });

  it("reads a proposal's source events from its properties, ignoring anything that is not a position", () => {
    assert.deepEqual(sourceEventsOf({ properties: { sourceEvents: '12,7, 12,x,0,-3, 9' } }), [12, 7, 9]);
    assert.deepEqual(sourceEventsOf({ properties: { sourceEvents: 5 } }), [5]);
    assert.deepEqual(sourceEventsOf({ properties: {} }), []);
    assert.deepEqual(sourceEventsOf({ properties: { sourceEvents: null } }), []);
    assert.deepEqual(sourceEventsOf({ properties: { sourceEvents: '99999999999999999999' } }), []);
  });

  it('builds episodic params the protocol accepts', () => {
    const scope = { root: 'project.app' };
    const s = eventSearchParams('  deploy window  ', scope);
    assert.deepEqual(s, { query: 'deploy window', mode: 'hybrid', limit: 20, expand: HIT_CONTEXT, scope });
    assert.ok(EventSearchParams.safeParse(s).success);
    assert.equal('scope' in eventSearchParams('x', undefined), false);
    const x = expandParams(42, 10, scope);
    assert.deepEqual(x, { position: 42, before: 10, after: 10, scope });
    assert.ok(EventExpandParams.safeParse(x).success);
    const p = proposeParams({ key: ' deploy-day ', value: ' Deploys run on Tuesdays. ', kind: 'fact' }, [4, 2, 4], scope);
    assert.deepEqual(p.events, [4, 2]);
    assert.equal(p.key, 'deploy-day');
    assert.equal(p.value, 'Deploys run on Tuesdays.');
    assert.ok(EpisodeProposeParams.safeParse(p).success);
  });

  it('says what a draft proposal lacks', () => {
    assert.match(draftProblem({ key: ' ', value: 'v', kind: 'fact' })!, /key/);
    assert.match(draftProblem({ key: 'k', value: '  ', kind: 'fact' })!, /Write/);
    assert.equal(draftProblem({ key: 'k', value: 'v', kind: 'decision' }), null);
  });

  it('the Timeline is a tab (restored from state) and its daemon requests are forwarded', () => {
    assert.ok(TABS.includes('timeline'));
    assert.equal(restoreState({ tab: 'timeline' }).tab, 'timeline');
    for (const m of ['episodesList', 'episodesGet', 'eventsSearch', 'eventsExpand', 'episodesTimeline', 'episodesPropose'])
      assert.ok((WEBVIEW_DAEMON_REQUESTS as readonly string[]).includes(m), m);
    assert.ok(!(WEBVIEW_DAEMON_REQUESTS as readonly string[]).includes('episodesErase'), 'the dashboard cannot erase episodes');
  });
});

/**
 * The MCP tools of episodic memory (docs/episodes.md): search past sessions' events, see the timeline around one,
 * read it in full with its neighbours, and propose a memory from events. The three-step recall (search → timeline →
 * expand) keeps an agent's tokens few: search and timeline answer with short excerpts, expand with full events.
 * Every call is bounded by the session's scope; events marked secret never reach the agent unless the user allows it.
 */
import { z } from 'zod';
import { Requests } from '../protocol/methods';
import * as T from '../protocol/types';
import { oneLine } from '../text/format';
import { boundedScope, checkNamespace, defaultScope } from './scope';
import type { CairnTool, ToolContext } from './tools';
import { memoryHeading } from './format';
import { ro, tool } from './define-tool';

/** What every episode tool sends of the session: its default scope, and whether secret events may be read. */
const readAs = (ctx: ToolContext) => ({ scope: defaultScope(ctx.scope), excludeSecrets: !ctx.allowSecrets });

/** The filters both searches of past sessions share. */
type SessionSearchArgs = Pick<T.EventSearchParams, 'query' | 'scope' | 'kinds' | 'since' | 'before'>;

/** A search of past sessions' request: the query in the caller's bounded scope, with the filters given. */
function sessionSearch(a: SessionSearchArgs, ctx: ToolContext) {
  const scope = boundedScope(ctx.scope, a.scope);
  return {
    query: a.query,
    scope,
    ...(a.kinds ? { kinds: a.kinds } : {}),
    ...(a.since ? { since: a.since } : {}),
    ...(a.before ? { before: a.before } : {}),
    excludeSecrets: !ctx.allowSecrets,
  };
}

/** The lines a search's answer opens with: how its time was read, a degraded search, or nothing found. */
function searchPreamble(r: { time?: { reading: string } | null; degraded?: string | null }, found: number, none: string): string[] {
  const lines: string[] = [];
  if (r.time) lines.push(`Time: ${r.time.reading}.`);
  if (r.degraded) lines.push(`(keyword search only: ${r.degraded})`);
  if (found === 0) lines.push(none);
  return lines;
}

const eventLine = (e: T.EpisodeEvent, chars = 300) =>
  `#${e.position} ${e.at} ${e.kind}${e.context?.path ? ` [${e.context.path}${e.context.startLine ? `:${e.context.startLine}` : ''}]` : ''}${
    e.context?.command ? ` $ ${e.context.command}${e.context.exitCode !== undefined ? ` (exit ${e.context.exitCode})` : ''}` : ''
  }: ${oneLine(e.text, chars)}`;

export const eventsSearchTool = tool({
  name: 'cairn_events_search',
  description:
    'Search what happened in past sessions (agent turns, tool calls, commands, edits, notes recorded as events of episodes), by meaning and keywords. ' +
    'Use it to recall how something was done or decided before, what failed, or what the user said in an earlier session. ' +
    'Relative time in the query ("yesterday", "last week", "in May") is read against the time of the sessions and the answer says how. ' +
    'Returns short excerpts with each event’s #position; then use cairn_events_timeline or cairn_events_expand on a position to read around it.',
  input: z
    .object({
      query: T.EventSearchParams.shape.query.min(1).describe('What to look for, e.g. "why did the migration fail last week".'),
      scope: T.Scope.optional().describe('Where to look. Default: this project’s namespace (and the user’s own `user` namespace).'),
      kinds: T.EventSearchParams.shape.kinds.describe('Only these event kinds: user, agent, tool_call, tool_result, command, edit, note.'),
      since: T.EventSearchParams.shape.since.describe('Only events at or after this ISO-8601 time.'),
      before: T.EventSearchParams.shape.before.describe('Only events before this ISO-8601 time.'),
      limit: z.number().int().min(1).max(50).optional().describe('Most events to return (default 10).'),
    })
    .strict(),
  annotations: ro('Search past sessions'),
  async run(a, ctx) {
    const params = { ...sessionSearch(a, ctx), limit: a.limit ?? 10 };
    const r = await ctx.call(Requests.eventsSearch, params);
    const lines = searchPreamble(r, r.hits.length, `No events found for "${a.query}".`);
    for (const h of r.hits) lines.push(`${eventLine({ ...h.event, text: h.snippet }, 240)}\n   in "${h.episode.title}" (${h.episode.id})`);
    return { text: lines.join('\n'), structured: { ...r, scope: params.scope } };
  },
});

export const episodesSearchTool = tool({
  name: 'cairn_episodes_search',
  description:
    'Find which past sessions (episodes) a question is about, best first: each session is ranked by its events that match, by meaning and keywords, ' +
    'and comes with its best-matching events (#position and a short excerpt). Use it to find the session where something was done or discussed; ' +
    'use cairn_events_search for single events. Relative time in the query ("last week", "in May") is read against the time of the sessions. ' +
    'Then read around a #position with cairn_events_timeline or cairn_events_expand.',
  input: z
    .object({
      query: T.EpisodeSearchParams.shape.query.min(1).describe('What the session was about, e.g. "the checkout rounding bug".'),
      scope: T.Scope.optional().describe('Where to look. Default: this project’s namespace (and the user’s own `user` namespace).'),
      kinds: T.EpisodeSearchParams.shape.kinds.describe(
        'Only match events of these kinds: user, agent, tool_call, tool_result, command, edit, note.',
      ),
      since: T.EpisodeSearchParams.shape.since.describe('Only match events at or after this ISO-8601 time.'),
      before: T.EpisodeSearchParams.shape.before.describe('Only match events before this ISO-8601 time.'),
      limit: T.EpisodeSearchParams.shape.limit.describe('Most sessions to return (default 5).'),
    })
    .strict(),
  annotations: ro('Find past sessions'),
  async run(a, ctx) {
    const params = { ...sessionSearch(a, ctx), ...(a.limit ? { limit: a.limit } : {}) };
    const r = await ctx.call(Requests.episodesSearch, params);
    const lines = searchPreamble(r, r.episodes.length, `No sessions found for "${a.query}".`);
    for (const h of r.episodes) {
      const e = h.episode;
      lines.push(`Session "${e.title}" (${e.id}, ${e.source}, started ${e.startedAt}, ${e.events} events):`);
      for (const x of h.hits) lines.push(`  #${x.position} ${x.at} ${x.kind}: ${oneLine(x.snippet, 240)}`);
    }
    return { text: lines.join('\n'), structured: { ...r, scope: params.scope } };
  },
});

export const eventsTimelineTool = tool({
  name: 'cairn_events_timeline',
  description:
    'The events just before and after one event (by time, across the sessions in scope), one short line each: what led to it and what followed. ' +
    'Use it after cairn_events_search, then cairn_events_expand to read the few events that matter in full.',
  input: z
    .object({
      position: z.number().int().min(1).describe('The #position of an event from cairn_events_search.'),
      before: z.number().int().min(0).max(50).optional().describe('Events before it (default 5).'),
      after: z.number().int().min(0).max(50).optional().describe('Events after it (default 5).'),
    })
    .strict(),
  annotations: ro('Timeline around an event'),
  async run(a, ctx) {
    const r = await ctx.call(Requests.episodesTimeline, {
      anchor: a.position,
      ...(a.before !== undefined ? { before: a.before } : {}),
      ...(a.after !== undefined ? { after: a.after } : {}),
      ...readAs(ctx),
    });
    const text = r.entries
      .map((e) => `${e.anchor ? '→' : ' '} #${e.position} ${e.at} ${e.kind} (${e.episodeTitle}): ${e.excerpt}`)
      .join('\n');
    return { text, structured: r };
  },
});

export const eventsExpandTool = tool({
  name: 'cairn_events_expand',
  description:
    'Read an event in full together with its neighbours in the same session (n before and after, or every event within some minutes of it).',
  input: z
    .object({
      position: z.number().int().min(1).describe('The #position of an event.'),
      before: z.number().int().min(0).max(50).optional().describe('Events before it in its session (default 3).'),
      after: z.number().int().min(0).max(50).optional().describe('Events after it in its session (default 3).'),
      windowMinutes: z.number().min(0).max(1440).optional().describe('Instead of counts: the events within this many minutes of it.'),
    })
    .strict(),
  annotations: ro('Read events in context'),
  async run(a, ctx) {
    const r = await ctx.call(Requests.eventsExpand, { ...a, ...readAs(ctx) });
    const head = `Session "${r.episode.title}" (${r.episode.id}, ${r.episode.namespace}, ${r.episode.source}, started ${r.episode.startedAt}):`;
    const body = r.events.map((e) => `${e.position === r.anchor ? '→ ' : '  '}${eventLine(e, 4000)}`).join('\n');
    return { text: `${head}\n${body}`, structured: r };
  },
});

/**
 * The git branch and commit a proposal records, by the rule of a memory write (the session's project namespace only):
 * without a namespace it lands in its first source event's session's namespace, read first (events/expand). None when
 * that event cannot be read: the proposal then answers its own error.
 */
async function proposalGit(a: { events: number[]; namespace?: string }, ctx: ToolContext): Promise<T.GitWrite | undefined> {
  if (!ctx.git) return undefined;
  const namespace =
    a.namespace ??
    (await ctx.call(Requests.eventsExpand, { position: a.events[0], before: 0, after: 0, ...readAs(ctx) }).then(
      (r) => r.episode.namespace,
      () => undefined,
    ));
  return namespace === undefined ? undefined : ctx.git.write(namespace);
}

export const proposeTool = tool({
  name: 'cairn_propose_from_events',
  description:
    'Propose a memory (a fact, a decision, a procedure) distilled from past events, for the user to review: it is saved as `proposed` with the source events as its provenance. ' +
    'Write one self-contained idea. To replace an existing memory that the events contradict, pass its id as supersedes (it is superseded when the user approves; nothing is deleted).',
  input: z
    .object({
      events: T.EpisodeProposeParams.shape.events.describe('The #positions of the events this memory is drawn from.'),
      key: T.EpisodeProposeParams.shape.key.describe('Short stable identifier, e.g. "deploy-needs-vpn".'),
      value: T.EpisodeProposeParams.shape.value.describe('The memory itself: clear, specific, self-contained text.'),
      kind: T.MemoryKind.optional().describe('fact (default), decision, procedure, preference or note.'),
      namespace: T.NamespacePath.optional().describe('Default: the namespace of the events’ session.'),
      supersedes: T.MemoryId.optional().describe('Id of a memory this one replaces.'),
      reason: T.Reason.optional().describe('Why (kept in the history).'),
    })
    .strict(),
  annotations: {
    title: 'Propose a memory from events',
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  async run(a, ctx) {
    if (a.namespace !== undefined) checkNamespace(ctx.scope, a.namespace, 'namespace');
    const git = await proposalGit(a, ctx);
    const r = await ctx.call(Requests.episodesPropose, {
      ...a,
      actor: ctx.actor(),
      ...readAs(ctx),
      ...(git ? { git } : {}),
    });
    return {
      text: `Proposed for the user’s review: ${memoryHeading(r.memory)}, from events ${r.sourceEvents.map((p) => `#${p}`).join(', ')}.`,
      structured: r,
    };
  },
});

export const EPISODE_TOOLS = [
  eventsSearchTool,
  episodesSearchTool,
  eventsTimelineTool,
  eventsExpandTool,
  proposeTool,
] as unknown as CairnTool[];

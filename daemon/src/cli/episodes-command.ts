/**
 * `cairn log` and `cairn episodes list|show|search|find|import|erase` (docs/episodes.md).
 *
 * `cairn log` appends one event from a shell (hooks, CI) to an episode of the project: the one named by --episode
 * (started when new), else the newest open episode of the same source, else a new one. Like all capture it does
 * nothing until capture is turned on (cairn.episodes.capture / CAIRN_EPISODES_CAPTURE).
 *
 * `cairn episodes import` reads JSON Lines transcripts: the generic format (docs/episodes.md#import) or Claude Code's
 * session transcripts (~/.claude/projects/<project>/<session>.jsonl), told apart line by line.
 */
import * as fs from 'node:fs';
import { CairnError } from '../protocol/errors';
import { Requests } from '../protocol/methods';
import { envFlag, Settings } from '../protocol/settings';
import * as T from '../protocol/types';
import type { CairnClient } from '../client/socket-client';
import { projectNamespaceFor } from '../project';
import { oneLine } from '../text/format';

export class EpisodeUsageError extends Error {}

export interface EpisodeOpts {
  json: boolean;
  actor: string;
  root?: string;
  episode?: string;
  title?: string;
  source?: string;
  kind?: string;
  task?: string;
  branch?: string;
  commit?: string;
  at?: string;
  seq?: number;
  file?: string;
  command?: string;
  exitCode?: number;
  tool?: string;
  since?: string;
  before?: string;
  limit?: number;
  mode?: T.SearchMode;
  expand?: number;
  reason?: string;
  receipt?: string;
  cwd: string;
}

type Out = (s: string) => void;

/** The project namespace commands work in: --root, else the project of the working directory. */
function namespaceOf(o: EpisodeOpts): string {
  return o.root ?? projectNamespaceFor(o.cwd).namespace;
}

export function captureOn(): boolean {
  return envFlag('CAIRN_EPISODES_CAPTURE', Settings['cairn.episodes.capture'].default);
}

function eventLine(e: T.EpisodeEvent, chars = 200): string {
  const where = e.context?.path ? ` [${e.context.path}${e.context.startLine ? `:${e.context.startLine}` : ''}]` : '';
  return `#${e.position} ${e.at} ${e.kind}${where}${e.secret ? ' (secret)' : ''}: ${oneLine(e.text, chars)}`;
}

function episodeLine(e: T.Episode): string {
  return `${e.id}  ${e.startedAt}${e.endedAt ? '' : ' (open)'}  ${e.namespace}  ${e.source}${e.branch ? ` @${e.branch}` : ''}  ${e.events} events  ${e.title}`;
}

/** cairn log <text...|-> */
export async function logCommand(c: CairnClient, text: string, o: EpisodeOpts, out: Out, note: Out): Promise<number> {
  if (!captureOn()) {
    note('episode capture is off (set cairn.episodes.capture, or CAIRN_EPISODES_CAPTURE=1): nothing was recorded');
    return 0;
  }
  const namespace = namespaceOf(o);
  const source = o.source ?? 'cli';
  let episodeId = o.episode;
  if (episodeId !== undefined) {
    await c.call(Requests.episodesStart, { id: episodeId, namespace, title: o.title ?? `${source} session`, source, actor: o.actor });
  } else {
    const open = await c.call(Requests.episodesList, {
      scope: { root: namespace, includeUser: false },
      source,
      open: true,
      limit: 1,
      ...(o.task ? { taskId: o.task } : {}),
    });
    episodeId =
      open.episodes[0]?.id ??
      (
        await c.call(Requests.episodesStart, {
          namespace,
          title: o.title ?? `${source} session`,
          source,
          actor: o.actor,
          ...(o.task ? { taskId: o.task } : {}),
          ...(o.branch ? { branch: o.branch } : {}),
          ...(o.commit ? { commit: o.commit } : {}),
        })
      ).episode.id;
  }
  const context: T.EventContext = {
    ...(o.file ? parseFile(o.file) : {}),
    ...(o.command ? { command: o.command } : {}),
    ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
    ...(o.tool ? { tool: o.tool } : {}),
  };
  const r = await c.call(Requests.eventsAppend, {
    episodeId,
    actor: o.actor,
    events: [
      {
        kind: o.kind ?? 'note',
        text,
        ...(o.at ? { at: o.at } : {}),
        ...(o.seq !== undefined ? { seq: o.seq } : {}),
        ...(Object.keys(context).length ? { context } : {}),
      },
    ],
  });
  if (o.json) out(JSON.stringify(r, null, 2));
  else {
    const x = r.results[0];
    const what = x.created ? 'logged' : x.removed ? 'not logged again (retention removed it):' : 'already logged';
    out(`${what} event #${x.position} (seq ${x.seq}) in episode ${r.episodeId}`);
    for (const w of x.warnings ?? []) note(w.message);
  }
  return 0;
}

function parseFile(spec: string): Pick<T.EventContext, 'path' | 'startLine' | 'endLine'> {
  const m = /^(.*?)(?::(\d+)(?:-(\d+))?)?$/.exec(spec)!;
  return { path: m[1], ...(m[2] ? { startLine: Number(m[2]) } : {}), ...(m[3] ? { endLine: Number(m[3]) } : {}) };
}

/** cairn episodes list|show|search|find|import|erase|removals */
/** What `search` (events) and `find` (sessions) send alike: the scope, mode, kind, source, time range and limit. */
function searchFilters(o: EpisodeOpts, scope: T.Scope | undefined) {
  return {
    ...(scope ? { scope } : {}),
    ...(o.mode ? { mode: o.mode } : {}),
    ...(o.kind ? { kinds: [o.kind] } : {}),
    ...(o.source ? { sources: [o.source] } : {}),
    ...(o.since ? { since: o.since } : {}),
    ...(o.before ? { before: o.before } : {}),
    ...(o.limit ? { limit: o.limit } : {}),
  };
}

/** The lines a search's answer opens with: how its time was read, a degraded search, or nothing found. */
function searchPreamble(out: Out, r: { time?: { reading: string }; degraded?: string }, found: number, none: string): void {
  if (r.time) out(`time: ${r.time.reading}`);
  if (r.degraded) out(`(full-text only: ${r.degraded})`);
  if (found === 0) out(none);
}

export async function episodesCommand(
  c: CairnClient,
  pos: string[],
  o: EpisodeOpts,
  out: Out,
  readInput: (file: string) => Promise<string>,
): Promise<number> {
  const [sub, ...rest] = pos;
  const scope = o.root !== undefined ? { root: o.root } : undefined;
  const emit = (value: unknown, human: () => void) => (o.json ? out(JSON.stringify(value, null, 2)) : human());
  switch (sub) {
    case 'list': {
      const r = await c.call(Requests.episodesList, {
        ...(scope ? { scope } : {}),
        ...(o.source ? { source: o.source } : {}),
        ...(o.task ? { taskId: o.task } : {}),
        ...(o.branch ? { branch: o.branch } : {}),
        ...(o.since ? { since: o.since } : {}),
        ...(o.before ? { before: o.before } : {}),
        ...(o.limit ? { limit: o.limit } : {}),
      });
      emit(r, () => (r.episodes.length ? r.episodes.forEach((e) => out(episodeLine(e))) : out('no episodes')));
      return 0;
    }
    case 'show': {
      if (rest.length !== 1) throw new EpisodeUsageError('usage: cairn episodes show <episode id> [--limit N]');
      const r = await c.call(Requests.episodesGet, { id: rest[0], ...(scope ? { scope } : {}), limit: o.limit ?? 1000 });
      emit(r, () => {
        out(episodeLine(r.episode));
        for (const e of r.events) out(`  ${eventLine(e, 2000)}`);
        if (r.nextSeq !== null) out(`  … more after seq ${r.nextSeq}`);
      });
      return 0;
    }
    case 'search': {
      if (rest.length === 0) throw new EpisodeUsageError('usage: cairn episodes search <query...>');
      const r = await c.call(Requests.eventsSearch, {
        query: rest.join(' '),
        ...searchFilters(o, scope),
        ...(o.expand ? { expand: o.expand } : {}),
      });
      emit(r, () => {
        searchPreamble(out, r, r.hits.length, 'no events found');
        for (const h of r.hits) {
          out(`${eventLine({ ...h.event, text: h.snippet })}\n   in "${h.episode.title}" (${h.episode.id})`);
          for (const x of h.context ?? []) if (x.position !== h.position) out(`     ${eventLine(x, 160)}`);
        }
      });
      return 0;
    }
    case 'find': {
      // Sessions, not events: episodes/search ranks episodes by their matching events (docs/episodes.md#recall).
      const query = rest.join(' ');
      if (query.trim() === '') throw new EpisodeUsageError('usage: cairn episodes find <query...> (the sessions a query is about)');
      const r = await c.call(Requests.episodesSearch, { query, ...searchFilters(o, scope) });
      emit(r, () => {
        searchPreamble(out, r, r.episodes.length, 'no episodes found');
        for (const h of r.episodes) {
          out(episodeLine(h.episode));
          for (const x of h.hits) out(`   #${x.position} ${x.at} ${x.kind}: ${oneLine(x.snippet, 200)}`);
        }
      });
      return 0;
    }
    case 'import': {
      if (rest.length !== 1) throw new EpisodeUsageError('usage: cairn episodes import <FILE|-> [--root NS]');
      const text = await readInput(rest[0]);
      const episodes = parseTranscript(text, { namespace: namespaceOf(o), source: o.source });
      const summary = await importEpisodes(c, episodes, o.actor);
      emit(summary, () =>
        out(
          `imported ${summary.episodes.length} episode(s): ${summary.created} new events, ${summary.existing} already there` +
            summary.episodes.map((e) => `\n  ${e.id}  ${e.events} events  ${e.title}`).join(''),
        ),
      );
      return 0;
    }
    case 'erase': {
      if (rest.length !== 1) throw new EpisodeUsageError('usage: cairn episodes erase <episode id> [--reason TEXT]');
      const r = await c.call(Requests.episodesErase, {
        id: rest[0],
        actor: o.actor,
        ...(o.reason ? { reason: o.reason } : {}),
        ...(scope ? { scope } : {}),
      });
      const receiptText = JSON.stringify(r.receipt, null, 2) + '\n';
      if (o.receipt) fs.writeFileSync(o.receipt, receiptText, { mode: 0o600 });
      emit(r, () => {
        out(
          `erased episode ${r.id}: ${r.events} events, ${r.vectors} vectors${r.walTruncated ? '' : ' (the WAL could not be truncated yet: another connection reads; erase again later)'}`,
        );
        if (o.receipt) out(`receipt ${r.receipt.id} written to ${o.receipt}`);
        else out(receiptText.trimEnd());
      });
      return 0;
    }
    case 'removals': {
      const r = await c.call(Requests.episodesRemovals, { ...(scope ? { scope } : {}), ...(o.limit ? { limit: o.limit } : {}) });
      emit(r, () => {
        for (const e of r.entries)
          out(
            `${e.at}  ${e.op.padEnd(9)} ${e.episodeId}  ${e.namespace}  ${e.events} events  by ${e.actor}${e.reason ? `: ${e.reason}` : ''}`,
          );
        if (r.entries.length === 0) out('nothing was removed from the event log');
      });
      return 0;
    }
    default:
      throw new EpisodeUsageError(
        'usage: cairn episodes list|show <id>|search <query...>|find <query...>|import <FILE|->|erase <id>|removals',
      );
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Transcripts
// ---------------------------------------------------------------------------------------------------------------------
/** One episode read from a transcript, with its events in order. */
export interface TranscriptEpisode {
  start: T.EpisodeStartParams;
  endedAt?: string;
  events: T.EventInput[];
}

const TEXT_MAX = T.EpisodeLimits.eventTextChars;
const clip = (s: string) => (s.length > TEXT_MAX ? s.slice(0, TEXT_MAX - 1) + '…' : s);

function bad(line: number, why: string): CairnError {
  return new CairnError('InvalidParams', `line ${line}: ${why}`, { field: `line ${line}` });
}

/**
 * Episodes of a JSON Lines transcript. Generic lines are `{"type":"episode", ...EpisodeStartParams, endedAt?}`
 * followed by its `{"type":"event", ...EventInput}` lines; Claude Code lines (`sessionId`, `message`) become one
 * episode per session. An event without `seq` gets its index in its episode, so importing a file again adds nothing.
 */
export function parseTranscript(text: string, d: { namespace: string; source?: string }): TranscriptEpisode[] {
  const out: TranscriptEpisode[] = [];
  const claude = new Map<string, TranscriptEpisode>();
  let current: TranscriptEpisode | null = null;
  const summaries: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const n = i + 1;
    if (raw.trim() === '') return;
    let x: Record<string, unknown>;
    try {
      x = JSON.parse(raw) as Record<string, unknown>;
    } catch (e) {
      throw bad(n, `not JSON: ${(e as Error).message}`);
    }
    if (typeof x !== 'object' || x === null || Array.isArray(x)) throw bad(n, 'not a JSON object');
    if (typeof x.sessionId === 'string') {
      claudeLine(x, claude, out, d, summaries);
      return;
    }
    if (x.type === 'summary' && typeof x.summary === 'string') {
      summaries.push(oneLine(x.summary, 200)); // Claude Code: a session's summary, written before its turns
      return;
    }
    if (x.type === 'file-history-snapshot' || x.type === 'queue-operation') return; // Claude Code bookkeeping
    if (x.type === 'episode') {
      const { type: _t, endedAt, ...start } = x;
      const p = T.EpisodeStartParams.safeParse({ namespace: d.namespace, ...(d.source ? { source: d.source } : {}), ...start });
      if (!p.success) throw bad(n, `episode: ${p.error.issues[0].path.join('.')} ${p.error.issues[0].message}`);
      current = { start: p.data, events: [], ...(typeof endedAt === 'string' ? { endedAt } : {}) };
      out.push(current);
      return;
    }
    if (x.type === 'event') {
      if (!current) throw bad(n, 'an event before any {"type":"episode"} line');
      const { type: _t, ...ev } = x;
      const p = T.EventInput.safeParse({ ...ev, ...(typeof ev.text === 'string' ? { text: clip(ev.text) } : {}) });
      if (!p.success) throw bad(n, `event: ${p.error.issues[0].path.join('.')} ${p.error.issues[0].message}`);
      current.events.push({ seq: current.events.length, ...p.data });
      return;
    }
    throw bad(n, 'neither a generic {"type":"episode"|"event"} line nor a Claude Code transcript line');
  });
  return out;
}

const DEFAULT_TITLE = 'Claude Code session';

type Block = { type?: string; text?: string; name?: string; input?: unknown; content?: unknown };

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((b: Block) => (typeof b === 'string' ? b : b?.type === 'text' && typeof b.text === 'string' ? b.text : ''))
      .filter(Boolean)
      .join('\n');
  return '';
}

/** One line of a Claude Code session transcript: user and assistant turns, tool calls and tool results. */
function claudeLine(
  x: Record<string, unknown>,
  sessions: Map<string, TranscriptEpisode>,
  out: TranscriptEpisode[],
  d: { namespace: string; source?: string },
  summaries: string[],
): void {
  const session = x.sessionId as string;
  const at = typeof x.timestamp === 'string' && Number.isFinite(Date.parse(x.timestamp)) ? x.timestamp : undefined;
  let ep = sessions.get(session);
  if (!ep) {
    const id = `claude-code:${session}`.slice(0, 128).replace(/[^A-Za-z0-9_.:-]/g, '-');
    ep = {
      start: {
        id,
        namespace: d.namespace,
        title: summaries.shift() ?? DEFAULT_TITLE,
        source: d.source ?? 'agent:claude-code',
        ...(at ? { startedAt: at } : {}),
        ...(typeof x.gitBranch === 'string' && x.gitBranch ? { branch: x.gitBranch.slice(0, 255) } : {}),
      },
      events: [],
    };
    sessions.set(session, ep);
    out.push(ep);
  }
  const msg = x.message as { role?: string; content?: unknown } | undefined;
  if ((x.type !== 'user' && x.type !== 'assistant') || !msg) return;
  const push = (kind: string, text: string, context?: T.EventContext) => {
    if (!text.trim()) return;
    ep.events.push({ seq: ep.events.length, kind, text: clip(text), ...(at ? { at } : {}), ...(context ? { context } : {}) });
  };
  const blocks: Block[] = Array.isArray(msg.content) ? (msg.content as Block[]) : [{ type: 'text', text: blockText(msg.content) }];
  for (const b of blocks) {
    if (b?.type === 'text' && typeof b.text === 'string') {
      const kind = x.type === 'user' ? 'user' : 'agent';
      if (kind === 'user' && ep.start.title === DEFAULT_TITLE && !b.text.startsWith('<')) ep.start.title = oneLine(b.text, 200);
      push(kind, b.text);
    } else if (b?.type === 'tool_use' && typeof b.name === 'string') {
      const input = b.input === undefined ? '' : JSON.stringify(b.input);
      const inp = (b.input ?? {}) as Record<string, unknown>;
      const file = typeof inp.file_path === 'string' ? inp.file_path : typeof inp.path === 'string' ? inp.path : undefined;
      const command = typeof inp.command === 'string' ? inp.command.slice(0, 4096) : undefined;
      push('tool_call', `${b.name} ${input}`, {
        tool: b.name.slice(0, 200),
        ...(file ? { path: file.slice(0, 1024) } : {}),
        ...(command ? { command } : {}),
      });
    } else if (b?.type === 'tool_result') {
      push('tool_result', blockText(b.content));
    }
  }
}

/** Start (or find) each episode, append its events in batches, and end it when the transcript says so. */
export async function importEpisodes(
  c: CairnClient,
  episodes: TranscriptEpisode[],
  actor: string,
): Promise<{ episodes: { id: string; title: string; events: number }[]; created: number; existing: number }> {
  let created = 0;
  let existing = 0;
  const done: { id: string; title: string; events: number }[] = [];
  for (const e of episodes) {
    const s = await c.call(Requests.episodesStart, { actor, ...e.start });
    for (let i = 0; i < e.events.length; i += T.EpisodeLimits.appendEvents) {
      const r = await c.call(Requests.eventsAppend, {
        episodeId: s.episode.id,
        actor,
        events: e.events.slice(i, i + T.EpisodeLimits.appendEvents),
      });
      for (const x of r.results) {
        if (x.created) created++;
        else existing++;
      }
    }
    if (e.endedAt && !s.episode.endedAt) await c.call(Requests.episodesEnd, { id: s.episode.id, endedAt: e.endedAt });
    done.push({ id: s.episode.id, title: s.episode.title, events: e.events.length });
  }
  return { episodes: done, created, existing };
}

export function readFileInput(file: string, stdin: () => Promise<string>): Promise<string> {
  return file === '-' ? stdin() : fs.promises.readFile(file, 'utf8');
}

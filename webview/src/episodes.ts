/**
 * The Timeline tab's logic that is not drawing (docs/dashboard.md#timeline): episodes grouped by day, an event's
 * file as an anchor to open, a proposal's source events, and the params of the episodic requests. Pure functions,
 * unit-tested in test/unit/webview-episodes.test.ts.
 */
import type {
  Anchor,
  Episode,
  EpisodeEvent,
  EpisodeProposeParams,
  EventExpandParams,
  EventSearchParams,
  Memory,
  Scope,
} from '../../daemon/src/protocol/types';

/** Events shown before and after a search hit (the daemon's `expand`, at most 10). */
export const HIT_CONTEXT = 2;
/** Events fetched when an episode or a hit is opened in full. */
export const EPISODE_PAGE = 200;

export interface DayGroup {
  /** yyyy-mm-dd (UTC) of the episodes' start. */
  day: string;
  episodes: Episode[];
}

/** Episodes (newest first, as episodes/list answers) grouped by the UTC day they started, order kept. */
export function groupByDay(episodes: Episode[]): DayGroup[] {
  const out: DayGroup[] = [];
  for (const e of episodes) {
    const day = e.startedAt.slice(0, 10);
    const last = out[out.length - 1];
    if (last && last.day === day) last.episodes.push(e);
    else out.push({ day, episodes: [e] });
  }
  return out;
}

/** The code an event touched, as an anchor host/openAnchor opens; null when the event names no file. */
export function eventAnchor(e: Pick<EpisodeEvent, 'context'>): Anchor | null {
  const c = e.context;
  if (!c?.path) return null;
  const start = c.startLine;
  const end = c.endLine !== undefined && start !== undefined && c.endLine >= start ? c.endLine : undefined;
  return {
    path: c.path,
    ...(start !== undefined ? { startLine: start } : {}),
    ...(end !== undefined ? { endLine: end } : {}),
    ...(c.symbol ? { symbol: c.symbol } : {}),
  };
}

/** `src/a.ts:3-9`, `src/a.ts:3` or `src/a.ts`. */
export function anchorLabel(a: Anchor): string {
  if (a.startLine === undefined) return a.path;
  return `${a.path}:${a.startLine}${a.endLine !== undefined && a.endLine !== a.startLine ? `-${a.endLine}` : ''}`;
}

/** One line about an event's context besides its file: tool, command and exit code. */
export function eventDetail(e: Pick<EpisodeEvent, 'context' | 'actor'>): string {
  const c = e.context;
  const parts = [e.actor];
  if (c?.tool) parts.push(`tool ${c.tool}`);
  if (c?.command) parts.push(`$ ${c.command}${c.exitCode !== undefined ? ` (exit ${c.exitCode})` : ''}`);
  return parts.join(' · ');
}

/** The source event positions of a proposal (`episodes/propose` keeps them in properties.sourceEvents, comma separated). */
export function sourceEventsOf(m: Pick<Memory, 'properties'>): number[] {
  const raw = m.properties?.sourceEvents;
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : '';
  const out: number[] = [];
  for (const part of text.split(',')) {
    const t = part.trim();
    if (!/^\d+$/.test(t)) continue;
    const n = Number(t);
    if (n >= 1 && Number.isSafeInteger(n) && !out.includes(n)) out.push(n);
  }
  return out.slice(0, 64);
}

/** events/search for the Timeline's search field: hybrid, each hit with its neighbours. */
export function eventSearchParams(query: string, scope: Scope | undefined): EventSearchParams {
  return { query: query.trim(), mode: 'hybrid', limit: 20, expand: HIT_CONTEXT, ...(scope ? { scope } : {}) };
}

/** events/expand to read one event with `around` events each side (0: the event alone). */
export function expandParams(position: number, around: number, scope: Scope | undefined): EventExpandParams {
  return { position, before: around, after: around, ...(scope ? { scope } : {}) };
}

export interface ProposalDraft {
  key: string;
  value: string;
  kind: 'fact' | 'decision' | 'procedure' | 'preference';
}

/** A problem with a draft proposal (shown next to the form), or null when it can be sent. */
export function draftProblem(d: ProposalDraft): string | null {
  if (!d.key.trim()) return 'Give the memory a key.';
  if (!d.value.trim()) return 'Write the memory.';
  return null;
}

/** episodes/propose from a draft and its source events (the memory lands in the review queue as `proposed`). */
export function proposeParams(d: ProposalDraft, events: number[], scope: Scope | undefined): EpisodeProposeParams {
  return {
    events: [...new Set(events)].slice(0, 64),
    key: d.key.trim(),
    value: d.value.trim(),
    kind: d.kind,
    actor: 'dashboard',
    reason: 'proposed from events on the Timeline',
    ...(scope ? { scope } : {}),
  };
}

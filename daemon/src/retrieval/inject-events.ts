/**
 * inject/block's events section (opt-in: `events: n`, the client's cairn.injection.events): the n events most relevant
 * to the prompt, each with the event before and after it in its episode, as a <workspace_events> section after the
 * memories, inside the same budget (docs/episodes.md#injection).
 *
 * - Candidates come from events/search in the same scope (the task's, else the caller's), hybrid when event vectors
 *   are there; time phrases in a prompt are not read as ranges (a prompt is not a query about time).
 * - Events marked secret are never injected, whatever `allowSecrets` says: the search leaves them out inside its
 *   query, and the neighbours shown around a hit leave them out too.
 * - Every character of event text that could open or close markup is written as an entity (inject.ts escapeText).
 */
import type * as T from '../protocol/types';
import { Limits } from '../protocol/types';
import type { Episodes } from '../store/episodes';
import type { Store } from '../store/store';
import { searchEvents, type EventVectorSearcher } from './events';
import { escapeAttr, escapeText } from './inject';

export const EVENTS_OPEN = '<workspace_events>\n';
export const EVENTS_CLOSE = '</workspace_events>';
/** The most a neighbour shows of its text; the hit itself is cut only to fit the budget. */
const NEIGHBOUR_CHARS = 200;
const MIN_EXCERPT = 60;

export interface EventSources {
  episodes: Episodes;
  vectors?: EventVectorSearcher;
}

/** The relevant hits, best first (at most `n`), for the prompt in the scope; secret events never among them. */
export async function relevantEvents(
  store: Store,
  src: EventSources,
  prompt: string,
  scope: T.Scope | undefined,
  n: number,
): Promise<T.EventHit[]> {
  const r = await searchEvents(
    store,
    src.episodes,
    { query: prompt.slice(0, Limits.queryChars), scope, limit: n, expand: 1, excludeSecrets: true, timePhrases: false },
    src.vectors,
  );
  return r.hits.filter((h) => !h.event.secret);
}

const cut = (s: string, n: number) => (s.length > n ? s.slice(0, Math.max(0, n - 1)).trimEnd() + '…' : s);

function line(e: T.EpisodeEvent, text: string, hit: boolean): string {
  return `${hit ? '>' : ' '} [${e.kind}${e.context?.path ? ` ${e.context.path}` : ''}] ${escapeText(text).replace(/\n/g, '\n  ')}\n`;
}

function entry(h: T.EventHit, hitText: string): string {
  const around = (h.context ?? [h.event]).filter((e) => !e.secret);
  const body = around
    .map((e) => (e.position === h.position ? line(e, hitText, true) : line(e, cut(e.text, NEIGHBOUR_CHARS), false)))
    .join('');
  return `<event position="${h.position}" episode="${escapeAttr(h.episode.title)}" at="${h.event.at}" kind="${escapeAttr(h.event.kind)}">\n${body}</event>\n`;
}

/**
 * The section's entries within `room` characters (the section's own tags counted), best first; a long event is cut to
 * fit rather than dropped. Returns '' and no events when none fits.
 */
export function renderEvents(hits: T.EventHit[], room: number): { text: string; events: NonNullable<T.InjectBlockResult['events']> } {
  let used = EVENTS_OPEN.length + EVENTS_CLOSE.length + 1;
  let body = '';
  const events: NonNullable<T.InjectBlockResult['events']> = [];
  for (const h of hits) {
    let text = h.event.text;
    let e = entry(h, text);
    if (used + e.length > room) {
      const over = used + e.length - room;
      const keep = escapeText(text).length - over - 1;
      if (keep < MIN_EXCERPT) continue;
      text = cut(text, keep);
      while (used + (e = entry(h, text)).length > room && text.length > MIN_EXCERPT) text = cut(text, text.length - 8);
      if (used + e.length > room) continue;
    }
    body += e;
    used += e.length;
    events.push({ position: h.position, episodeId: h.episode.id, kind: h.event.kind, score: h.score });
  }
  return events.length ? { text: EVENTS_OPEN + body + EVENTS_CLOSE, events } : { text: '', events };
}

/**
 * episodes/search: episodes (sessions) ranked for a query by their matching events (docs/episodes.md#recall).
 *
 * The query is read as events/search reads it (time phrase, filters, scope inside each arm) and both arms' event
 * candidates are fused per event as there. An episode's score then aggregates its events' scores, best first, each
 * worth half the one before: s1 + s2/2 + s3/4 + ... So the best event leads (an episode with one strong match is not
 * buried), and a second and third match lift an episode above one with a single match of the same strength, without
 * letting a long episode win on many weak matches. The halving is a round value, not a fitted one: on LoCoMo the
 * rule was chosen among others by the smallest gap between the selection and confirmation sets (bench/README.md).
 */
import type * as T from '../protocol/types';
import type { Episodes } from '../store/episodes';
import { eventsByTime, type EventArmHit } from '../store/events-search';
import type { Store } from '../store/store';
import { eventArms, fuseEventArms, readQuery, type EventVectorSearcher } from './events';
import { rrf } from './fusion';
import { snippet } from './snippet';

export const EPISODE_LIMIT = 5;
export const EPISODE_HITS = 3;
/** Event candidates per arm: at least this many, and this many per episode asked for. */
const MIN_CANDIDATES = 40;
const CANDIDATES_PER_EPISODE = 8;

/** An episode's score from its events' scores: the best, plus each next one worth half the one before. */
export function episodeScore(eventScores: number[]): number {
  const s = [...eventScores].sort((a, b) => b - a);
  let total = 0;
  for (let i = 0, w = 1; i < s.length; i++, w /= 2) total += s[i] * w;
  return total;
}

/** Events (best first, each with its episode) grouped into episodes ranked by `episodeScore`, best first. */
export function rankEpisodes(
  events: { pos: number; ep: number; score: number }[],
): { ep: number; score: number; events: { pos: number; score: number }[] }[] {
  const by = new Map<number, { pos: number; score: number }[]>();
  for (const e of events) {
    const list = by.get(e.ep) ?? [];
    list.push({ pos: e.pos, score: e.score });
    by.set(e.ep, list);
  }
  return [...by.entries()]
    .map(([ep, evs]) => ({ ep, score: episodeScore(evs.map((e) => e.score)), events: evs }))
    .sort((a, b) => b.score - a.score || b.events[0].pos - a.events[0].pos);
}

/** One arm's candidates scored by rank alone (the fused scale: 1.0 at rank 1), for a search with one arm. */
const byRank = (list: EventArmHit[], k: number) => list.map((h, i) => ({ pos: h.pos, ep: h.ep, score: rrf(i + 1, k) }));

export async function searchEpisodes(
  store: Store,
  episodes: Episodes,
  p: T.EpisodeSearchParams,
  vectors?: EventVectorSearcher,
): Promise<T.EpisodeSearchResult> {
  const limit = p.limit ?? EPISODE_LIMIT;
  const perEpisode = p.hits ?? EPISODE_HITS;
  const mode = p.mode ?? 'hybrid';
  const candidates = Math.max(MIN_CANDIDATES, CANDIDATES_PER_EPISODE * limit);
  const q = readQuery(store, episodes, p, candidates);
  const extra = q.time ? { time: q.time } : {};

  let ranked: ReturnType<typeof rankEpisodes>;
  let used: T.SearchMode = mode;
  let degraded: string | undefined;
  if (q.query.trim().length === 0) {
    if (!q.time) return { episodes: [], mode, ...extra };
    // Only a time phrase: the episodes of the range's events, the one with the newest event first.
    const seen = new Map<number, { ep: number; score: number; events: { pos: number; score: number }[] }>();
    for (const h of eventsByTime(store.db, q.arm)) {
      const e = seen.get(h.ep) ?? { ep: h.ep, score: 0, events: [] };
      e.events.push({ pos: h.pos, score: 0 });
      seen.set(h.ep, e);
    }
    ranked = [...seen.values()];
  } else {
    const a = await eventArms(store, q, candidates, mode === 'fts' ? undefined : vectors);
    const k = a.fusion.k;
    if (mode === 'fts' || !a.vec) {
      if (mode !== 'fts') [used, degraded] = ['fts', a.why ?? undefined];
      ranked = rankEpisodes(byRank(a.fts, k));
    } else if (mode === 'vector') ranked = rankEpisodes(byRank(a.vec, k));
    else ranked = rankEpisodes(fuseEventArms(a.fts, a.vec, a.fusion));
  }
  const top = ranked.slice(0, limit);
  const rows = episodes.byRowids(
    top.map((r) => r.ep),
    p.scope,
  );
  const shown = top.flatMap((r) => r.events.slice(0, perEpisode).map((e) => e.pos));
  const events = shown.length ? episodes.byPositions(shown, p) : new Map();
  return {
    episodes: top.flatMap((r): T.EpisodeSearchHit[] => {
      const episode = rows.get(r.ep);
      if (!episode) return [];
      const hits = r.events.slice(0, perEpisode).flatMap((e) => {
        const ev = events.get(e.pos);
        return ev
          ? [{ position: e.pos, kind: ev.kind, at: new Date(ev.at).toISOString(), score: e.score, snippet: snippet(ev.text, q.query) }]
          : [];
      });
      return [{ episode, score: r.score, hits }];
    }),
    mode: used,
    ...(degraded ? { degraded } : {}),
    ...extra,
  };
}

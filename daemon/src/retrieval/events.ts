/**
 * events/search and episodes/propose: the episodic layer's retrieval (docs/episodes.md).
 *
 * Search reads a relative time phrase of the query ("last week", "in May") against the reference time (the caller's,
 * else the newest event in scope, else now) into a time range, then runs the full-text and vector arms over events
 * (scope, filters and the range inside each arm's query) and fuses them by weighted reciprocal rank, as memory
 * search does. Without vectors, hybrid and vector answer what full-text answers, with `degraded` saying why.
 */
import { CairnError } from '../protocol/errors';
import type * as T from '../protocol/types';
import type { Episodes } from '../store/episodes';
import { toEvent } from '../store/episodes';
import { eventsByTime, eventTextArm, eventVectorArm, type EventArmHit, type EventArmQuery } from '../store/events-search';
import { withGit } from '../store/git-visibility';
import type { Store } from '../store/store';
import { readTimePhrase } from '../text/time-phrases';
import { FUSION, fuseArms, type Fusion } from './fusion';
import { snippet } from './snippet';

/** The daemon's event embedder, once a model is loaded (index/event-vectors.ts). */
export interface EventVectorSearcher {
  /** null when the vector arm can serve; otherwise why not (shown as `degraded`). */
  unavailable(): string | null;
  fusion(): Fusion;
  /** The query's unit-length vector. */
  embedQuery(text: string): Promise<Float32Array>;
}

export const EVENT_LIMIT = 10;
/** A candidate only the vector arm found must be at least this similar to the query (as HYBRID_MIN_SIMILARITY). */
export const EVENT_MIN_SIMILARITY = 0.3;
const CANDIDATE_FACTOR = 4;
const MIN_CANDIDATES = 40;

const isoTime = (field: string, s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  if (!Number.isFinite(t)) throw new CairnError('InvalidParams', `${field} is not a valid time`, { field });
  return t;
};

/** A search request read: the query without its time phrase, what narrows each arm, and how a phrase was read. */
export interface ReadQuery {
  query: string;
  arm: EventArmQuery;
  time?: T.TimeReadingResult;
}

/** Read a search request (events/search, episodes/search): its time phrase against the reference time, its filters. */
export function readQuery(
  store: Store,
  episodes: Episodes,
  p: Omit<T.EventSearchParams, 'limit' | 'expand' | 'mode'>,
  limit: number,
): ReadQuery {
  let since = isoTime('since', p.since);
  let before = isoTime('before', p.before);
  let query = p.query;
  let time: T.TimeReadingResult | undefined;
  if (p.timePhrases !== false) {
    const given = isoTime('reference', p.reference);
    const newest = given === undefined ? episodes.newestAt(p.scope) : null;
    const reference = given ?? newest ?? store.now();
    const r = readTimePhrase(p.query, reference);
    if (r) {
      // The phrase narrows the range the caller gave (never widens it).
      since = since === undefined ? r.since : Math.max(since, r.since);
      before = before === undefined ? r.before : Math.min(before, r.before);
      query = r.rest;
      time = {
        phrase: r.phrase,
        since: new Date(r.since).toISOString(),
        before: new Date(r.before).toISOString(),
        reading: r.reading,
        reference: new Date(reference).toISOString(),
        referenceFrom: given !== undefined ? 'param' : newest !== null ? 'newest-event' : 'now',
      };
    }
  }
  const arm: EventArmQuery = {
    scope: p.scope,
    kinds: p.kinds,
    sources: p.sources,
    episodeId: p.episodeId,
    since,
    before,
    excludeSecrets: p.excludeSecrets,
    limit,
  };
  return { query, arm, ...(time ? { time } : {}) };
}

/** Both arms' candidates for a non-empty query (vectors null: why the vector arm cannot serve). */
export async function eventArms(
  store: Store,
  q: ReadQuery,
  candidates: number,
  vectors: EventVectorSearcher | undefined,
): Promise<{ fts: EventArmHit[]; vec: EventArmHit[] | null; why: string | null; fusion: Fusion }> {
  const why = vectors ? vectors.unavailable() : 'no embedding model is configured';
  const fts = eventTextArm(store.db, q.query, { ...q.arm, limit: candidates });
  if (why) return { fts, vec: null, why, fusion: FUSION.builtin };
  const qv = await vectors!.embedQuery(q.query);
  const vec = eventVectorArm(store.db, qv, { ...q.arm, limit: candidates });
  return { fts, vec, why: null, fusion: vectors!.fusion() ?? FUSION.builtin };
}

/** The two arms fused per event (weighted reciprocal rank, the memories' rule), best first. */
export function fuseEventArms(fts: EventArmHit[], vec: EventArmHit[], fusion: Fusion): { pos: number; ep: number; score: number }[] {
  const episodeOf = new Map<number, number>();
  for (const h of [...fts, ...vec]) episodeOf.set(h.pos, h.ep);
  const fused = fuseArms(
    fts.map((h) => ({ rowid: h.pos, score: h.score })),
    vec.map((h) => ({ rowid: h.pos, score: h.score })),
    fusion,
    EVENT_MIN_SIMILARITY,
  );
  return [...fused.entries()]
    .sort((a, b) => b[1].fused - a[1].fused || b[0] - a[0])
    .map(([pos, f]) => ({ pos, ep: episodeOf.get(pos)!, score: f.fused }));
}

export async function searchEvents(
  store: Store,
  episodes: Episodes,
  p: T.EventSearchParams,
  vectors?: EventVectorSearcher,
): Promise<T.EventSearchResult> {
  const limit = p.limit ?? EVENT_LIMIT;
  const mode = p.mode ?? 'hybrid';
  const q = readQuery(store, episodes, p, limit);
  const { query, arm, time } = q;
  const extra = time ? { time } : {};
  const done = (list: { pos: number; score: number }[], m: T.SearchMode, degraded?: string): T.EventSearchResult => ({
    hits: hits(episodes, list, p, query),
    mode: m,
    ...(degraded ? { degraded } : {}),
    ...extra,
  });

  if (query.trim().length === 0) {
    // Only a time phrase (or nothing): the events of the range, newest first.
    return time ? done(eventsByTime(store.db, arm), mode) : { hits: [], mode, ...extra };
  }
  if (mode === 'fts') return done(eventTextArm(store.db, query, arm), 'fts');
  const why = vectors ? vectors.unavailable() : 'no embedding model is configured';
  if (why) return done(eventTextArm(store.db, query, arm), 'fts', why);
  if (mode === 'vector') return done(eventVectorArm(store.db, await vectors!.embedQuery(query), arm), 'vector');
  const a = await eventArms(store, q, Math.max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES), vectors);
  return done(fuseEventArms(a.fts, a.vec!, a.fusion).slice(0, limit), 'hybrid');
}

function hits(episodes: Episodes, list: { pos: number; score: number }[], p: T.EventSearchParams, query: string): T.EventHit[] {
  if (list.length === 0) return [];
  const rows = episodes.byPositions(
    list.map((h) => h.pos),
    p,
  );
  const around = p.expand
    ? episodes.around(
        list.map((h) => h.pos),
        p.expand,
        p.excludeSecrets === true,
      )
    : null;
  return list.flatMap((h): T.EventHit[] => {
    const r = rows.get(h.pos);
    if (!r) return [];
    const context = around?.get(h.pos);
    return [
      {
        event: toEvent(r),
        episode: {
          id: r.episode_id,
          title: r.ep_title,
          namespace: r.ep_ns,
          source: r.ep_source,
          startedAt: new Date(r.ep_started).toISOString(),
        },
        position: r.pos,
        score: h.score,
        snippet: snippet(r.text, query),
        ...(context ? { context } : {}),
      },
    ];
  });
}

/**
 * episodes/propose: a memory made from events, in the review queue (`proposed`), with its provenance (the source
 * event positions and their episode) in its properties. `supersedes` goes through the usual supersession.
 */
export function propose(store: Store, episodes: Episodes, p: T.EpisodeProposeParams): T.EpisodeProposeResult {
  const sources = episodes.sources(p.events, p);
  const positions = [...new Set(sources.map((s) => s.pos))];
  const namespace = p.namespace ?? sources[0].ns_path;
  const episodeIds = [...new Set(sources.map((s) => s.episode_id))];
  const r = store.upsert({
    namespace,
    key: p.key,
    value: p.value,
    kind: p.kind ?? 'fact',
    ...(p.tags ? { tags: p.tags } : {}),
    ...(p.importance !== undefined ? { importance: p.importance } : {}),
    ...(p.confidence !== undefined ? { confidence: p.confidence } : {}),
    ...(p.supersedes ? { supersedes: p.supersedes } : {}),
    source: p.actor ?? 'user',
    actor: p.actor ?? 'user',
    reason: p.reason ?? `proposed from events ${positions.join(', ')}`,
    status: 'proposed',
    properties: { sourceEvents: positions.join(','), sourceEpisodes: episodeIds.join(',').slice(0, 1024) },
    ...(p.scope ? { scope: p.scope } : {}),
    ...(p.git ? { git: p.git } : {}),
  });
  // The version's git record, as a read shows it (memory/upsert answers the same way).
  const memory = p.git ? withGit(store.db, [r.memory])[0] : r.memory;
  return { memory, position: r.position, sourceEvents: positions };
}

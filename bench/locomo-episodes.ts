/**
 * LoCoMo as episodes (issue 25): each session of a conversation becomes an episode (its session date the reference
 * time), each turn an event; every question is asked with events/search in its conversation's scope and scored
 * against the evidence turn ids, as bench/locomo.ts scores memory search:
 *   turn level:    recall@5, recall@10, MRR
 *   session level: recall@5 (share of evidence sessions among the top 5's sessions), and for episodes/search the
 *                  share of evidence sessions among its top 5 episodes
 * for fts, vector and hybrid events/search, for hybrid + expand (the top 5 each with its neighbours in its episode,
 * `--expand N` each side, default 1: turn recall among them), and — in the same run, on the same turns — the
 * memory-per-turn hybrid figure of bench/locomo.ts (every turn a memory, memory/search), so the two compare directly.
 * Temporal questions (category 2) are in the per-category lines.
 *
 *   node --import tsx bench/locomo-episodes.ts [--data FILE] [--model builtin|ID|PATH] [--model-path DIR]
 *                                              [--convs 0-2] [--expand N] [--no-time-phrases] [--json out.json]
 *
 * Protocol (bench/README.md): tune on conversations 0-2, confirm on 3-4, report both.
 * Default data: ../shared/data/locomo/locomo-dev5.json (CC BY-NC 4.0, evaluation only).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { slugify } from '../daemon/src/protocol/namespace';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { EventInput, SearchMode, UpsertParams } from '../daemon/src/protocol/types';
import { Daemon } from '../daemon/src/server/daemon';
import { eventArms, readQuery } from '../daemon/src/retrieval/events';
import { eventMatch } from '../daemon/src/store/events-search';
import Database from 'better-sqlite3';
import {
  CATEGORY,
  CONVS,
  conversationNamespace,
  DATA,
  evidenceIds,
  loadSamples,
  sessionOf,
  sessionTurns,
  startDaemon,
  turnMemory,
  turnText,
  type Sample,
  type SessionTurns,
} from './locomo-data';
import { arg, fmt, now } from './stats';

const EXPAND = Number(arg('expand', '1'));
const TIME_PHRASES = !process.argv.includes('--no-time-phrases');
const JSON_OUT = arg('json', '');
/** Save each question's arm candidates (events with their episodes, and episode-level lists) for offline ranking rules. */
const ARMS_OUT = arg('arms-out', '');
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** "1:56 pm on 8 May, 2023" as ms (UTC). */
export function sessionTime(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) throw new Error(`cannot read the session date "${s}"`);
  const h = (Number(m[1]) % 12) + (m[3].toLowerCase() === 'pm' ? 12 : 0);
  const month = MONTHS.indexOf(m[5].toLowerCase());
  if (month < 0) throw new Error(`cannot read the month of "${s}"`);
  return Date.UTC(Number(m[6]), month, Number(m[4]), h, Number(m[2]));
}

/** A conversation's sessions in order, each with its date as ms. */
const sessions = (s: Sample): Session[] =>
  sessionTurns(s)
    .map((x) => ({ ...x, at: sessionTime(x.date) }))
    .sort((a, b) => a.n - b.n);

type Session = SessionTurns & { at: number };

interface Acc {
  n: number;
  r5: number;
  r10: number;
  mrr: number;
  sr5: number;
  x5: number;
}
const zero = (): Acc => ({ n: 0, r5: 0, r10: 0, mrr: 0, sr5: 0, x5: 0 });

/** `expanded`: the turns of the top 5 with their neighbours (hybrid + expand), else null. */
function score(acc: Acc, hits: string[], evidence: string[], expanded: string[] | null = null): void {
  const ev = new Set(evidence);
  const evS = new Set(evidence.map(sessionOf));
  const inTop = (k: number) => hits.slice(0, k).filter((h) => ev.has(h)).length / ev.size;
  const first = hits.findIndex((h) => ev.has(h));
  const sessions5 = new Set(hits.slice(0, 5).map(sessionOf));
  acc.n++;
  acc.r5 += inTop(5);
  acc.r10 += inTop(10);
  acc.mrr += first >= 0 ? 1 / (first + 1) : 0;
  acc.sr5 += [...evS].filter((s) => sessions5.has(s)).length / evS.size;
  if (expanded) acc.x5 += [...new Set(expanded)].filter((h) => ev.has(h)).length / ev.size;
}
const fin = (a: Acc) => ({
  questions: a.n,
  turnRecall5: a.r5 / a.n,
  turnRecall10: a.r10 / a.n,
  turnMRR: a.mrr / a.n,
  sessionRecall5: a.sr5 / a.n,
  ...(a.x5 ? { turnRecall5Expanded: a.x5 / a.n } : {}),
});

async function main() {
  const samples = loadSamples();
  const { d, close } = await startDaemon('cairn-locomo-ep-');
  try {
    const info = d.core.status().embeddings;
    console.log(`model: ${info.model} (${info.dimension}-d)${info.fallbackReason ? `, fell back: ${info.fallbackReason}` : ''}`);

    // Ingest: events (one episode per session) and, for the side-by-side, one memory per turn.
    const diaOf = new Map<number, string>(); // event position -> dia_id
    let t0 = now();
    let events = 0;
    let memPos = 0;
    for (const s of samples) {
      const ns = conversationNamespace(s);
      const mems: UpsertParams[] = [];
      for (const ses of sessions(s)) {
        const ep = await d.core.call(R.episodesStart, {
          id: `locomo-${slugify(s.sample_id)}-s${ses.n}`,
          namespace: ns,
          title: `session ${ses.n} (${ses.date})`,
          source: 'import:locomo',
          startedAt: new Date(ses.at).toISOString(),
        });
        const batch: EventInput[] = ses.turns.map((t, i) => ({
          seq: i,
          kind: 'user',
          actor: t.speaker.slice(0, 200),
          text: turnText(t),
          at: new Date(ses.at + i * 1000).toISOString(),
        }));
        const r = await d.core.call(R.eventsAppend, { episodeId: ep.episode.id, events: batch });
        r.results.forEach((x, i) => diaOf.set(x.position, ses.turns[i].dia_id));
        events += batch.length;
        for (const t of ses.turns) mems.push(turnMemory(ns, t, ses));
      }
      for (let i = 0; i < mems.length; i += 1000) memPos = (await d.core.call(R.upsertBatch, { items: mems.slice(i, i + 1000) })).position;
    }
    const tIngest = now() - t0;
    t0 = now();
    const w = await d.core.call(R.indexWait, { position: memPos, timeoutMs: 600_000 });
    if (!w.reached || !w.events?.reached) throw new Error(`indexes did not catch up: ${JSON.stringify(w)}`);
    console.log(
      `ingested ${events} turns (as events and as memories) from ${samples.length} conversations in ${fmt(tIngest / 1000)} s; indexed in ${fmt((now() - t0) / 1000)} s`,
    );

    if (ARMS_OUT) {
      await dumpArms(d, samples, diaOf);
      return;
    }
    const modes: SearchMode[] = ['fts', 'vector', 'hybrid'];
    type Res = { all: Acc; noAdv: Acc; byCat: Record<string, Acc> };
    const results: Record<string, Res> = {};
    for (const m of [...modes, 'memories-hybrid', 'episodes-hybrid']) results[m] = { all: zero(), noAdv: zero(), byCat: {} };
    const lat: Record<string, number[]> = { fts: [], vector: [], hybrid: [], 'memories-hybrid': [], 'episodes-hybrid': [] };
    let questions = 0;
    const phrases: string[] = [];
    const add = (res: Res, cat: string, category: number, hits: string[], ev: string[], expanded: string[] | null = null) => {
      score(res.all, hits, ev, expanded);
      if (category !== 5) score(res.noAdv, hits, ev, expanded);
      score((res.byCat[cat] ??= zero()), hits, ev, expanded);
    };
    for (const s of samples) {
      const scope = { root: conversationNamespace(s), includeUser: false };
      for (const qa of s.qa) {
        const ev = evidenceIds(qa.evidence);
        if (ev.length === 0) continue;
        questions++;
        const cat = CATEGORY[qa.category] ?? String(qa.category);
        for (const mode of modes) {
          const t = now();
          const r = await d.core.call(R.eventsSearch, {
            query: qa.question,
            scope,
            mode,
            limit: 10,
            ...(TIME_PHRASES ? {} : { timePhrases: false }),
            ...(mode === 'hybrid' && EXPAND > 0 ? { expand: EXPAND } : {}),
          });
          lat[mode].push(now() - t);
          if (mode === 'hybrid' && r.time) phrases.push(`${qa.question} → ${r.time.reading}`);
          const hits = r.hits.map((h) => diaOf.get(h.position) ?? '?');
          const expanded =
            mode === 'hybrid' && EXPAND > 0
              ? r.hits.slice(0, 5).flatMap((h) => (h.context ?? []).map((e) => diaOf.get(e.position) ?? '?'))
              : null;
          add(results[mode], cat, qa.category, hits, ev, expanded);
        }
        // episodes/search: the top 5 episodes (sessions) themselves; only its session figures mean anything.
        let t = now();
        const es = await d.core.call(R.episodesSearch, { query: qa.question, scope, limit: 10, hits: 0 });
        lat['episodes-hybrid'].push(now() - t);
        add(
          results['episodes-hybrid'],
          cat,
          qa.category,
          es.episodes.map((e) => `D${/-s(\d+)$/.exec(e.episode.id)?.[1] ?? '?'}:0`),
          ev,
        );
        t = now();
        const m = await d.core.call(R.search, { query: qa.question, scope, mode: 'hybrid', limit: 10 });
        lat['memories-hybrid'].push(now() - t);
        add(
          results['memories-hybrid'],
          cat,
          qa.category,
          m.hits.map((h) => h.memory.key),
          ev,
        );
      }
    }
    const report: Record<string, unknown> = {
      data: path.basename(DATA),
      conversations: samples.length,
      convs: CONVS || 'all',
      turns: events,
      questions,
      model: info.model,
      expand: EXPAND,
      timePhrases: TIME_PHRASES,
      phrasesRead: phrases.length,
    };
    console.log(`\n${questions} questions with evidence; turn-level R@5 / R@10 / MRR, session-level R@5`);
    for (const mode of [...modes, 'memories-hybrid', 'episodes-hybrid']) {
      const sorted = [...lat[mode]].sort((a, b) => a - b);
      report[mode] = {
        all: fin(results[mode].all),
        excludingAdversarial: fin(results[mode].noAdv),
        byCategory: Object.fromEntries(Object.entries(results[mode].byCat).map(([k, v]) => [k, fin(v)])),
        latencyMs: { p50: sorted[Math.floor(sorted.length / 2)], p95: sorted[Math.floor(sorted.length * 0.95)] },
      };
      const line = (name: string, x: ReturnType<typeof fin>) =>
        mode === 'episodes-hybrid'
          ? console.log(
              `${mode.padEnd(15)} ${name.padEnd(20)} n=${String(x.questions).padStart(4)}  session R@5 ${fmt(x.sessionRecall5, 3)} (top 5 episodes)`,
            )
          : console.log(
              `${mode.padEnd(15)} ${name.padEnd(20)} n=${String(x.questions).padStart(4)}  turn R@5 ${fmt(x.turnRecall5, 3)}  R@10 ${fmt(x.turnRecall10, 3)}  MRR ${fmt(x.turnMRR, 3)}  | session R@5 ${fmt(x.sessionRecall5, 3)}${x.turnRecall5Expanded !== undefined ? `  | top 5 + expand ${EXPAND}: turn recall ${fmt(x.turnRecall5Expanded, 3)}` : ''}`,
            );
      line('all', fin(results[mode].all));
      line('all but adversarial', fin(results[mode].noAdv));
      for (const [k, v] of Object.entries(results[mode].byCat).sort()) line(k, fin(v));
    }
    if (phrases.length) console.log(`\ntime phrases read in ${phrases.length} questions, e.g.:\n  ${phrases.slice(0, 5).join('\n  ')}`);
    if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));
  } finally {
    await close();
  }
}

/**
 * --arms-out: per question, both event arms' candidates (300 each, scope and time range applied as events/search
 * does) with their episodes, and two episode-level lists for comparison: BM25 over each session's concatenated text
 * and the cosine to each session's mean event vector. Sessions are numbered as in the evidence ids.
 */
async function dumpArms(d: Daemon, samples: Sample[], diaOf: Map<number, string>) {
  const store = d.core.store;
  const vectors = d.core.hooks.eventVectors!;
  const db = store.db;
  const epSession = new Map<number, number>();
  for (const r of db.prepare('SELECT pos, episode FROM events').all() as { pos: number; episode: number }[])
    epSession.set(r.episode, sessionOf(diaOf.get(r.pos) ?? ''));
  const out: unknown[] = [];
  for (const s of samples) {
    const ns = conversationNamespace(s);
    const scope = { root: ns, includeUser: false };
    // Episode documents of this conversation: concatenated text (in-memory FTS5, same tokenizer) and mean vectors.
    const eps = db
      .prepare(
        `SELECT ep.rowid AS ep, ep.started_at AS at, group_concat(e.text, ' ') AS text FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id
           JOIN events e ON e.episode = ep.rowid WHERE n.path = ? GROUP BY ep.rowid`,
      )
      .all(ns) as { ep: number; at: number; text: string }[];
    const mem = new Database(':memory:');
    mem.exec("CREATE VIRTUAL TABLE d USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')");
    for (const e of eps) mem.prepare('INSERT INTO d(rowid, text) VALUES (?, ?)').run(e.ep, e.text);
    const centroid = new Map<number, Float32Array>();
    for (const r of db
      .prepare('SELECT e.episode AS ep, v.q AS q, v.inv AS inv FROM event_vectors v JOIN events e ON e.pos = v.pos')
      .all() as { ep: number; q: Buffer; inv: number }[]) {
      if (!eps.some((x) => x.ep === r.ep)) continue;
      const v = new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength);
      const c = centroid.get(r.ep) ?? new Float32Array(v.length);
      for (let i = 0; i < v.length; i++) c[i] += v[i] * r.inv;
      centroid.set(r.ep, c);
    }
    for (const qa of s.qa) {
      const ev = evidenceIds(qa.evidence);
      if (ev.length === 0) continue;
      const q = readQuery(store, d.core.episodes, { query: qa.question, scope }, 10);
      const row: Record<string, unknown> = { conv: s.sample_id, category: qa.category, evidence: ev, time: !!q.time };
      if (q.query.trim()) {
        const a = await eventArms(store, q, 300, vectors);
        row.fts = a.fts.map((h) => [h.pos, epSession.get(h.ep), h.score]);
        row.vec = (a.vec ?? []).map((h) => [h.pos, epSession.get(h.ep), h.score]);
        const inRange = (at: number) =>
          (q.arm.since === undefined || at + 3_600_000 >= q.arm.since) && (q.arm.before === undefined || at < q.arm.before);
        const live = new Set(eps.filter((e) => inRange(e.at)).map((e) => e.ep));
        const m = eventMatch(q.query)?.any;
        row.epFts = m
          ? (
              mem.prepare('SELECT rowid AS ep, -bm25(d) AS score FROM d WHERE d MATCH ? ORDER BY bm25(d)').all(m) as {
                ep: number;
                score: number;
              }[]
            )
              .filter((r) => live.has(r.ep))
              .map((r) => [epSession.get(r.ep), r.score])
          : [];
        const qv = await vectors.embedQuery(q.query);
        row.epVec = [...centroid.entries()]
          .filter(([ep]) => live.has(ep))
          .map(([ep, c]) => {
            let dot = 0;
            let nn = 0;
            for (let i = 0; i < c.length; i++) {
              dot += c[i] * qv[i];
              nn += c[i] * c[i];
            }
            return [epSession.get(ep), nn ? dot / Math.sqrt(nn) : 0] as [number, number];
          })
          .sort((x, y) => y[1] - x[1]);
      }
      out.push(row);
    }
    mem.close();
  }
  fs.writeFileSync(ARMS_OUT, JSON.stringify({ fusion: d.core.hooks.eventVectors!.fusion(), questions: out }));
  console.log(`wrote ${out.length} questions' candidates to ${ARMS_OUT}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

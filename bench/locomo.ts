/**
 * LoCoMo retrieval benchmark (issue 3). Every dialogue turn becomes a memory
 * (one namespace per conversation; speaker, session and session date kept),
 * then every question is asked in its conversation's scope and the top hits are
 * scored against the evidence turn ids:
 *   turn level:    recall@5, recall@10 (share of evidence turns retrieved), MRR (first evidence turn)
 *   session level: recall@5 (share of evidence sessions among the top 5's sessions), MRR
 * for full-text only, vector only and hybrid, over all questions and per category.
 *
 *   node --import tsx bench/locomo.ts [--data FILE] [--model builtin|ID|PATH] [--model-path DIR]
 *                                     [--convs 0-2] [--grid] [--json out.json]
 *                                     [--arms-out F] [--arms-in F] [--fusion rrf,agreement,…] [--team]
 *
 * --convs A-B   only conversations A..B (0-based, in file order) of the data file.
 * --grid        also fuse the two arms offline for every RRF constant K, vector-arm weight and
 *               vector-only similarity floor of a fixed grid (the same formula as
 *               daemon/src/retrieval/search.ts, without the importance/recency nudge, which is
 *               the same for every LoCoMo turn) and print turn R@5 / MRR for each: how the fusion
 *               constants in daemon/src/retrieval/fusion.ts are chosen. Protocol (bench/README.md):
 *               pick on conversations 0-2, confirm on 3-4, report both.
 * --arms-out F  save each question's two candidate lists (key, arm score), evidence and category to F.
 * --arms-in F   no daemon: read such a file and compare fusion rules on it offline.
 * --team        the memories in a team store (PostgreSQL + pgvector started here, scripts/pg/server.sh; the daemon
 *               routes the `locomo` root there): the team arms' quality beside the SQLite store's, same questions.
 * --fusion R,…  the rules of FUSION_RULES (daemon/src/retrieval/fusion.ts) to compare per category, next to
 *               full text alone, with the paired standard error of each gain (all rules with --arms-in).
 *
 * Default data: ../shared/data/locomo/locomo-dev5.json (5 of the 10 conversations, CC BY-NC 4.0,
 * evaluation only). The full 10-conversation locomo10.json has the same format: pass it with --data.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isBuiltinModelId } from '../daemon/src/embed';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { SearchMode, UpsertParams } from '../daemon/src/protocol/types';
import { CANDIDATE_FACTOR, HYBRID_MIN_SIMILARITY, MIN_CANDIDATES } from '../daemon/src/retrieval/search';
import { FUSION, FUSION_RULES, type FusionRuleName } from '../daemon/src/retrieval/fusion';
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
  type Sample,
} from './locomo-data';
import { arg, fmt, now } from './stats';
import { attachTeam } from '../daemon/src/team/attach';
import { startPg, type PgServer } from '../test/team/pg-server';

const GRID = process.argv.includes('--grid');
const TEAM = process.argv.includes('--team');
const JSON_OUT = arg('json', '');
const ARMS_OUT = arg('arms-out', '');
const ARMS_IN = arg('arms-in', '');
const RULES = arg('fusion', '')
  .split(',')
  .filter(Boolean)
  .map((r) => {
    if (!(r in FUSION_RULES)) throw new Error(`--fusion takes rules among ${Object.keys(FUSION_RULES).join(', ')}, not "${r}"`);
    return r as FusionRuleName;
  });
/** Every turn of a conversation as a memory. */
function turns(s: Sample): UpsertParams[] {
  const ns = conversationNamespace(s);
  return sessionTurns(s).flatMap((ses) => ses.turns.map((t) => turnMemory(ns, t, ses)));
}

interface Acc {
  n: number;
  r5: number;
  r10: number;
  mrr: number;
  sr5: number;
  smrr: number;
}
const zero = (): Acc => ({ n: 0, r5: 0, r10: 0, mrr: 0, sr5: 0, smrr: 0 });

function score(acc: Acc, hits: string[], evidence: string[]): void {
  const ev = new Set(evidence);
  const evS = new Set(evidence.map(sessionOf));
  const inTop = (k: number) => hits.slice(0, k).filter((h) => ev.has(h)).length / ev.size;
  const first = hits.findIndex((h) => ev.has(h));
  const sessions5 = new Set(hits.slice(0, 5).map(sessionOf));
  const firstS = hits.findIndex((h) => evS.has(sessionOf(h)));
  acc.n++;
  acc.r5 += inTop(5);
  acc.r10 += inTop(10);
  acc.mrr += first >= 0 ? 1 / (first + 1) : 0;
  acc.sr5 += [...evS].filter((s) => sessions5.has(s)).length / evS.size;
  acc.smrr += firstS >= 0 ? 1 / (firstS + 1) : 0;
}
const fin = (a: Acc) => ({
  questions: a.n,
  turnRecall5: a.r5 / a.n,
  turnRecall10: a.r10 / a.n,
  turnMRR: a.mrr / a.n,
  sessionRecall5: a.sr5 / a.n,
  sessionMRR: a.smrr / a.n,
});

/** Offline fusion of the two arms' candidate lists, as search.ts fuses them (without the nudge). */
function fuse(fts: string[], vec: Array<[string, number]>, K: number, vw: number, floor: number): string[] {
  const rrf = (rank: number) => (K + 1) / (K + rank);
  const wsum = 1 + vw;
  const score = new Map<string, number>();
  fts.forEach((k, i) => score.set(k, rrf(i + 1) / wsum));
  vec.forEach(([k, sim], i) => {
    if (!score.has(k) && sim < floor) return;
    score.set(k, (score.get(k) ?? 0) + (vw * rrf(i + 1)) / wsum);
  });
  return [...score.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map((e) => e[0]);
}

/** One question's two candidate lists ([key, arm score], best first), its evidence turns and category. */
interface ArmLists {
  fts: Array<[string, number]>;
  vec: Array<[string, number]>;
  ev: string[];
  cat: string;
}

function grid(lists: ArmLists[]) {
  const rows: Array<{ K: number; vectorWeight: number; floor: number; turnRecall5: number; turnMRR: number; sessionRecall5: number }> = [];
  for (const K of [1, 2, 5, 10, 20, 60]) {
    for (const vw of [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2]) {
      for (const floor of [0, 0.2, 0.3, 0.4, 0.5]) {
        const acc = zero();
        for (const q of lists)
          score(
            acc,
            fuse(
              q.fts.map((h) => h[0]),
              q.vec,
              K,
              vw,
              floor,
            ),
            q.ev,
          );
        const f = fin(acc);
        rows.push({ K, vectorWeight: vw, floor, turnRecall5: f.turnRecall5, turnMRR: f.turnMRR, sessionRecall5: f.sessionRecall5 });
      }
    }
  }
  rows.sort((a, b) => b.turnRecall5 - a.turnRecall5 || b.turnMRR - a.turnMRR);
  console.log(
    `\nfusion grid (${lists.length} questions; current: built-in K=${FUSION.builtin.k} weight ${FUSION.builtin.vectorWeight} / transformer K=${FUSION.transformer.k} weight ${FUSION.transformer.vectorWeight}, floor ${HYBRID_MIN_SIMILARITY}); top 15 by turn R@5:`,
  );
  for (const r of rows.slice(0, 15))
    console.log(
      `  K=${String(r.K).padStart(2)} vw=${r.vectorWeight.toFixed(2)} floor=${r.floor.toFixed(1)}  turn R@5 ${fmt(r.turnRecall5, 3)}  MRR ${fmt(r.turnMRR, 3)}  session R@5 ${fmt(r.sessionRecall5, 3)}`,
    );
  return rows;
}

/**
 * Each fusion rule of fusion.ts over the two arms' candidate lists (offline, as `--grid`; the constants of the model
 * kind the lists came from where a rule reads them), per category, next to full text alone: turn R@5 / R@10 / MRR, session R@5.
 */
function compareRules(lists: ArmLists[], rules: FusionRuleName[], model: string) {
  const constants = FUSION[isBuiltinModelId(model) ? 'builtin' : 'transformer'];
  const out: Record<string, Record<string, ReturnType<typeof fin> & { gainSE?: number }>> = {};
  const ftsAcc: Record<string, Acc> = { all: zero() };
  const ftsR5: number[] = [];
  for (const q of lists) {
    const hits = q.fts.slice(0, 10).map((h) => h[0]);
    const before = ftsAcc.all.r5;
    score(ftsAcc.all, hits, q.ev);
    ftsR5.push(ftsAcc.all.r5 - before);
    score((ftsAcc[q.cat] ??= zero()), hits, q.ev);
  }
  out.fts = Object.fromEntries(Object.entries(ftsAcc).map(([k, v]) => [k, fin(v)]));
  for (const rule of rules) {
    const acc: Record<string, Acc> = { all: zero() };
    const diffs: number[] = [];
    for (const [qi, q] of lists.entries()) {
      const ids = new Map<string, number>();
      const id = (k: string) => ids.get(k) ?? (ids.set(k, ids.size + 1), ids.size);
      const keys = new Map<number, string>();
      const arm = (l: Array<[string, number]>) => l.map(([k, s]) => (keys.set(id(k), k), { rowid: id(k), score: s }));
      const fused = FUSION_RULES[rule](arm(q.fts), arm(q.vec), constants, HYBRID_MIN_SIMILARITY);
      const hits = [...fused.entries()]
        .sort((a, b) => b[1].fused - a[1].fused || a[0] - b[0])
        .slice(0, 10)
        .map(([rowid]) => keys.get(rowid)!);
      const before = acc.all.r5;
      score(acc.all, hits, q.ev);
      diffs.push(acc.all.r5 - before - ftsR5[qi]);
      score((acc[q.cat] ??= zero()), hits, q.ev);
    }
    out[rule] = Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, fin(v)]));
    // Standard error of the turn R@5 gain over full text, from the per-question paired differences.
    const mean = diffs.reduce((a, b) => a + b, 0) / diffs.length;
    out[rule].all.gainSE = Math.sqrt(diffs.reduce((a, d) => a + (d - mean) ** 2, 0) / (diffs.length - 1) / diffs.length);
  }
  const cats = Object.keys(out.fts).sort((a, b) => (a === 'all' ? -1 : b === 'all' ? 1 : a < b ? -1 : 1));
  console.log(`\nfusion rules offline (${lists.length} questions): turn R@5 (gain over full text) / R@10 / MRR / session R@5`);
  for (const rule of ['fts', ...rules])
    for (const c of cats) {
      const x = out[rule][c];
      const d = x.turnRecall5 - out.fts[c].turnRecall5;
      const gain = rule === 'fts' ? '' : ` (${d >= 0 ? '+' : ''}${fmt(d, 3)}${x.gainSE === undefined ? '' : ` ± ${fmt(x.gainSE, 3)}`})`;
      console.log(
        `  ${rule.padEnd(16)} ${c.padEnd(12)} n=${String(x.questions).padStart(4)}  ${fmt(x.turnRecall5, 3)}${gain.padEnd(17)} / ${fmt(x.turnRecall10, 3)} / ${fmt(x.turnMRR, 3)} / ${fmt(x.sessionRecall5, 3)}`,
      );
    }
  return out;
}

async function main() {
  if (ARMS_IN) {
    const saved = JSON.parse(fs.readFileSync(ARMS_IN, 'utf8')) as { model: string; questions: ArmLists[] };
    if (GRID) grid(saved.questions);
    const rules = compareRules(saved.questions, RULES.length > 0 ? RULES : (Object.keys(FUSION_RULES) as FusionRuleName[]), saved.model);
    if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ arms: path.basename(ARMS_IN), rules }, null, 2));
    return;
  }
  const samples = loadSamples();
  const { d, close } = await startDaemon('cairn-locomo-');
  let pg: PgServer | undefined;
  try {
    if (TEAM) {
      pg = await startPg();
      const db = await pg.createDatabase('locomo');
      await pg.createRole('locomo_bench');
      await pg.grant(db, 'locomo_bench', 'locomo', 'write');
      const team = attachTeam(d.core, { url: pg.url('locomo_bench', db), roots: ['locomo'] });
      if (!(await team.ready)) throw new Error('team database did not open');
      console.log('store: team (PostgreSQL + pgvector)');
    }
    const info = d.core.status().embeddings;
    console.log(
      `model: ${info.model} (${info.dimension}-d)${info.fallbackReason ? `, fell back from ${info.configuredModel}: ${info.fallbackReason}` : ''}`,
    );
    let t0 = now();
    let total = 0;
    let pos = 0;
    for (const s of samples) {
      const items = turns(s);
      total += items.length;
      for (let i = 0; i < items.length; i += 1000) pos = (await d.core.call(R.upsertBatch, { items: items.slice(i, i + 1000) })).position;
    }
    const tIngest = now() - t0;
    t0 = now();
    // (A team write has its vector when it is acknowledged: nothing to wait for.)
    const w = TEAM ? { reached: true } : await d.core.call(R.indexWait, { position: pos, timeoutMs: 600_000 });
    if (!w.reached) throw new Error('index did not catch up');
    console.log(
      `ingested ${total} turns from ${samples.length} conversations in ${fmt(tIngest / 1000)} s; embedded in ${fmt((now() - t0) / 1000)} s`,
    );

    const modes: SearchMode[] = ['fts', 'vector', 'hybrid'];
    const results: Record<string, { all: Acc; noAdv: Acc; byCat: Record<string, Acc> }> = {};
    for (const mode of modes) results[mode] = { all: zero(), noAdv: zero(), byCat: {} };
    const lat: Record<string, number[]> = { fts: [], vector: [], hybrid: [] };
    const armLists: ArmLists[] = [];
    let questions = 0;
    for (const s of samples) {
      const scope = { root: conversationNamespace(s), includeUser: false };
      for (const qa of s.qa) {
        const ev = evidenceIds(qa.evidence);
        if (ev.length === 0) continue;
        questions++;
        const cat = CATEGORY[qa.category] ?? String(qa.category);
        for (const mode of modes) {
          const t = now();
          const r = await d.core.call(R.search, { query: qa.question, scope, mode, limit: 10 });
          lat[mode].push(now() - t);
          const hits = r.hits.map((h) => h.memory.key);
          const res = results[mode];
          score(res.all, hits, ev);
          if (qa.category !== 5) score(res.noAdv, hits, ev);
          score((res.byCat[cat] ??= zero()), hits, ev);
        }
        if (GRID || ARMS_OUT || RULES.length > 0) {
          const limit = Math.max(10 * CANDIDATE_FACTOR, MIN_CANDIDATES);
          const f = await d.core.call(R.search, { query: qa.question, scope, mode: 'fts', limit });
          const v = await d.core.call(R.search, { query: qa.question, scope, mode: 'vector', limit });
          armLists.push({
            fts: f.hits.map((h) => [h.memory.key, h.score]),
            vec: v.hits.map((h) => [h.memory.key, h.score]),
            ev,
            cat,
          });
        }
      }
    }
    const report: Record<string, unknown> = {
      data: path.basename(DATA),
      conversations: samples.length,
      turns: total,
      questions,
      model: info.model,
    };
    console.log(`\n${questions} questions with evidence; turn-level R@5 / R@10 / MRR, session-level R@5 / MRR`);
    for (const mode of modes) {
      const all = fin(results[mode].all);
      const noAdv = fin(results[mode].noAdv);
      const sorted = [...lat[mode]].sort((a, b) => a - b);
      report[mode] = {
        all,
        excludingAdversarial: noAdv,
        byCategory: Object.fromEntries(Object.entries(results[mode].byCat).map(([k, v]) => [k, fin(v)])),
        latencyMs: { p50: sorted[Math.floor(sorted.length / 2)], p95: sorted[Math.floor(sorted.length * 0.95)] },
      };
      const line = (name: string, x: ReturnType<typeof fin>) =>
        console.log(
          `${mode.padEnd(7)} ${name.padEnd(22)} n=${String(x.questions).padStart(4)}  turn R@5 ${fmt(x.turnRecall5, 3)}  R@10 ${fmt(x.turnRecall10, 3)}  MRR ${fmt(x.turnMRR, 3)}  | session R@5 ${fmt(x.sessionRecall5, 3)}  MRR ${fmt(x.sessionMRR, 3)}`,
        );
      line('all', all);
      line('all but adversarial', noAdv);
      for (const [k, v] of Object.entries(results[mode].byCat).sort()) line(k, fin(v));
    }
    if (GRID) report.grid = grid(armLists);
    if (RULES.length > 0) report.rules = compareRules(armLists, RULES, info.model ?? '');
    if (ARMS_OUT)
      fs.writeFileSync(ARMS_OUT, JSON.stringify({ data: path.basename(DATA), convs: CONVS, model: info.model, questions: armLists }));
    if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));
  } finally {
    await close();
    await pg?.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

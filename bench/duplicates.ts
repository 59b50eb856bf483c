/**
 * The possible-duplicate threshold per model, chosen on labelled pairs (issue 9).
 *
 *   node --import tsx bench/duplicates.ts [--model-path DIR] [--models builtin,Xenova/all-MiniLM-L6-v2] [--json FILE]
 *
 * Pairs: test/embed/duplicate-pairs.ts, a selection set (30 duplicate + 30 non-duplicate pairs of
 * software memories) and a held-out set (18 + 18) written separately. Each memory is embedded
 * through the Embedder (production path) from the same text the indexer embeds (embeddingText:
 * key, tags, value). For each model the threshold is chosen on the selection set only: the
 * thresholds (0.50 to 0.99 by 0.01) with the highest accuracy, and among them the middle one
 * (farthest from both kinds of mistake); then it is confirmed on the held-out set. Prints, per
 * model and set, the similarity ranges of both labels and precision / recall / accuracy at the
 * chosen threshold and at the old single threshold 0.93.
 *
 * --cost N: also the main-thread cost of one duplicate check (VectorTables.similarInNamespace:
 * SimHash prefilter, then exact cosines) in a namespace of N memories of the bench corpus embedded
 * with the built-in model, at 0.93 and at the chosen thresholds: a lower threshold lets more
 * slots past the Hamming prefilter.
 */
import * as fs from 'node:fs';
import { Embedder } from '../daemon/src/embed';
import { embeddingText } from '../daemon/src/index/indexer';
import { HELD_OUT, SELECTION, type Pair } from '../test/embed/duplicate-pairs';
import { arg, summarize } from './stats';
import { memoryAt } from './corpus';
import { Requests as R } from '../daemon/src/protocol/methods';
import { DUPLICATE_THRESHOLD } from '../daemon/src/index/indexer';
import { tempCore } from '../test/helpers';

const models = arg('models', 'builtin,Xenova/all-MiniLM-L6-v2').split(',');
const modelPath = arg('model-path', '.models');
const jsonOut = arg('json', '');

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);
const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function similarities(e: Embedder, pairs: Pair[]): Promise<number[]> {
  const texts = pairs.flatMap((p) => [p.a, p.b].map((x) => embeddingText({ key: x.key, value: x.value, tags: x.tags ?? [] })));
  const v = await e.embed(texts);
  return pairs.map((_, i) => dot(v[2 * i], v[2 * i + 1]));
}

function scoreAt(pairs: Pair[], sims: number[], t: number) {
  let tp = 0,
    fp = 0,
    fn = 0,
    tn = 0;
  pairs.forEach((p, i) => {
    const flagged = sims[i] >= t;
    if (p.duplicate && flagged) tp++;
    else if (p.duplicate) fn++;
    else if (flagged) fp++;
    else tn++;
  });
  return {
    threshold: r3(t),
    precision: r3(tp / Math.max(1, tp + fp)),
    recall: r3(tp / (tp + fn)),
    accuracy: r3((tp + tn) / pairs.length),
    tp,
    fp,
    fn,
    tn,
  };
}

function ranges(pairs: Pair[], sims: number[]) {
  const d = sims.filter((_, i) => pairs[i].duplicate).sort((a, b) => a - b);
  const n = sims.filter((_, i) => !pairs[i].duplicate).sort((a, b) => a - b);
  return {
    duplicate: { min: r3(d[0]), median: r3(d[d.length >> 1]) },
    notDuplicate: { median: r3(n[n.length >> 1]), max: r3(n[n.length - 1]) },
  };
}

/**
 * Every other pair of distinct memories of a set (not listed as a pair: different topics, so not
 * duplicates): how many of them a threshold flags. This is the false-alarm rate a store of such
 * memories would see, which the balanced pair sets cannot show.
 */
function unlisted(pairs: Pair[], vecs: Map<string, Float32Array>): number[] {
  const listed = new Set(pairs.map((p) => `${p.a.key}\u0000${p.b.key}`));
  const keys = [...vecs.keys()];
  const sims: number[] = [];
  for (let i = 0; i < keys.length; i++)
    for (let j = i + 1; j < keys.length; j++) {
      if (listed.has(`${keys[i]}\u0000${keys[j]}`) || listed.has(`${keys[j]}\u0000${keys[i]}`)) continue;
      sims.push(dot(vecs.get(keys[i])!, vecs.get(keys[j])!));
    }
  return sims;
}

async function vectorsOf(e: Embedder, pairs: Pair[]): Promise<Map<string, Float32Array>> {
  const memos = new Map(pairs.flatMap((p) => [p.a, p.b]).map((x) => [x.key, x]));
  const v = await e.embed([...memos.values()].map((x) => embeddingText({ key: x.key, value: x.value, tags: x.tags ?? [] })));
  return new Map([...memos.keys()].map((k, i) => [k, v[i]]));
}

(async () => {
  const report: Record<string, unknown> = { selection: SELECTION.length, heldOut: HELD_OUT.length, models: {} };
  for (const model of models) {
    const e = await Embedder.start({ model, modelPath, allowRemote: false });
    if (e.info.fallbackReason) throw new Error(`${model}: ${e.info.fallbackReason}`);
    const sel = await similarities(e, SELECTION);
    const held = await similarities(e, HELD_OUT);
    const background = [...unlisted(SELECTION, await vectorsOf(e, SELECTION)), ...unlisted(HELD_OUT, await vectorsOf(e, HELD_OUT))];
    await e.close();
    const grid = Array.from({ length: 50 }, (_, i) => 0.5 + i * 0.01);
    const acc = grid.map((t) => scoreAt(SELECTION, sel, t).accuracy);
    const best = Math.max(...acc);
    const bestTs = grid.filter((_, i) => acc[i] === best);
    const chosen = bestTs[(bestTs.length - 1) >> 1];
    const out = {
      model: e.info.model,
      chosen: r3(chosen),
      bestRange: [r3(bestTs[0]), r3(bestTs[bestTs.length - 1])],
      selection: { ranges: ranges(SELECTION, sel), atChosen: scoreAt(SELECTION, sel, chosen), at093: scoreAt(SELECTION, sel, 0.93) },
      heldOut: { ranges: ranges(HELD_OUT, held), atChosen: scoreAt(HELD_OUT, held, chosen), at093: scoreAt(HELD_OUT, held, 0.93) },
      unlistedPairs: {
        count: background.length,
        flaggedAtChosen: background.filter((x) => x >= chosen).length,
        max: r3(Math.max(...background)),
        p99: r3([...background].sort((a, b) => a - b)[Math.floor(background.length * 0.99)]),
      },
    };
    (report.models as Record<string, unknown>)[model] = out;
    console.log(`${out.model}: chosen ${out.chosen} (best selection accuracy ${best} for ${out.bestRange.join('..')})`);
    for (const [name, s] of [
      ['selection', out.selection],
      ['held-out ', out.heldOut],
    ] as const) {
      console.log(
        `  ${name}: duplicates min ${s.ranges.duplicate.min} median ${s.ranges.duplicate.median}; not duplicates median ${s.ranges.notDuplicate.median} max ${s.ranges.notDuplicate.max}`,
      );
      for (const [label, x] of [
        [`at ${out.chosen}`, s.atChosen],
        ['at 0.93', s.at093],
      ] as const)
        console.log(`    ${label.padEnd(8)} precision ${x.precision} recall ${x.recall} accuracy ${x.accuracy} (fp ${x.fp}, fn ${x.fn})`);
    }
    const u = out.unlistedPairs;
    console.log(
      `  unlisted pairs (different topics): ${u.flaggedAtChosen} of ${u.count} flagged at ${out.chosen}; p99 ${u.p99}, max ${u.max}`,
    );
  }
  const costN = Number(arg('cost', '0'));
  if (costN > 0) report.checkCost = await checkCost(costN);
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 2));
})();

async function checkCost(n: number) {
  const c = tempCore();
  try {
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    const model = c.store.transaction(() => c.store.vectors.ensure(e.info.model, e.info.dimension));
    c.store.vectors.load(model);
    const items = Array.from({ length: n }, (_, i) => ({ ...memoryAt(i), namespace: 'project.cost' }));
    const rowids: number[] = [];
    const vecs: Float32Array[] = [];
    for (let k = 0; k < n; k += 1000) {
      const chunk = items.slice(k, k + 1000);
      const res = await c.core.call(R.upsertBatch, { items: chunk });
      const v = await e.embed(chunk.map((m) => embeddingText({ key: m.key, value: m.value, tags: m.tags ?? [] })));
      c.store.transaction(() =>
        res.results.forEach((x, i) => {
          if (!x.ok) throw new Error('write failed');
          const rowid = c.store.rowidOf(x.id)!;
          rowids.push(rowid);
          vecs.push(v[i]);
          c.store.vectors.put(model, rowid, v[i], k + i);
        }),
      );
    }
    await e.close();
    const nsRowid = c.store.db
      .prepare('SELECT n.rowid FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ?')
      .pluck()
      .get(rowids[0]) as number;
    const out: Record<string, unknown> = { namespaceSize: n };
    for (const t of [0.93, DUPLICATE_THRESHOLD.builtin]) {
      const ms: number[] = [];
      let found = 0;
      for (let i = 0; i < 300; i++) {
        const j = (i * 7919) % n;
        const t0 = performance.now();
        found += c.store.vectors.similarInNamespace(model, vecs[j], nsRowid, rowids[j], t, 5, Date.now()).length;
        ms.push(performance.now() - t0);
      }
      const s = summarize(ms);
      out[`threshold${t}`] = { p50: r3(s.p50), p95: r3(s.p95), mean: r3(s.mean), duplicatesPerCheck: r3(found / 300) };
      console.log(
        `duplicate check in a namespace of ${n}: threshold ${t}: p50 ${s.p50.toFixed(3)} ms, p95 ${s.p95.toFixed(3)} ms, ${(found / 300).toFixed(2)} found per check`,
      );
    }
    return out;
  } finally {
    c.close();
  }
}

/**
 * The possible-duplicate threshold per model kind (index/indexer-tuning.ts DUPLICATE_THRESHOLD), checked
 * on the labelled pairs it was chosen on (SELECTION) and on the held-out pairs (HELD_OUT), through
 * the Embedder (production path) and the text the indexer embeds. The built-in model always; the
 * real all-MiniLM-L6-v2 from the folder scripts/models/fetch-teacher.sh makes (cached; the first
 * run builds it, as test/embed/minilm.test.ts does). bench/duplicates.ts prints the full figures.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { DUPLICATE_THRESHOLD, embeddingText } from '../../daemon/src/index/indexer';
import { ROOT } from '../helpers';
import { HELD_OUT, SELECTION, type Pair } from './duplicate-pairs';

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);

async function scores(e: Embedder, pairs: Pair[], threshold: number) {
  const texts = pairs.flatMap((p) => [p.a, p.b].map((x) => embeddingText({ key: x.key, value: x.value, tags: x.tags ?? [] })));
  const v = await e.embed(texts);
  const sims = pairs.map((_, i) => dot(v[2 * i], v[2 * i + 1]));
  const flagged = sims.map((s) => s >= threshold);
  const tp = pairs.filter((p, i) => p.duplicate && flagged[i]).length;
  const fp = pairs.filter((p, i) => !p.duplicate && flagged[i]).length;
  const dups = pairs.filter((p) => p.duplicate).length;
  const correct = pairs.filter((p, i) => p.duplicate === flagged[i]).length;
  const missed = pairs.filter((p, i) => p.duplicate && !flagged[i]).map((p) => `${p.a.key}/${p.b.key}`);
  const falseAlarms = pairs.filter((p, i) => !p.duplicate && flagged[i]).map((p) => `${p.a.key}/${p.b.key}`);
  return { precision: tp / Math.max(1, tp + fp), recall: tp / dups, accuracy: correct / pairs.length, missed, falseAlarms };
}

function check(e: Embedder, threshold: number, floors: { selection: number; heldOut: number; precision: number }) {
  return async () => {
    assert.equal(e.info.fallbackReason, null);
    const sel = await scores(e, SELECTION, threshold);
    const held = await scores(e, HELD_OUT, threshold);
    const why = (s: typeof sel) => `missed ${s.missed.join(', ')}; false alarms ${s.falseAlarms.join(', ')}`;
    assert.ok(sel.accuracy >= floors.selection, `selection accuracy ${sel.accuracy}: ${why(sel)}`);
    assert.ok(held.accuracy >= floors.heldOut, `held-out accuracy ${held.accuracy}: ${why(held)}`);
    assert.ok(held.precision >= floors.precision, `held-out precision ${held.precision}: ${why(held)}`);
    // the former single threshold, set for GloVe, misses most duplicates with this model
    const old = await scores(e, HELD_OUT, 0.93);
    assert.ok(old.recall < 0.5, `recall at 0.93 ${old.recall}`);
  };
}

describe('possible-duplicate threshold per model', () => {
  it('the sets are balanced and every pair has two different keys', () => {
    for (const set of [SELECTION, HELD_OUT]) {
      assert.equal(set.filter((p) => p.duplicate).length, set.filter((p) => !p.duplicate).length);
      for (const p of set) assert.notEqual(p.a.key, p.b.key);
    }
    assert.ok(SELECTION.length >= 60 && HELD_OUT.length >= 36);
  });

  it(`built-in model at ${DUPLICATE_THRESHOLD.builtin}: selection accuracy >= 0.95, held-out >= 0.9 with precision >= 0.9`, async () => {
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    try {
      await check(e, DUPLICATE_THRESHOLD.builtin, { selection: 0.95, heldOut: 0.9, precision: 0.9 })();
    } finally {
      await e.close();
    }
  });

  it(`all-MiniLM-L6-v2 at ${DUPLICATE_THRESHOLD.transformer}: selection accuracy >= 0.95, held-out >= 0.85 with precision >= 0.9`, async () => {
    const r = spawnSync('bash', [path.join(ROOT, 'scripts', 'models', 'fetch-teacher.sh')], { encoding: 'utf8', timeout: 20 * 60_000 });
    assert.equal(r.status, 0, `fetch-teacher.sh failed:\n${r.stderr}\n${r.stdout}`);
    const folder = r.stdout.trim().split('\n').pop()!;
    const e = await Embedder.start({ model: 'Xenova/all-MiniLM-L6-v2', modelPath: path.dirname(path.dirname(folder)), allowRemote: false });
    try {
      await check(e, DUPLICATE_THRESHOLD.transformer, { selection: 0.95, heldOut: 0.85, precision: 0.9 })();
    } finally {
      await e.close();
    }
  });
});

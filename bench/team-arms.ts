/**
 * The team store's two search arms alone, on a server that already holds a fixture (bench/team.ts --keep DIR):
 * the full-text arm and the vector arm, each with its hits' rows read (as hybrid search runs them), p50 / p95 over
 * the benchmark's queries, after one warm-up pass over the same queries. Project scope (as bench/team.ts's hybrid
 * phase) or, with --whole, the whole team.
 *
 *   node --import tsx bench/team-arms.ts --url postgres://ROLE@HOST:PORT/DB [--queries 100] [--whole] [--slow 60] [--arms fts]
 *
 * --arms fts: the full-text arm only (a fixture kept without its HNSW index answers a whole-team vector search
 * exactly, ~1 s a query at 1M, which says nothing about the full-text arm); --arms both, the default: both arms.
 * The role's password comes from PGPASSFILE (or the URL). --slow MS prints each query slower than that in either arm.
 */
import { loadModel } from '../daemon/src/index/attach';
import { PgBackend, type PgEmbedder } from '../daemon/src/store/pg/backend';
import { ftsArm, vectorArm } from '../daemon/src/store/pg/search';
import { queryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

const url = arg('url', '');
const n = Number(arg('queries', '100'));
const whole = process.argv.includes('--whole');
const slow = Number(arg('slow', '0'));
const arms = arg('arms', 'both');
if (arms !== 'both' && arms !== 'fts') throw new Error(`--arms ${arms}: both (the default) or fts`);
const vectors = arms === 'both';

async function main() {
  if (!url) throw new Error('--url postgres://ROLE@HOST:PORT/DB is required (a server kept by bench/team.ts --keep)');
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const b = await new PgBackend({ url, poolSize: 2 }).open();
  b.embedder = embedder as unknown as PgEmbedder;
  const fts: number[] = [];
  const vec: number[] = [];
  try {
    for (let pass = 0; pass < 2; pass++)
      for (let i = 0; i < n; i++) {
        const q = queryAt(i);
        const scope = whole ? undefined : { root: q.project.replace(/^project/, 'team.project'), includeUser: false };
        const [v] = await embedder.embed([q.query]);
        let t = now();
        await ftsArm(b, q.query, { scope, limit: 50, now: Date.now(), rows: new Map() });
        const f = now() - t;
        t = now();
        if (vectors) await vectorArm(b, v, { scope, limit: 50, now: Date.now(), rows: new Map() });
        const w = now() - t;
        if (pass === 0) continue;
        fts.push(f);
        vec.push(w);
        if (slow > 0 && (f > slow || w > slow)) console.log(`${i} ${q.query}: full text ${fmt(f, 1)} ms, vector ${fmt(w, 1)} ms`);
      }
  } finally {
    await b.close();
  }
  const f = summarize(fts);
  const v = summarize(vec);
  console.log(
    `${whole ? 'whole team' : 'project scope'}, ${n} queries: full-text arm p50 / p95 ${fmt(f.p50, 1)} / ${fmt(f.p95, 1)} ms, ` +
      (vectors ? `vector arm ${fmt(v.p50, 1)} / ${fmt(v.p95, 1)} ms` : 'vector arm not run'),
  );
}
void main();

/**
 * Does the full-text arm still find what the side-by-side queries were written from (issue 8)? Each query of the
 * workload (`queries-100000.jsonl`) names its source memory (`src_namespace`, `src_key`); this runs the arm alone
 * (`ftsArm`, as `search()` asks it: 100 candidates for a limit of 25) on a private copy of a store built from the
 * same corpus (`bench/search-profile.ts --build`), whole store and scoped to the query's scope, and reports the
 * source memory's R@10 / R@25 / MRR among the candidates (scoped: only queries whose source is in scope) and the
 * arm's CPU time per query, as JSON.
 *
 *   node --import tsx bench/fts-recall.ts --db path/to/cairn.db --queries queries-100000.jsonl [--limit 100] [--json out.json]
 */
import * as fs from 'node:fs';
import { ftsArm } from '../daemon/src/store/search-fts';
import { pathInScope } from '../daemon/src/store/scope';
import { Store } from '../daemon/src/store/store';
import { arg, cpuNow, summarize } from './stats';
import { storeCopy } from './store-copy';

interface Query {
  q: string;
  scope: string;
  src_namespace: string;
  src_key: string;
}

function main(): void {
  const db = arg('db', '');
  const queriesFile = arg('queries', '');
  if (!db || !queriesFile) throw new Error('--db and --queries are required');
  const limit = Number(arg('limit', '100'));
  const { dir: work, copy } = storeCopy(db, 'cairn-fts-recall-');
  const store = new Store(copy, { loadVec: false });
  const queries = fs
    .readFileSync(queriesFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Query);
  const label = store.db.prepare(
    'SELECT m.key AS key, n.path AS path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ?',
  );
  const out: Record<string, unknown> = { queries: queriesFile, candidates: limit };
  try {
    for (const scoped of [false, true]) {
      let n = 0;
      let r10 = 0;
      let r25 = 0;
      let mrr = 0;
      const ms: number[] = [];
      for (const q of queries) {
        const scope = scoped ? { root: q.scope, includeUser: false } : undefined;
        if (scoped && !pathInScope(q.src_namespace, scope)) continue;
        n++;
        const t = cpuNow();
        const hits = ftsArm(store.db, q.q, { scope, now: store.now(), limit });
        ms.push(cpuNow() - t);
        const rank = hits.findIndex((h) => {
          const r = label.get(h.rowid) as { key: string; path: string };
          return r.key === q.src_key && r.path === q.src_namespace;
        });
        if (rank >= 0 && rank < 10) r10++;
        if (rank >= 0 && rank < 25) r25++;
        if (rank >= 0) mrr += 1 / (rank + 1);
      }
      const s = summarize(ms);
      const r3 = (x: number) => Math.round(x * 1000) / 1000;
      const res = { queries: n, r10: r3(r10 / n), r25: r3(r25 / n), mrr: r3(mrr / n), cpuMsP50: r3(s.p50), cpuMsP95: r3(s.p95) };
      out[scoped ? 'scoped' : 'whole'] = res;
      console.log(
        `[${scoped ? 'scoped' : 'whole'}] ${n} queries: source memory R@10 ${res.r10} R@25 ${res.r25} MRR ${res.mrr}; arm CPU p50 ${res.cpuMsP50} p95 ${res.cpuMsP95} ms`,
      );
    }
  } finally {
    store.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
}

main();

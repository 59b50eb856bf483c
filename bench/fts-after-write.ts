/**
 * What a write costs the searches after it, in the full-text arm alone (issue 27): on a store kept by
 * `bench/million.ts --keep`, each query's full-text arm (the 100 candidates hybrid search asks for, whole store) timed
 * warm, and right after one write that reached the full-text index (an upsert and the index caught up), which is
 * when the document counts and row lengths remembered between statements are forgotten. One thread, CPU per query.
 *
 *   node --import tsx bench/fts-after-write.ts --db path/to/cairn.db --queries queries-N.jsonl [--json out.json]
 *
 * Writes into the store (namespace bench.fts-after-write): run it on a copy; no daemon may be using it.
 */
import * as fs from 'node:fs';
import { settleRanking } from '../daemon/src/store/db';
import { phraseCounts, planQuery } from '../daemon/src/store/search-fts';
import { Store } from '../daemon/src/store/store';
import { arg, cpuNow, summarize } from './stats';
import { readJsonl } from './workload';

function main() {
  const store = new Store(arg('db', ''), {});
  const queries = readJsonl<{ q: string; scope: string }>(arg('queries', ''));
  const rounds = Number(arg('rounds', '2'));
  const aq = { now: Date.now(), limit: 100 };
  const run = (q: string) => {
    const c0 = cpuNow();
    store.fullTextArm(q, aq);
    return cpuNow() - c0;
  };
  let w = 0;
  const write = () => {
    store.upsert({ namespace: 'bench.fts-after-write', key: `k${w++}`, value: `a write between searches number ${w}` });
    store.catchUpFullText();
  };
  for (const q of queries) run(q.q); // warm: pages read, plans made
  const out: Record<string, unknown> = {};
  for (let r = 0; r < rounds; r++) {
    const warm = queries.map((q) => run(q.q));
    const afterEach = queries.map((q) => {
      write();
      return run(q.q);
    });
    // After each write, the query's phrase counts first (timed apart), then the arm: what is left is the row lengths'.
    const counts: number[] = [];
    const afterCounts = queries.map((q) => {
      write();
      const c0 = cpuNow();
      const plan = planQuery(store.db, q.q);
      phraseCounts(store.db, [...new Set([...plan.allPhrases, ...plan.anyPhrases])]);
      counts.push(cpuNow() - c0);
      return run(q.q);
    });
    // One write, then every query: what a write every 5 s costs the ~100 searches of those 5 s.
    write();
    const afterOne = queries.map((q) => run(q.q));
    out[`round${r}`] = {
      warm: summarize(warm),
      afterEachWrite: summarize(afterEach),
      afterOneWrite: summarize(afterOne),
      countsAfterWrite: summarize(counts),
      armAfterCounts: summarize(afterCounts),
    };
    console.log(JSON.stringify(out[`round${r}`]), 'length-cache resets so far', settleRanking(store.db));
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  store.close();
}

main();

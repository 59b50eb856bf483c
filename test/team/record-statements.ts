/** Recording the statements a backend's pool runs, for tests that count round trips or read the SQL sent. */
import type pg from 'pg';

/**
 * From now on, the SQL text of every statement `pool` runs is pushed to `into` (only those `keep` accepts).
 * Returns a function that stops the recording.
 */
export function recordStatements(pool: pg.Pool, into: string[], keep: (sql: string) => boolean = () => true): () => void {
  const run = pool.query.bind(pool) as (...a: unknown[]) => unknown;
  const target = pool as unknown as { query: (...a: unknown[]) => unknown };
  target.query = (...a: unknown[]) => {
    const sql = String(a[0]);
    if (keep(sql)) into.push(sql);
    return run(...a);
  };
  return () => {
    target.query = run;
  };
}

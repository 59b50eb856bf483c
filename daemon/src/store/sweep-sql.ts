/**
 * The sweep's statement for the memories of deleted namespaces (Store.sweep purges them in batches). It starts
 * from the deleted namespaces (few) and reaches their memories through `memories_ns`: in the planner's own order
 * (`memories JOIN namespaces`) it scanned every memory, seconds of the event loop at a million memories on every
 * sweep (the daemon sweeps at start and every minute). test/unit/sweep-plan.test.ts checks the plan.
 */
export const DEAD_NAMESPACE_MEMORIES = `SELECT m.rowid, m.id, m.ns_id, m.key, m.version, n.path AS ns_path
  FROM namespaces n CROSS JOIN memories m ON m.ns_id = n.id WHERE n.deleted_at IS NOT NULL LIMIT ?`;

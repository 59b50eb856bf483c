/**
 * Memory branches: copy-on-write overlays of a namespace subtree (docs/branches.md).
 *
 * Creating a branch writes one `branches` row (nothing is copied). A write on a branch is a whole memory row in
 * `branch_memories`, keyed by (branch, namespace path, key), with the base memory's version when the branch first
 * wrote the key (`base_version`). A read on a branch sees its own rows over the base: its row of a key shadows the
 * base memory of that key, a deleted row hides it, and every key the branch has not written shows the base as it is
 * now. Branch rows are read through the `branch_ns` view, so the store's scope, filter and visibility SQL (aliases
 * `m`, `n`) applies to them unchanged, inside each query before its limit. Merge writes the branch's changes to the
 * base through the Store's own write path (history, change log, deletion sticks, forgotten values) in one
 * transaction, and refuses while a key changed on both sides has no resolution.
 */
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem, USER_ROOT } from '../protocol/namespace';
import type {
  Branch,
  BranchChange,
  BranchCreateParams,
  BranchDiffResult,
  BranchDiscardResult,
  BranchMergeParams,
  BranchMergeResult,
  DeleteParams,
  GetParams,
  ListParams,
  ListResult,
  Memory,
  Scope,
  UpsertParams,
  UpsertResult,
  WriteResult,
} from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { STOPWORDS } from '../text/identifiers';
import { bindGit, followerOf } from './branch-git';
import { appendBranchHistory } from './branch-history';
import { stmt, type DB } from './db';
import { compileFilter } from './filter';
import { findRejection } from './rejected';
import { and, iso, isoReq, MEMORY_COLUMNS, toMemory, UNSTORED_VALUE_HASH, visibility, type MemoryRow } from './rows';
import { effectiveIncludeUser, pathInScope, scopePredicate, type SqlFragment } from './scope';
import type { ArmHit, ArmQuery } from './search-fts';
import type { Store } from './store';
import {
  contentColumns,
  mergeContent,
  refuseDeleted,
  refuseRejected,
  refuseStaleVersion,
  sameContent,
  summaryOf,
  validateContent,
} from './write-rules';

interface BranchRow {
  id: string;
  name: string;
  root: string;
  parent: string | null;
  fork_position: number;
  created_at: number;
  created_by: string;
  status: 'open' | 'merged' | 'discarded';
  closed_at: number | null;
  closed_by: string | null;
  task_id: string | null;
  /** Bumped by every write of the branch's rows (the cache of shadowed base rows is keyed by it). */
  generation: number;
  /** The git branch it follows and the conflicts found when that was merged (store/branch-git.ts). */
  git_branch: string | null;
  git_conflicts: number | null;
}

type OwnRow = MemoryRow & { base_version: number | null };

const OWN_FROM = 'branch_memories m JOIN branch_ns n ON n.rid = m.rowid';
const BASE_FROM = 'memories m JOIN namespaces n ON n.id = m.ns_id';
/** Content columns of branch_memories in contentColumns() order. */
const CONTENT = `value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status`;

/** The base rows a branch shadows, as SQL over aliases m, n of the base (the overlay's exclusion, inside every query). */
function notShadowed(branchId: string): SqlFragment {
  return {
    sql: 'NOT EXISTS (SELECT 1 FROM branch_memories b WHERE b.branch_id = ? AND b.ns_path = n.path AND b.key = m.key)',
    params: [branchId],
  };
}

/** A full-text query over branch rows: each word of the query, any of them (BM25 ranks rows with more first). */
function branchMatch(query: string): string | null {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const content = words.filter((w) => !STOPWORDS.has(w));
  const uniq = [...new Set(content.length ? content : words)].slice(0, 32);
  return uniq.length ? uniq.map((w) => `"${w.replace(/"/g, '""')}"`).join(' OR ') : null;
}

/**
 * A scope as a MATCH over the `ns` column (each path as a phrase at the column's start): a superset of the scope's
 * rows (the SQL scope predicate is exact), so FTS5 only scores rows near the scope. null: the whole store; '': nothing.
 */
function scopeMatch(scope: Scope | undefined): string | null {
  if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return null;
  const paths = [...(scope.namespaces ?? []), ...(scope.root !== undefined ? [scope.root] : [])];
  if (effectiveIncludeUser(scope)) paths.push(USER_ROOT);
  return paths.map((p) => `^"${p.split('.').join(' ').replace(/"/g, '""')}"`).join(' OR ');
}

export class Branches {
  /** The base rowids each branch shadows, valid while its generation and the change-log position are the same. */
  private shadowCache = new Map<string, { generation: number; position: number; rowids: Set<number> }>();

  /** Told after each write of branch rows (upsert, delete, a branch started from another): their vectors follow. */
  onWrite: () => void = () => {};

  constructor(private readonly store: Store) {}

  /** After a write of branch rows committed: tell onWrite. */
  private wrote<T>(r: T): T {
    this.onWrite();
    return r;
  }

  /** A write of a branch's rows: bump its generation (in the write's transaction). */
  private touched(branchId: string): void {
    stmt(this.db, 'UPDATE branches SET generation = generation + 1 WHERE id = ?').run(branchId);
  }

  private get db(): DB {
    return this.store.db;
  }

  // ---------------------------------------------------------------- branches
  create(p: BranchCreateParams, taskId: string | null = null): Branch {
    const problem = namespaceProblem(p.root);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'root' });
    return this.wrote(
      this.store.transaction(() => {
        if (this.find(p.name)) throw new CairnError('InvalidState', `a branch named ${p.name} is already open`, { field: 'name' });
        const parent = p.from !== undefined ? this.open(p.from, 'from') : null;
        if (parent && !isUnder(p.root, parent.root))
          throw new CairnError('InvalidParams', `root ${p.root} is outside branch ${parent.name}'s root ${parent.root}`, { field: 'root' });
        if (p.gitBranch !== undefined) {
          const follower = followerOf(this.db, p.gitBranch, p.gitRepo ?? null);
          if (follower)
            throw new CairnError('InvalidState', `git branch ${p.gitBranch} is already followed by branch ${follower}`, {
              field: 'gitBranch',
            });
        } else if (p.gitRepo !== undefined || p.gitCommit !== undefined)
          throw new CairnError('InvalidParams', 'gitRepo and gitCommit need gitBranch', {
            field: p.gitRepo !== undefined ? 'gitRepo' : 'gitCommit',
          });
        const now = this.store.now();
        const id = uuidv7(now);
        stmt(
          this.db,
          `INSERT INTO branches(id, name, root, parent, fork_position, created_at, created_by, task_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(id, p.name, p.root, parent?.id ?? null, this.store.position(), now, p.actor ?? 'user', taskId);
        if (p.gitBranch !== undefined) bindGit(this.db, id, p.gitBranch, p.gitRepo ?? null, p.gitCommit ?? null);
        if (parent) {
          // A branch of a branch starts with its parent's writes under the root (copied: O(parent's writes), not of the subtree).
          const rows = stmt(
            this.db,
            `SELECT rowid FROM branch_memories WHERE branch_id = ? AND (ns_path = ? OR substr(ns_path, 1, ?) = ?)`,
          ).all(parent.id, p.root, p.root.length + 1, p.root + '.') as { rowid: number }[];
          for (const r of rows) {
            const rowid = Number(
              stmt(
                this.db,
                `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at,
                 last_accessed_at, access_count, version, superseded_by, deleted_at, deleted_by, delete_reason)
               SELECT ?, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at,
                 last_accessed_at, access_count, version, superseded_by, deleted_at, deleted_by, delete_reason
               FROM branch_memories WHERE rowid = ?`,
              ).run(id, r.rowid).lastInsertRowid,
            );
            this.indexRow(rowid);
          }
        }
        return this.toBranch(this.row(id)!);
      }),
    );
  }

  list(all = false): Branch[] {
    const rows = stmt(
      this.db,
      `SELECT * FROM branches ${all ? '' : "WHERE status = 'open'"} ORDER BY created_at DESC, id DESC`,
    ).all() as BranchRow[];
    return rows.map((r) => this.toBranch(r));
  }

  /** The open branch of this name (NotFound otherwise). */
  open(name: string, field = 'branch'): BranchRow {
    const b = this.find(name);
    if (!b) throw new CairnError('NotFound', `no open branch ${name}`, { field });
    return b;
  }

  private find(name: string): BranchRow | undefined {
    return stmt(this.db, `SELECT * FROM branches WHERE name = ? AND status = 'open'`).get(name) as BranchRow | undefined;
  }

  private row(id: string): BranchRow | undefined {
    return stmt(this.db, 'SELECT * FROM branches WHERE id = ?').get(id) as BranchRow | undefined;
  }

  /** The open branch of a task (tasks/create with branch: true), if any. */
  ofTask(taskId: string): Branch | null {
    const r = stmt(this.db, `SELECT * FROM branches WHERE task_id = ? AND status = 'open'`).get(taskId) as BranchRow | undefined;
    return r ? this.toBranch(r) : null;
  }

  private toBranch(r: BranchRow): Branch {
    const writes = (stmt(this.db, 'SELECT count(*) AS c FROM branch_memories WHERE branch_id = ?').get(r.id) as { c: number }).c;
    const parent = r.parent ? this.row(r.parent) : undefined;
    return {
      id: r.id,
      name: r.name,
      root: r.root,
      from: parent?.name ?? null,
      forkPosition: r.fork_position,
      createdAt: isoReq(r.created_at),
      createdBy: r.created_by,
      status: r.status,
      closedAt: iso(r.closed_at),
      closedBy: r.closed_by,
      taskId: r.task_id,
      writes,
      ...(r.git_branch !== null ? { gitBranch: r.git_branch } : {}),
      ...(r.git_conflicts !== null ? { gitConflicts: r.git_conflicts } : {}),
    };
  }

  discard(name: string, actor = 'user'): BranchDiscardResult {
    return this.store.transaction(() => {
      const b = this.open(name, 'name');
      const dropped = this.drop(b.id);
      this.close(b.id, 'discarded', actor);
      return { name, dropped };
    });
  }

  private drop(branchId: string): number {
    this.touched(branchId);
    stmt(this.db, 'DELETE FROM branch_fts WHERE rowid IN (SELECT rowid FROM branch_memories WHERE branch_id = ?)').run(branchId);
    return stmt(this.db, 'DELETE FROM branch_memories WHERE branch_id = ?').run(branchId).changes;
  }

  private close(branchId: string, status: 'merged' | 'discarded', actor: string): void {
    stmt(this.db, 'UPDATE branches SET status = ?, closed_at = ?, closed_by = ? WHERE id = ?').run(
      status,
      this.store.now(),
      actor,
      branchId,
    );
  }

  // ---------------------------------------------------------------- rows
  private own(branchId: string, namespace: string, key: string): OwnRow | undefined {
    return stmt(
      this.db,
      `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE m.branch_id = ? AND m.ns_path = ? AND m.key = ?`,
    ).get(branchId, namespace, key) as OwnRow | undefined;
  }

  private base(namespace: string, key: string): MemoryRow | undefined {
    return stmt(this.db, `SELECT ${MEMORY_COLUMNS} FROM ${BASE_FROM} WHERE n.path = ? AND n.deleted_at IS NULL AND m.key = ?`).get(
      namespace,
      key,
    ) as MemoryRow | undefined;
  }

  /** The row a branch read or write of (namespace, key) or id starts from: the branch's own, else the base's. */
  private resolve(
    b: BranchRow,
    t: { id?: string; namespace?: string; key?: string; scope?: Scope },
  ): { own?: OwnRow; base?: MemoryRow; field: string } {
    const scope = scopePredicate(t.scope);
    if (t.id !== undefined) {
      if (t.namespace !== undefined || t.key !== undefined)
        throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
      const w = and({ sql: 'm.branch_id = ? AND m.id = ?', params: [b.id, t.id] }, scope);
      const own = stmt(this.db, `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE ${w.sql}`).get(...w.params) as
        OwnRow | undefined;
      if (own) return { own, field: 'id' };
      const wb = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [t.id] }, scope);
      const base = stmt(this.db, `SELECT ${MEMORY_COLUMNS} FROM ${BASE_FROM} WHERE ${wb.sql}`).get(...wb.params) as MemoryRow | undefined;
      return { base, field: 'id' };
    }
    if (t.namespace === undefined || t.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: t.namespace === undefined ? 'namespace' : 'key' });
    const problem = namespaceProblem(t.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    if (t.scope && !pathInScope(t.namespace, t.scope)) return { field: 'key' };
    const own = isUnder(t.namespace, b.root) ? this.own(b.id, t.namespace, t.key) : undefined;
    return own ? { own, field: 'key' } : { base: this.base(t.namespace, t.key), field: 'key' };
  }

  private indexRow(rowid: number): void {
    stmt(this.db, 'DELETE FROM branch_fts WHERE rowid = ?').run(rowid);
    stmt(
      this.db,
      `INSERT INTO branch_fts(rowid, key, value, summary, tags, ns)
       SELECT rowid, key, value, coalesce(summary, ''), tags, ns_path FROM branch_memories WHERE rowid = ?`,
    ).run(rowid);
  }

  // ---------------------------------------------------------------- reads
  /** memory/get on a branch: the branch's own row of the key or id, else the base's. */
  get(p: GetParams & { branch: string }): Memory {
    const b = this.open(p.branch);
    const t = 'id' in p ? { id: p.id, scope: p.scope } : { namespace: p.namespace, key: p.key, scope: p.scope };
    const { own, field } = this.resolve(b, t);
    if (!own) {
      const { branch: _b, ...rest } = p;
      return this.store.get(rest as GetParams);
    }
    if (!p.includeDeleted) {
      if (own.deleted_at !== null)
        throw new CairnError(
          'NotFound',
          `memory ${own.ns_path}/${own.key} was deleted on branch ${b.name} at ${iso(own.deleted_at)} by ${own.deleted_by}`,
          {
            field,
            deletedAt: iso(own.deleted_at),
            deletedBy: own.deleted_by,
          },
        );
      if (own.expires_at !== null && own.expires_at <= this.store.now())
        throw new CairnError('NotFound', `memory ${own.ns_path}/${own.key} expired at ${iso(own.expires_at)}`, {
          field,
          expiresAt: iso(own.expires_at),
        });
    }
    return toMemory(own);
  }

  /** memory/list on a branch: the base's rows the branch has not written and the branch's own, newest update first. */
  listMemories(p: ListParams & { branch: string }): ListResult {
    const b = this.open(p.branch);
    const limit = p.limit ?? 100;
    const now = this.store.now();
    let cursor: SqlFragment | null = null;
    if (p.cursor !== undefined) {
      const c = /^(\d+):([01]):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
      if (!c) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
      const [u, s, r] = [Number(c[1]), Number(c[2]), Number(c[3])];
      cursor = { sql: '(updated_at < ? OR (updated_at = ? AND (src < ? OR (src = ? AND rowid < ?))))', params: [u, u, s, s, r] };
    }
    const where = and(visibility(p.include, now), scopePredicate(p.scope), compileFilter(p.filter));
    const rows = stmt(
      this.db,
      `SELECT * FROM (
         SELECT ${MEMORY_COLUMNS}, 0 AS src FROM ${BASE_FROM} WHERE ${where.sql} AND ${notShadowed(b.id).sql}
         UNION ALL
         SELECT ${MEMORY_COLUMNS}, 1 AS src FROM ${OWN_FROM} WHERE m.branch_id = ? AND ${where.sql}
       ) WHERE ${cursor ? cursor.sql : '1'} ORDER BY updated_at DESC, src DESC, rowid DESC LIMIT ?`,
    ).all(...where.params, b.id, b.id, ...where.params, ...(cursor?.params ?? []), limit + 1) as (MemoryRow & { src: number })[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toMemory),
      nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.src}:${last.rowid}`).toString('base64url') : null,
    };
  }

  /**
   * What a search on a branch needs (retrieval/search.ts): the base rows the branch shadows (left out inside both
   * base arms, before their limits), the branch rows' own full-text arm (scope, filter, visibility inside its query;
   * hits carry the negated branch rowid), and rows and ranking facts for either kind of hit.
   */
  overlay(
    name: string,
    vectors?: { search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]> },
  ): SearchOverlay {
    const b = this.open(name);
    const position = this.store.position();
    let cached = this.shadowCache.get(b.id);
    if (!cached || cached.generation !== b.generation || cached.position !== position) {
      // Base memories of the keys the branch wrote (a base change that could add one moves the change-log position).
      const rowids = stmt(
        this.db,
        `SELECT m.rowid AS rowid FROM branch_memories b JOIN namespaces n ON n.path = b.ns_path AND n.deleted_at IS NULL
           JOIN memories m ON m.ns_id = n.id AND m.key = b.key WHERE b.branch_id = ?`,
      )
        .all(b.id)
        .map((r) => (r as { rowid: number }).rowid);
      this.shadowCache.set(b.id, (cached = { generation: b.generation, position, rowids: new Set(rowids) }));
    }
    const shadowed = cached.rowids;
    const rowsOf = (rowids: number[]): Map<number, MemoryRow> => {
      const out = new Map<number, MemoryRow>();
      const own = rowids.filter((r) => r < 0).map((r) => -r);
      const base = this.store.byRowids(rowids.filter((r) => r > 0));
      for (const [k, v] of base) out.set(k, v);
      if (own.length) {
        const rows = stmt(
          this.db,
          // rowid lookups, not the branch's index (`+`: the branch id is only checked)
          `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid IN (SELECT value FROM json_each(?)) AND +m.branch_id = ?`,
        ).all(JSON.stringify(own), b.id) as MemoryRow[];
        for (const r of rows) out.set(-r.rowid, r);
      }
      return out;
    };
    return {
      exclude: shadowed,
      // The same rows for the base full-text arm, probed per candidate (a namespace deleted since is not the key's).
      excludeSql: { sql: `NOT (n.deleted_at IS NULL AND ${notShadowed(b.id).sql.slice(4)})`, params: [b.id] },
      fullText: (query, q) => {
        const words = branchMatch(query);
        if (!words) return [];
        const ns = scopeMatch(q.scope);
        if (ns === '') return [];
        const match = ns ? `(${words}) AND ns : (${ns})` : words;
        const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
        const rows = stmt(
          this.db,
          `SELECT m.rowid AS rowid, bm25(branch_fts, 4.0, 1.0, 0.5, 2.0, 0.0) AS bm FROM branch_fts f
             JOIN branch_memories m ON m.rowid = f.rowid JOIN branch_ns n ON n.rid = m.rowid
            WHERE branch_fts MATCH ? AND m.branch_id = ? AND ${where.sql} ORDER BY bm LIMIT ?`,
        ).all(match, b.id, ...where.params, q.limit) as { rowid: number; bm: number }[];
        return rows.map((r) => ({ rowid: -r.rowid, score: -r.bm }));
      },
      ...(vectors
        ? { vector: (query: string, q: ArmQuery, vector?: Promise<Float32Array | null>) => vectors.search(b.id, query, q, vector) }
        : {}),
      rows: rowsOf,
      rankFacts: (rowids) => {
        // Base rows: only the facts (Store.rankFacts); branch rows (negated rowids): whole rows, few per search.
        const out = new Map<number, { id: string; importance: number; confidence: number; updated_at: number }>(
          this.store.rankFacts(rowids.filter((r) => r > 0)),
        );
        for (const [k, r] of rowsOf(rowids.filter((r) => r < 0))) out.set(k, r);
        return out;
      },
    };
  }

  // ---------------------------------------------------------------- writes
  private checkWrite(b: BranchRow, namespace: string): void {
    if (!isUnder(namespace, b.root))
      throw new CairnError('InvalidParams', `namespace ${namespace} is outside branch ${b.name}'s root ${b.root}`, { field: 'namespace' });
  }

  /** memory/upsert on a branch: the Store's write rules, the row written on the branch. */
  upsert(p: UpsertParams & { branch: string }): UpsertResult {
    const problem = namespaceProblem(p.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    if (p.scope) {
      scopePredicate(p.scope);
      if (!pathInScope(p.namespace, p.scope))
        throw new CairnError('InvalidParams', `namespace ${p.namespace} is outside the given scope`, { field: 'namespace' });
    }
    if (p.supersedes !== undefined)
      throw new CairnError('InvalidParams', 'supersedes is not supported on a branch yet', { field: 'supersedes' });
    validateContent(p);
    return this.wrote(
      this.store.transaction(() => {
        const b = this.open(p.branch);
        this.checkWrite(b, p.namespace);
        const own = this.own(b.id, p.namespace, p.key);
        const base = own ? undefined : this.base(p.namespace, p.key);
        const existing: MemoryRow | undefined = own ?? base;
        const detail: Record<string, unknown> = {};
        const op = refuseDeleted(p, existing, detail);
        refuseStaleVersion(p, existing);
        const ns = stmt(this.db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(p.namespace) as
          { id: string } | undefined;
        if (ns)
          refuseRejected(
            p,
            findRejection(this.db, this.store.keys, ns.id, p.value, () => {}),
            detail,
          );
        const { next, warn } = mergeContent(p, existing, op, detail);
        if (existing && op === 'update' && sameContent(existing, next))
          return { memory: toMemory(existing), created: false, position: this.store.position(), changed: false, ...warn };
        const now = this.store.now();
        const cols = contentColumns(next, UNSTORED_VALUE_HASH, summaryOf(p.value));
        let rowid: number;
        if (own) {
          rowid = own.rowid;
          stmt(
            this.db,
            `UPDATE branch_memories SET value = ?, value_hash = ?, summary = ?, kind = ?, tags = ?, importance = ?, confidence = ?, source = ?,
             properties = ?, anchors = ?, valid_from = ?, valid_to = ?, expires_at = ?, status = ?, updated_at = ?, version = version + 1,
             deleted_at = NULL, deleted_by = NULL, delete_reason = NULL WHERE rowid = ?`,
          ).run(...cols, now, rowid);
        } else {
          rowid = Number(
            stmt(
              this.db,
              `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at, version)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            ).run(
              b.id,
              base?.version ?? null,
              p.namespace,
              base?.id ?? uuidv7(now),
              base?.ns_id ?? ns?.id ?? '',
              p.key,
              ...cols,
              base?.created_at ?? now,
              now,
              (base?.version ?? 0) + 1,
            ).lastInsertRowid,
          );
        }
        this.indexRow(rowid);
        this.touched(b.id);
        const row = stmt(this.db, `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid = ?`).get(rowid) as MemoryRow;
        const memory = toMemory(row);
        appendBranchHistory(this.db, {
          branchId: b.id,
          op: op === 'restore' ? 'restore' : existing ? 'update' : 'create',
          actor: p.actor ?? 'user',
          reason: p.reason,
          at: now,
          previous: existing ? toMemory(existing) : null,
          state: memory,
        });
        return { memory, created: !existing, position: this.store.position(), changed: true, ...warn };
      }),
    );
  }

  /** memory/delete on a branch: the branch's row of the memory is marked deleted (a base memory gets a deleted copy). */
  delete(p: DeleteParams & { branch: string }): WriteResult {
    return this.wrote(
      this.store.transaction(() => {
        const b = this.open(p.branch);
        const { own, base, field } = this.resolve(b, p);
        const row = own ?? base;
        if (!row)
          throw new CairnError('NotFound', `no memory ${p.id ?? `${p.namespace}/${p.key}`}${p.scope ? ' in scope' : ''}`, { field });
        this.checkWrite(b, row.ns_path);
        if (row.deleted_at !== null)
          throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
            field,
            deletedAt: iso(row.deleted_at),
            deletedBy: row.deleted_by,
          });
        const now = this.store.now();
        const actor = p.actor ?? 'user';
        let rowid: number;
        if (own) {
          rowid = own.rowid;
          stmt(
            this.db,
            'UPDATE branch_memories SET deleted_at = ?, deleted_by = ?, delete_reason = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
          ).run(now, actor, p.reason ?? null, now, rowid);
        } else {
          const r = base!;
          rowid = Number(
            stmt(
              this.db,
              `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at, version,
               deleted_at, deleted_by, delete_reason)
             SELECT ?, m.version, ?, m.id, m.ns_id, m.key, ${CONTENT.split(', ')
               .map((c) => `m.${c}`)
               .join(', ')}, m.created_at, ?, m.version + 1, ?, ?, ? FROM memories m WHERE m.rowid = ?`,
            ).run(b.id, r.ns_path, now, now, actor, p.reason ?? null, r.rowid).lastInsertRowid,
          );
        }
        this.indexRow(rowid);
        this.touched(b.id);
        const after = toMemory(stmt(this.db, `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid = ?`).get(rowid) as MemoryRow);
        appendBranchHistory(this.db, {
          branchId: b.id,
          op: 'delete',
          actor,
          reason: p.reason,
          at: now,
          previous: toMemory(row),
          state: after,
        });
        return { memory: after, position: this.store.position() };
      }),
    );
  }

  // ---------------------------------------------------------------- diff and merge
  diff(name: string): BranchDiffResult {
    const b = this.open(name, 'name');
    return { branch: this.toBranch(b), changes: this.changes(b) };
  }

  private changes(b: BranchRow): BranchChange[] {
    const rows = stmt(
      this.db,
      `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE m.branch_id = ? ORDER BY m.ns_path, m.key`,
    ).all(b.id) as OwnRow[];
    const out: BranchChange[] = [];
    for (const r of rows) {
      const base = this.base(r.ns_path, r.key);
      const baseLive = base && base.deleted_at === null;
      if (r.deleted_at !== null && r.base_version === null && !base) continue; // added and deleted on the branch: no change
      const change: BranchChange['change'] = r.deleted_at !== null ? 'deleted' : r.base_version === null ? 'added' : 'changed';
      const conflict = (base?.version ?? null) !== r.base_version && !(r.deleted_at !== null && base !== undefined && !baseLive);
      out.push({
        namespace: r.ns_path,
        key: r.key,
        change,
        baseVersion: r.base_version,
        base: base ? toMemory(base) : null,
        branch: toMemory(r),
        conflict,
      });
    }
    return out;
  }

  merge(p: BranchMergeParams): BranchMergeResult {
    const actor = p.actor ?? 'user';
    const reason = p.reason ? `merge of branch ${p.name}: ${p.reason}` : `merge of branch ${p.name}`;
    return this.store.transaction(() => {
      const b = this.open(p.name, 'name');
      const changes = this.changes(b);
      const k = (ns: string, key: string) => `${ns}\u0000${key}`;
      const decided = new Map((p.resolutions ?? []).map((r) => [k(r.namespace, r.key), r.take]));
      (p.resolutions ?? []).forEach((r, i) => {
        if (!changes.some((c) => c.namespace === r.namespace && c.key === r.key))
          throw new CairnError('InvalidParams', `branch ${p.name} has no change of ${r.namespace}/${r.key}`, {
            field: `resolutions[${i}]`,
          });
      });
      const open = changes.filter((c) => c.conflict && !decided.has(k(c.namespace, c.key)));
      if (open.length > 0) return { merged: false, applied: 0, conflicts: open, position: this.store.position() };
      let applied = 0;
      for (const c of changes) {
        const take = decided.get(k(c.namespace, c.key)) ?? 'branch';
        if (take === 'base') continue;
        const target = { namespace: c.namespace, key: c.key, actor, reason };
        if (take !== 'branch') {
          this.store.upsert({ ...target, ...take, restore: true });
        } else if (c.change === 'deleted') {
          if (!c.base || c.base.deletedAt !== null) continue;
          this.store.delete(target);
        } else {
          const m = c.branch;
          this.store.upsert({
            ...target,
            value: m.value,
            kind: m.kind,
            tags: m.tags,
            importance: m.importance,
            confidence: m.confidence,
            source: m.source,
            properties: m.properties,
            anchors: m.anchors,
            validFrom: m.validFrom,
            validTo: m.validTo,
            expiresAt: m.expiresAt,
            status: m.status === 'proposed' ? 'proposed' : 'active',
            restore: true,
          });
        }
        applied++;
      }
      this.drop(b.id);
      this.close(b.id, 'merged', actor);
      return { merged: true, applied, conflicts: [], position: this.store.position() };
    });
  }
}

export interface SearchOverlay {
  /** Base rowids the branch shadows: no base arm admits them. */
  exclude: Set<number>;
  /** The same base rows as SQL over aliases m, n (ArmQuery.excludeSql): what the base full-text arm leaves out. */
  excludeSql: SqlFragment;
  /** The branch rows' full-text arm (hit rowids negated). */
  fullText(query: string, q: ArmQuery): ArmHit[];
  /**
   * The branch rows' vector arm (hit rowids negated; store/branch-vectors.ts), when a model serves. `vector`: the
   * query's embedding the base arm got from the worker (null when it got none: the arm embeds the query itself).
   */
  vector?(query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]>;
  rows(rowids: number[]): Map<number, MemoryRow>;
  rankFacts(rowids: number[]): Map<number, { id: string; importance: number; confidence: number; updated_at: number }>;
}

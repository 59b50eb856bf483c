/** Agent tasks and the injection log: the SQL side of inject/block and inject/log. */
import { stmt } from './db';
import { CairnError } from '../protocol/errors';
import type { InjectLogEntry, InjectLogResult, Scope, Task, TaskCreateParams, TaskUpdateParams } from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { isoReq } from './rows';
import { scopePredicate } from './scope';
import type { Store } from './store';

interface TaskRow {
  id: string;
  title: string;
  scope: string;
  dont_inject: number;
  status: Task['status'];
  created_at: number;
  updated_at: number;
  branch: string | null;
}

const toTask = (r: TaskRow): Task => ({
  id: r.id,
  title: r.title,
  scope: JSON.parse(r.scope) as Scope,
  dontInject: r.dont_inject === 1,
  status: r.status,
  createdAt: isoReq(r.created_at),
  updatedAt: isoReq(r.updated_at),
  ...(r.branch ? { branch: r.branch } : {}),
});

/** A task row with the name of its open memory branch (store/branches.ts), if it has one. */
const TASK = `SELECT t.*, (SELECT b.name FROM branches b WHERE b.task_id = t.id AND b.status = 'open') AS branch FROM tasks t`;

export type TaskListener = (ev: { id: string; op: 'create' | 'update' | 'delete'; task: Task | null }) => void;

export class Tasks {
  private listeners = new Set<TaskListener>();
  constructor(private readonly store: Store) {}

  onChange(fn: TaskListener): void {
    this.listeners.add(fn);
  }
  private emit(ev: Parameters<TaskListener>[0]): void {
    for (const l of this.listeners) l(ev);
  }

  private checkScope(scope: Scope | undefined): void {
    scopePredicate(scope); // validates namespace names (InvalidNamespace naming the field)
  }

  create(p: TaskCreateParams): Task {
    this.checkScope(p.scope);
    const now = this.store.now();
    const id = uuidv7(now);
    this.store.transaction(() =>
      stmt(
        this.store.db,
        'INSERT INTO tasks(id, title, scope, dont_inject, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(id, p.title, JSON.stringify(p.scope ?? {}), p.dontInject ? 1 : 0, 'open', now, now),
    );
    const t = this.get(id);
    this.emit({ id, op: 'create', task: t });
    return t;
  }

  get(id: string): Task {
    const r = stmt(this.store.db, `${TASK} WHERE t.id = ?`).get(id) as TaskRow | undefined;
    if (!r) throw new CairnError('NotFound', `no task ${id}`, { field: 'id' });
    return toTask(r);
  }

  update(p: TaskUpdateParams): Task {
    this.checkScope(p.scope);
    const cur = this.get(p.id);
    const next = {
      ...cur,
      ...(p.title !== undefined ? { title: p.title } : {}),
      ...(p.scope !== undefined ? { scope: p.scope } : {}),
      ...(p.dontInject !== undefined ? { dontInject: p.dontInject } : {}),
      ...(p.status !== undefined ? { status: p.status } : {}),
    };
    this.store.transaction(() =>
      stmt(this.store.db, 'UPDATE tasks SET title = ?, scope = ?, dont_inject = ?, status = ?, updated_at = ? WHERE id = ?').run(
        next.title,
        JSON.stringify(next.scope),
        next.dontInject ? 1 : 0,
        next.status,
        this.store.now(),
        p.id,
      ),
    );
    const t = this.get(p.id);
    this.emit({ id: p.id, op: 'update', task: t });
    return t;
  }

  list(status?: Task['status'], limit = 200): Task[] {
    const rows = (
      status
        ? stmt(this.store.db, `${TASK} WHERE t.status = ? ORDER BY t.created_at DESC, t.id DESC LIMIT ?`).all(status, limit)
        : stmt(this.store.db, `${TASK} ORDER BY t.created_at DESC, t.id DESC LIMIT ?`).all(limit)
    ) as TaskRow[];
    return rows.map(toTask);
  }

  delete(id: string): { id: string; deleted: boolean } {
    this.get(id);
    this.store.transaction(() => stmt(this.store.db, 'DELETE FROM tasks WHERE id = ?').run(id));
    this.emit({ id, op: 'delete', task: null });
    return { id, deleted: true };
  }

  /** Record one inject/block call (also the skipped ones) and count the injected memories as accessed. */
  logInjection(
    taskId: string | null,
    memoryIds: string[],
    promptHash: string,
    skipped: string | null,
    eventPositions: number[] = [],
  ): number {
    const seq = this.store.transaction(() => {
      const s = Number(
        stmt(
          this.store.db,
          'INSERT INTO injections(task_id, memory_ids, prompt_hash, at, skipped, event_positions) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(taskId, JSON.stringify(memoryIds), promptHash, this.store.now(), skipped, JSON.stringify(eventPositions)).lastInsertRowid,
      );
      const ins = stmt(this.store.db, 'INSERT OR IGNORE INTO injection_members(injection_seq, memory_id) VALUES (?, ?)');
      for (const id of memoryIds) ins.run(s, id);
      return s;
    });
    if (memoryIds.length) {
      const rows = stmt(this.store.db, `SELECT rowid FROM memories WHERE id IN (${memoryIds.map(() => '?').join(',')})`).all(
        ...memoryIds,
      ) as { rowid: number }[];
      this.store.touch(rows.map((r) => r.rowid));
    }
    return seq;
  }

  log(p: { taskId?: string; memoryId?: string; limit?: number }): InjectLogResult {
    const where: string[] = [];
    const params: unknown[] = [];
    if (p.taskId) {
      where.push('i.task_id = ?');
      params.push(p.taskId);
    }
    if (p.memoryId) {
      where.push('EXISTS (SELECT 1 FROM injection_members im WHERE im.injection_seq = i.seq AND im.memory_id = ?)');
      params.push(p.memoryId);
    }
    const rows = stmt(
      this.store.db,
      `SELECT * FROM injections i ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY seq DESC LIMIT ?`,
    ).all(...params, p.limit ?? 100) as {
      seq: number;
      task_id: string | null;
      memory_ids: string;
      prompt_hash: string;
      at: number;
      skipped: string | null;
      event_positions: string;
    }[];
    const entries: InjectLogEntry[] = rows.map((r) => ({
      seq: r.seq,
      taskId: r.task_id,
      memoryIds: JSON.parse(r.memory_ids),
      promptHash: r.prompt_hash,
      at: isoReq(r.at),
      skipped: r.skipped as InjectLogEntry['skipped'],
      eventPositions: JSON.parse(r.event_positions) as number[],
    }));
    const usedBy = p.memoryId
      ? (
          stmt(
            this.store.db,
            `SELECT i.task_id AS taskId, t.title AS title, count(*) AS count, max(i.at) AS lastAt FROM injection_members im JOIN injections i ON i.seq = im.injection_seq
             LEFT JOIN tasks t ON t.id = i.task_id WHERE im.memory_id = ? AND i.task_id IS NOT NULL GROUP BY i.task_id ORDER BY lastAt DESC`,
          ).all(p.memoryId) as { taskId: string; title: string | null; count: number; lastAt: number }[]
        ).map((u) => ({ ...u, lastAt: isoReq(u.lastAt) }))
      : [];
    return { entries, usedBy };
  }

  injectAuto(): boolean {
    const r = stmt(this.store.db, `SELECT value FROM meta WHERE key = 'inject_auto'`).get() as { value: string } | undefined;
    return r?.value === '1';
  }

  setInjectAuto(on: boolean): void {
    this.store.transaction(() =>
      stmt(
        this.store.db,
        `INSERT INTO meta(key, value) VALUES ('inject_auto', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      ).run(on ? '1' : '0'),
    );
  }
}

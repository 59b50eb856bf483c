/**
 * Paged export (store/exportPage): each export is a session reading one snapshot with its own ExportWalker
 * (portable-export.ts), named by the cursor its pages return.
 */
import { openDatabase, type DB } from './db';
import { CairnError } from '../protocol/errors';
import { type ExportPageParams, type ExportPageResult, type ExportRecord } from '../protocol/types';
import type { Store } from './store';
import { uuidv7 } from '../text/hash';
import { ExportWalker } from './portable-export';

/** Work for one store/exportPage page: pages end early when reading is slow (the reply's serialization adds about as much). */
const PAGE_MS = 40;

/**
 * Paged export over a snapshot: the first page opens a read-only connection in
 * a read transaction, so every later page sees the store as it was when the
 * export began while the daemon keeps writing (WAL). The cursor names the
 * session; sessions idle for a minute are closed.
 */
interface Session {
  id: string;
  db: DB;
  walker: ExportWalker;
  timer: NodeJS.Timeout;
}
const sessions = new Map<string, Session>();
const SESSION_IDLE_MS = 60_000;
const MAX_SESSIONS = 8;

function closeSession(s: Session): void {
  clearTimeout(s.timer);
  sessions.delete(s.id);
  try {
    if (s.db.inTransaction) s.db.exec('COMMIT');
    s.db.close();
  } catch {
    /* already closed */
  }
}

function touch(s: Session): void {
  clearTimeout(s.timer);
  s.timer = setTimeout(() => closeSession(s), SESSION_IDLE_MS);
  s.timer.unref();
}

export function exportPage(store: Store, p: ExportPageParams): ExportPageResult {
  const limit = p.limit ?? 2000;
  let s: Session | undefined;
  if (p.cursor !== undefined) {
    const id = Buffer.from(p.cursor, 'base64url').toString('utf8');
    s = sessions.get(id);
    if (!s)
      throw new CairnError('InvalidState', 'this export cursor has expired or was never issued; start the export again', {
        field: 'cursor',
      });
  } else {
    if (sessions.size >= MAX_SESSIONS) {
      const oldest = sessions.values().next().value as Session;
      closeSession(oldest);
    }
    let db: DB;
    if (store.path === ':memory:') db = store.db;
    else {
      db = openDatabase(store.path, { readonly: true, loadVec: false }).db;
      db.exec('BEGIN');
    }
    const id = uuidv7(store.now());
    s = {
      id,
      db,
      walker: new ExportWalker(db, { scope: p.scope, includeHistory: p.includeHistory }, store.schemaVersion, store.now()),
      timer: setTimeout(() => {}, 0),
    };
    sessions.set(id, s);
  }
  touch(s);
  let records: ExportRecord[];
  try {
    records = s.walker.page(limit, 4 * 1024 * 1024, PAGE_MS);
  } catch (e) {
    closeSession(s);
    throw e;
  }
  const finished = s.walker.finished;
  const progress = { memories: s.walker.done, total: s.walker.total };
  if (finished) closeSession(s);
  return { records, nextCursor: finished ? null : Buffer.from(s.id).toString('base64url'), progress };
}

/** Close every export session (daemon stop). */
export function closeExportSessions(): void {
  for (const s of [...sessions.values()]) closeSession(s);
}

/**
 * Schema: numbered migrations recorded in PRAGMA user_version, then invariants
 * (indexes, the FTS table's shape, index-state rows) re-asserted idempotently at
 * every open, so a database left by an interrupted or older build heals itself.
 */
import type { DB } from './db';
import { indexAllBranchRows } from './branch-text';
import { toRowValueForm } from './history-codec';
import { assertEventInvariants } from './events-search';
import { ensureMemoryCounts } from './memory-counts';
import { ensureRemovedEvents } from './removed-events';
import { hashKey, quantize } from './quantize';

interface Migration {
  version: number;
  description: string;
  up(db: DB): void;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    description: 'namespaces, memories, history, links, rejected values, change log, full-text index',
    up(db) {
      db.exec(`
        CREATE TABLE namespaces (
          id TEXT PRIMARY KEY,
          path TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          deleted_at INTEGER,
          deleted_by TEXT,
          delete_reason TEXT
        );
        CREATE TABLE memories (
          rowid INTEGER PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          ns_id TEXT NOT NULL REFERENCES namespaces(id),
          key TEXT NOT NULL,
          value TEXT NOT NULL,
          value_hash TEXT NOT NULL,
          summary TEXT,
          kind TEXT NOT NULL,
          tags TEXT NOT NULL DEFAULT '[]',
          importance REAL NOT NULL,
          confidence REAL NOT NULL,
          source TEXT NOT NULL,
          properties TEXT NOT NULL DEFAULT '{}',
          anchors TEXT NOT NULL DEFAULT '[]',
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          valid_from INTEGER,
          valid_to INTEGER,
          expires_at INTEGER,
          last_accessed_at INTEGER,
          access_count INTEGER NOT NULL DEFAULT 0,
          version INTEGER NOT NULL,
          status TEXT NOT NULL,
          superseded_by TEXT,
          deleted_at INTEGER,
          deleted_by TEXT,
          delete_reason TEXT,
          UNIQUE (ns_id, key)
        );
        CREATE TABLE anchors (
          memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
          idx INTEGER NOT NULL,
          path TEXT NOT NULL,
          symbol TEXT,
          start_line INTEGER,
          end_line INTEGER,
          stale INTEGER NOT NULL DEFAULT 0,
          PRIMARY KEY (memory_rowid, idx)
        );
        CREATE TABLE history (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          memory_id TEXT NOT NULL,
          op TEXT NOT NULL,
          actor TEXT NOT NULL,
          reason TEXT,
          at INTEGER NOT NULL,
          version INTEGER NOT NULL,
          previous TEXT,
          state TEXT,
          detail TEXT
        );
        CREATE TABLE links (
          src TEXT NOT NULL,
          dst TEXT NOT NULL,
          type TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          actor TEXT NOT NULL,
          PRIMARY KEY (src, dst, type)
        );
        CREATE TABLE rejected_values (
          ns_id TEXT NOT NULL,
          value_hash TEXT NOT NULL,
          memory_id TEXT,
          actor TEXT NOT NULL,
          at INTEGER NOT NULL,
          PRIMARY KEY (ns_id, value_hash)
        );
        CREATE TABLE changes (
          position INTEGER PRIMARY KEY AUTOINCREMENT,
          memory_id TEXT,
          ns_id TEXT,
          op TEXT NOT NULL,
          at INTEGER NOT NULL
        );
        CREATE TABLE index_state (
          name TEXT PRIMARY KEY,
          watermark INTEGER NOT NULL DEFAULT 0,
          model TEXT,
          dimension INTEGER
        );
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
      `);
    },
  },
  {
    version: 2,
    description: 'per-model vector tables, agent tasks and the injection log',
    up(db) {
      db.exec(`
        CREATE TABLE vec_models (
          model TEXT PRIMARY KEY,
          dimension INTEGER NOT NULL,
          table_name TEXT NOT NULL UNIQUE,
          created_at INTEGER NOT NULL
        );
        CREATE TABLE tasks (
          id TEXT PRIMARY KEY,
          title TEXT NOT NULL,
          scope TEXT NOT NULL DEFAULT '{}',
          dont_inject INTEGER NOT NULL DEFAULT 0,
          status TEXT NOT NULL DEFAULT 'open',
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        );
        CREATE TABLE injections (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          task_id TEXT,
          memory_ids TEXT NOT NULL,
          prompt_hash TEXT NOT NULL,
          at INTEGER NOT NULL,
          skipped TEXT
        );
        CREATE TABLE injection_members (
          injection_seq INTEGER NOT NULL REFERENCES injections(seq) ON DELETE CASCADE,
          memory_id TEXT NOT NULL,
          PRIMARY KEY (injection_seq, memory_id)
        );
      `);
    },
  },
  {
    version: 3,
    description:
      'each vector stored once (int8 + SimHash, vq_N) instead of a vec0 index plus a float copy; possible duplicates found by the indexer',
    up(db) {
      const models = db.prepare('SELECT model, dimension, table_name FROM vec_models').all() as {
        model: string;
        dimension: number;
        table_name: string;
      }[];
      for (const m of models) {
        const n = Number(m.table_name.slice(4));
        const table = `vq_${n}`;
        db.exec(`CREATE TABLE ${table} (rowid INTEGER PRIMARY KEY, q BLOB NOT NULL, sig BLOB NOT NULL, text_hash INTEGER NOT NULL)`);
        const ins = db.prepare(`INSERT INTO ${table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, ?)`);
        const page = db.prepare(`SELECT rowid, embedding, text_hash FROM vecb_${n} WHERE rowid > ? ORDER BY rowid LIMIT 5000`);
        for (let after = 0; ;) {
          const rows = page.all(after) as { rowid: number; embedding: Buffer; text_hash: string }[];
          if (rows.length === 0) break;
          for (const r of rows) {
            const z = quantize(
              new Float32Array(r.embedding.buffer.slice(r.embedding.byteOffset, r.embedding.byteOffset + r.embedding.byteLength)),
            );
            ins.run(r.rowid, Buffer.from(z.q.buffer), Buffer.from(z.sig.buffer), hashKey(r.text_hash));
          }
          after = rows[rows.length - 1].rowid;
        }
        db.exec(`DROP TABLE vecb_${n}`);
        db.prepare('UPDATE vec_models SET table_name = ? WHERE model = ?').run(table, m.model);
      }
      // No query reads memories by value hash (forgotten values live in rejected_values): the index only cost space.
      db.exec('DROP INDEX IF EXISTS memories_hash');
      // The vec0 tables (vec_N) are dropped by assertInvariants when sqlite-vec is loaded (dropping one needs the module).
      db.exec(`
        CREATE TABLE duplicate_candidates (
          memory_rowid INTEGER NOT NULL,
          other_rowid INTEGER NOT NULL,
          similarity REAL NOT NULL,
          version INTEGER NOT NULL,
          PRIMARY KEY (memory_rowid, other_rowid)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 4,
    description: "history states whose value is their memory row's value read it from the row instead of storing it again",
    up(db) {
      // The table is written anew (in seq order, paged so a large store never holds its history in memory) rather than
      // updated in place: shrinking rows in place would leave the space they gave up stranded inside history's pages;
      // this way the old pages are free pages any table reuses. Only compact states (`$: 2`) holding exactly the row's
      // value change form; the new form decodes to the same memory (history-codec.ts). Every column else is copied.
      const seqBefore = db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'history'`).get() as { seq: number } | undefined;
      db.exec(`
        CREATE TABLE history_v4 (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          memory_id TEXT NOT NULL,
          op TEXT NOT NULL,
          actor TEXT NOT NULL,
          reason TEXT,
          at INTEGER NOT NULL,
          version INTEGER NOT NULL,
          previous TEXT,
          state TEXT,
          detail TEXT
        );
      `);
      const page = db.prepare(
        `SELECT h.seq, h.memory_id, h.op, h.actor, h.reason, h.at, h.version, h.previous, h.state, h.detail,
                (SELECT m.value FROM memories m WHERE m.id = h.memory_id) AS row_value
           FROM history h WHERE h.seq > ? ORDER BY h.seq LIMIT 2000`,
      );
      const put = db.prepare(
        'INSERT INTO history_v4(seq, memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      );
      type Row = { seq: number; memory_id: string; op: string; actor: string; reason: string | null; at: number; version: number };
      for (let after = 0; ;) {
        const rows = page.all(after) as (Row & {
          previous: string | null;
          state: string | null;
          detail: string | null;
          row_value: string | null;
        })[];
        if (rows.length === 0) break;
        for (const r of rows) {
          const state = r.state !== null && r.row_value !== null ? (toRowValueForm(r.state, r.row_value) ?? r.state) : r.state;
          put.run(r.seq, r.memory_id, r.op, r.actor, r.reason, r.at, r.version, r.previous, state, r.detail);
        }
        after = rows[rows.length - 1].seq;
      }
      db.exec('DROP TABLE history; ALTER TABLE history_v4 RENAME TO history');
      // AUTOINCREMENT never reuses a seq, even of rows since removed (a history cap, retention): keep the high mark.
      db.exec(`DELETE FROM sqlite_sequence WHERE name IN ('history', 'history_v4')`);
      const top = db.prepare('SELECT max(seq) AS seq FROM history').get() as { seq: number | null };
      const mark = Math.max(seqBefore?.seq ?? 0, top.seq ?? 0);
      if (mark > 0) db.prepare(`INSERT INTO sqlite_sequence(name, seq) VALUES ('history', ?)`).run(mark);
    },
  },
  {
    version: 5,
    description: 'possible duplicates without the index by the other memory (only purge and erase looked there)',
    up(db) {
      // 5.8 MiB at 100k. Rows naming a removed memory are dropped at read; Store.forgetDuplicatesOf covers rowid reuse.
      db.exec('DROP INDEX IF EXISTS duplicate_candidates_other');
    },
  },
  {
    version: 6,
    description: 'episodic memory: episodes, their append-only events in one total order, and event vectors (store/episodes.ts)',
    up(db) {
      // events.pos is the store-wide total order of events (never reused: AUTOINCREMENT); (episode, seq) is the
      // client's sequence number, unique so a retried append never duplicates. Context parts are one JSON column.
      db.exec(`
        CREATE TABLE episodes (
          rowid INTEGER PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          ns_id TEXT NOT NULL REFERENCES namespaces(id),
          title TEXT NOT NULL,
          task_id TEXT,
          source TEXT NOT NULL,
          branch TEXT,
          git_commit TEXT,
          started_at INTEGER NOT NULL,
          ended_at INTEGER,
          created_at INTEGER NOT NULL,
          actor TEXT NOT NULL
        );
        CREATE TABLE events (
          pos INTEGER PRIMARY KEY AUTOINCREMENT,
          episode INTEGER NOT NULL REFERENCES episodes(rowid),
          seq INTEGER NOT NULL,
          kind TEXT NOT NULL,
          text TEXT NOT NULL,
          at INTEGER NOT NULL,
          actor TEXT NOT NULL,
          context TEXT,
          secret INTEGER NOT NULL DEFAULT 0,
          ingested_at INTEGER NOT NULL,
          UNIQUE (episode, seq)
        );
        CREATE TABLE event_vectors (
          pos INTEGER PRIMARY KEY,
          q BLOB NOT NULL,
          inv REAL NOT NULL
        );
      `);
    },
  },
  {
    version: 7,
    description: 'memory branches: copy-on-write overlays of a namespace subtree (branches, branch_memories, branch_fts)',
    up(db) {
      // A branch is one row (O(1) to create: nothing is copied). Its writes are whole memory rows, keyed by
      // (branch, namespace path, key), over the base; `base_version` is the base memory's version when the branch
      // first wrote the key (null: the base had none), what merge compares to find conflicts. branch_ns lets the
      // store's scope, filter and visibility SQL (aliases m, n) run over branch rows unchanged.
      db.exec(`
        CREATE TABLE branches (
          id TEXT PRIMARY KEY,
          name TEXT NOT NULL,
          root TEXT NOT NULL,
          parent TEXT,
          fork_position INTEGER NOT NULL,
          created_at INTEGER NOT NULL,
          created_by TEXT NOT NULL,
          status TEXT NOT NULL DEFAULT 'open',
          closed_at INTEGER,
          closed_by TEXT,
          task_id TEXT,
          generation INTEGER NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX branches_open_name ON branches(name) WHERE status = 'open';
        CREATE TABLE branch_memories (
          rowid INTEGER PRIMARY KEY,
          branch_id TEXT NOT NULL REFERENCES branches(id) ON DELETE CASCADE,
          base_version INTEGER,
          ns_path TEXT NOT NULL,
          id TEXT NOT NULL,
          ns_id TEXT NOT NULL,
          key TEXT NOT NULL,
          value TEXT NOT NULL,
          value_hash TEXT NOT NULL,
          summary TEXT,
          kind TEXT NOT NULL,
          tags TEXT NOT NULL DEFAULT '[]',
          importance REAL NOT NULL,
          confidence REAL NOT NULL,
          source TEXT NOT NULL,
          properties TEXT NOT NULL DEFAULT '{}',
          anchors TEXT NOT NULL DEFAULT '[]',
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          valid_from INTEGER,
          valid_to INTEGER,
          expires_at INTEGER,
          last_accessed_at INTEGER,
          access_count INTEGER NOT NULL DEFAULT 0,
          version INTEGER NOT NULL,
          status TEXT NOT NULL,
          superseded_by TEXT,
          deleted_at INTEGER,
          deleted_by TEXT,
          delete_reason TEXT,
          UNIQUE (branch_id, ns_path, key)
        );
        CREATE INDEX branch_memories_id ON branch_memories(id, branch_id);
        CREATE VIEW branch_ns AS SELECT rowid AS rid, ns_path AS path, NULL AS deleted_at FROM branch_memories;
        CREATE VIRTUAL TABLE branch_fts USING fts5(key, value, summary, tags, ns, tokenize='porter unicode61 remove_diacritics 2');
      `);
    },
  },
  {
    version: 8,
    description: 'git-aware memory: the git branch and commit of each memory version, branch tips seen, branches marked merged',
    up(db) {
      // memory_git: where each version was written (memories/upsert `git`); git visibility reads the current
      // version's row (store/git-visibility.ts). Branch names and commit ids only, no content; a purge cascades.
      // git_tips: the last commit seen checked out on each git branch (from writes and readers' HEADs), so a branch
      // deleted after its merge is still recognised. git_merged: branches marked merged (`cairn branch merged`).
      db.exec(`
        CREATE TABLE memory_git (
          memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
          version INTEGER NOT NULL,
          branch TEXT NOT NULL,
          commit_id TEXT NOT NULL,
          PRIMARY KEY (memory_id, version)
        ) WITHOUT ROWID;
        CREATE TABLE git_tips (
          branch TEXT PRIMARY KEY,
          tip TEXT NOT NULL,
          seen_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE git_merged (
          branch TEXT PRIMARY KEY,
          marked_at INTEGER NOT NULL,
          marked_by TEXT NOT NULL
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 9,
    description: 'episodic data: the log of removed events (episode_removals) and the events each injection added',
    up(db) {
      // What erase and retention removed from the event log: counts and ids only, never text (store/episode-log.ts).
      db.exec(`
        CREATE TABLE episode_removals (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          op TEXT NOT NULL,
          episode_id TEXT NOT NULL,
          namespace TEXT NOT NULL,
          events INTEGER NOT NULL,
          actor TEXT NOT NULL,
          reason TEXT,
          at INTEGER NOT NULL,
          detail TEXT
        );
        ALTER TABLE injections ADD COLUMN event_positions TEXT NOT NULL DEFAULT '[]';
      `);
    },
  },
  {
    version: 10,
    description: 'memory branches that follow a git branch (branch/create gitBranch; store/branch-git.ts)',
    up(db) {
      // git_branch: the git branch the memory branch follows; git_repo: its repository (null: any); git_commit: the
      // commit its tip was at when bound (it must move past it to count as merged); git_conflicts: set when the git
      // branch was found merged but the memory merge has that many conflicts.
      db.exec(`
        ALTER TABLE branches ADD COLUMN git_branch TEXT;
        ALTER TABLE branches ADD COLUMN git_repo TEXT;
        ALTER TABLE branches ADD COLUMN git_commit TEXT;
        ALTER TABLE branches ADD COLUMN git_conflicts INTEGER;
      `);
    },
  },
  {
    version: 11,
    description: 'memory branches: vectors of branch rows, the history of branch writes (branch_vectors, branch_history)',
    up(db) {
      // branch_vectors: one unit vector (float32) per branch row for the model that computed it, scored exactly on a
      // branch's search (store/branch-vectors.ts); a row whose key, value or tags change loses it (trigger) and is
      // embedded again; a removed row takes it along (cascade). branch_history: each write on a branch (upsert,
      // delete, restore) with actor, reason and the states before and after, kept apart from the base's history
      // (its rows share the base memory's id); it outlives the branch's merge or discard, erase removes it.
      db.exec(`
        CREATE TABLE branch_vectors (
          rowid INTEGER PRIMARY KEY REFERENCES branch_memories(rowid) ON DELETE CASCADE,
          model TEXT NOT NULL,
          v BLOB NOT NULL
        );
        CREATE TRIGGER branch_vectors_stale AFTER UPDATE OF key, value, tags ON branch_memories
          WHEN OLD.key IS NOT NEW.key OR OLD.value IS NOT NEW.value OR OLD.tags IS NOT NEW.tags
          BEGIN DELETE FROM branch_vectors WHERE rowid = NEW.rowid; END;
        CREATE TABLE branch_history (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          branch_id TEXT NOT NULL,
          memory_id TEXT NOT NULL,
          ns_path TEXT NOT NULL,
          key TEXT NOT NULL,
          op TEXT NOT NULL,
          actor TEXT NOT NULL,
          reason TEXT,
          at INTEGER NOT NULL,
          version INTEGER NOT NULL,
          previous TEXT,
          state TEXT
        );
        CREATE INDEX branch_history_memory ON branch_history(branch_id, memory_id, seq);
        CREATE INDEX branch_history_key ON branch_history(ns_path, key);
      `);
    },
  },
  {
    version: 12,
    description: "memory branches: branch rows indexed in the memories' full-text index (branch_fts dropped)",
    up(db) {
      // Each branch row's text moves into memories_fts under its negated rowid and a namespace token of its branch
      // (store/branch-text.ts), so a search on a branch is one full-text query with the base's rows. Only the branch
      // rows are indexed here: the memories' own rows are unchanged, so a large store is not re-indexed at open.
      // Should the index not take them (an index of another shape, dropped and rebuilt whole after the migrations),
      // the rebuild at open indexes them (watermark 0: FullText.heal).
      db.exec('DROP TABLE IF EXISTS branch_fts');
      try {
        indexAllBranchRows(db);
      } catch {
        db.prepare(`UPDATE index_state SET watermark = 0 WHERE name = 'fts'`).run();
      }
    },
  },
  {
    version: 13,
    description: 'centred signatures: what the SimHashes of a vector table are centred on, fixed when the table is made',
    up(db) {
      // NULL for the tables that exist: their signatures stay as they were computed (plain), so nothing is re-signed
      // at open; a table made from now on (a new store, a model switch) records its centre (quantize.ts signatureInput).
      db.exec('ALTER TABLE vec_models ADD COLUMN centre BLOB');
    },
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** Columns the FTS table must have, in order; a table of another shape is rebuilt. */
export const FTS_COLUMNS = ['key', 'value', 'summary', 'tags', 'idents', 'ns'];
/**
 * What the FTS rows hold (meta `fts_format`); an index written in another format is rebuilt from the memories when
 * the store opens. 3: the key and `idents` columns also hold each identifier's joined form (identifierCompounds, kebab-case
 * included), which a query word that is an identifier matches (search-fts.ts); 2: `idents` only, no kebab-case;
 * 1 (no meta row): parts only.
 */
export const FTS_FORMAT = '3';

/** Apply pending migrations, then re-assert invariants. Returns the schema version. */
export function migrate(db: DB, opts: { vec: boolean }, upTo: number = SCHEMA_VERSION): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new Error(`store schema version ${current} is newer than this Cairn build supports (${SCHEMA_VERSION}); upgrade Cairn`);
  }
  for (const m of MIGRATIONS) {
    if (m.version <= current || m.version > upTo) continue;
    db.transaction(() => {
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
  db.transaction(() => assertInvariants(db, opts, Math.min(upTo, SCHEMA_VERSION))).immediate();
  return db.pragma('user_version', { simple: true }) as number;
}

function assertInvariants(db: DB, _opts: { vec: boolean }, version: number): void {
  db.exec(`
    CREATE UNIQUE INDEX IF NOT EXISTS namespaces_live_path ON namespaces(path) WHERE deleted_at IS NULL;
    CREATE INDEX IF NOT EXISTS namespaces_path ON namespaces(path);
    CREATE INDEX IF NOT EXISTS memories_ns ON memories(ns_id, updated_at);
    CREATE INDEX IF NOT EXISTS memories_updated ON memories(updated_at, rowid);
    CREATE INDEX IF NOT EXISTS memories_expires ON memories(expires_at) WHERE expires_at IS NOT NULL AND deleted_at IS NULL;
    CREATE INDEX IF NOT EXISTS anchors_path ON anchors(path);
    CREATE INDEX IF NOT EXISTS history_memory ON history(memory_id, seq);
    -- The writes of the last days (the dashboard's overview, store/overview.ts), without a scan of the history.
    CREATE INDEX IF NOT EXISTS history_writes_at ON history(at) WHERE op IN ('create', 'update', 'restore');
    CREATE INDEX IF NOT EXISTS links_dst ON links(dst);
    INSERT OR IGNORE INTO index_state(name, watermark) VALUES ('fts', 0);
  `);
  if (version >= 2) {
    db.exec(`
      CREATE INDEX IF NOT EXISTS injections_task ON injections(task_id, seq);
      CREATE INDEX IF NOT EXISTS injection_members_memory ON injection_members(memory_id);
    `);
  }
  // The FTS table: create it if missing, rebuild it if its shape is wrong.
  const row = db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'memories_fts'`).get() as { sql: string } | undefined;
  const wanted = `CREATE VIRTUAL TABLE memories_fts USING fts5(${FTS_COLUMNS.join(', ')}, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')`;
  const format = db.prepare(`SELECT value FROM meta WHERE key = 'fts_format'`).get() as { value: string } | undefined;
  if (!row || row.sql !== wanted || format?.value !== FTS_FORMAT) {
    if (row) db.exec('DROP TABLE memories_fts'); // the store's open rebuilds it from the memories (FullText.heal, full-text.ts)
    db.exec(wanted);
    db.prepare(`UPDATE index_state SET watermark = 0 WHERE name = 'fts'`).run();
    db.prepare(`INSERT INTO meta(key, value) VALUES ('fts_format', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(
      FTS_FORMAT,
    );
  }
  if (version >= 3) {
    if (version < 5) db.exec('CREATE INDEX IF NOT EXISTS duplicate_candidates_other ON duplicate_candidates(other_rowid)');
    // vec0 tables left by schema 2 (dropping a virtual table needs its module, so this waits for sqlite-vec).
    const hasVec0 = !!db.prepare(`SELECT 1 FROM pragma_module_list WHERE name = 'vec0'`).get();
    const stale = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vec_[0-9]*' AND sql LIKE 'CREATE VIRTUAL TABLE%'`)
      .all() as { name: string }[];
    if (hasVec0) for (const t of stale) db.exec(`DROP TABLE IF EXISTS "${t.name}"`);
  }
  if (version >= 6) assertEventInvariants(db);
  if (version >= 6) ensureRemovedEvents(db);
  ensureMemoryCounts(db);
  // Document frequencies of (stemmed) terms, the fast path of full-text query planning (see search-fts.ts).
  db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts_vocab USING fts5vocab(memories_fts, 'row')`);
}

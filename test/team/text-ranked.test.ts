/**
 * cairn.text_matches ranking inside (schema v12, store/pg/text-matches.ts): with the arm's limit, time and ranking
 * weights the function returns only the matches that can still be in the arm's answer, and the arm's answer is the
 * same, order and scores included, as when every match is handed over (`allMatches`): for one-term, every-term and
 * two-tier passes, whole store, subtree and exact-namespace scopes, limits from 1 to more than there are matches, with
 * expired, superseded, proposed, deleted, not-yet-valid and no-longer-valid memories and ties at every cut. A scope's
 * walk reads the scope-text indexes, its long tsvectors (no btree entry) included, and a memory too long for the
 * covering index is written and found like any other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { ftsArm, TEAM_MAX_TERMS } from '../../daemon/src/store/pg/search';
import { SCOPE_TEXT_INDEX, SCOPE_TEXT_LONG_INDEX, SCOPE_TEXT_MAX } from '../../daemon/src/store/pg/text-matches';
import { ownerFixture, sessionConfig, startPg, type PgServer } from './pg-server';

const NOW = 1_800_000_000_000;
const WEIGHTS = '{0.125, 0.25, 0.5, 1.0}';

describe('team memory: the full-text arm ranked inside cairn.text_matches', () => {
  let pg0: PgServer;
  let db: string;
  let alice: PgBackend;

  before(async () => {
    pg0 = await startPg();
    db = await pg0.createDatabase();
    await pg0.createRole('alice');
    await pg0.grant(db, 'alice', 'team', 'write');
    await pg0.grant(db, 'alice', 'user', 'write'); // a user tree in the database: it ranks after the scope's own on ties
    alice = await new PgBackend({ url: pg0.url('alice', db), poolSize: 2 }).open();
    for (const ns of ['team.r', 'team.r.sub', 'team.x', 'user.x']) await alice.upsert({ namespace: ns, key: 'seed', value: 'seed row' });
    const owner = pg0.admin(db);
    const ids = new Map(
      (await owner.query<{ id: string; path: string }>(`SELECT id, path FROM cairn.namespaces`)).rows.map((r) => [r.path, r.id]),
    );
    // 600 memories over team.r (180), team.r.sub (60), user.x (60) and team.x (300): "alpha" repeated 1-7 times (many
    // equal ranks), "beta" in a third, "gamma..." words in a fifth, the term in the key now and then (weight A), and
    // every state the arm must leave out, on rows whose rank would otherwise put them first.
    await ownerFixture(owner, (c) =>
      c.query(
        `INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties, anchors,
           created_at, updated_at, version, status, expires_at, valid_from, valid_to, deleted_at, fts)
         SELECT 'r-' || i, CASE WHEN i % 10 = 1 THEN $2 WHEN i % 10 IN (0, 2, 3) THEN $1 WHEN i % 10 = 4 THEN $4 ELSE $3 END, k, v, '', 'fact', '[]', 0.5, 0.5, 'sql', '{}', '[]',
           0, i % 5, 1,
           CASE WHEN i % 13 = 0 THEN 'superseded' WHEN i % 17 = 0 THEN 'proposed' ELSE 'active' END,
           CASE WHEN i % 11 = 0 THEN ${NOW - 1} END, CASE WHEN i % 23 = 0 THEN ${NOW + 1} END,
           CASE WHEN i % 19 = 0 THEN ${NOW} END, CASE WHEN i % 29 = 0 THEN 1 END,
           setweight(to_tsvector('english', k), 'A') || setweight(to_tsvector('english', v), 'C')
         FROM (SELECT i, CASE WHEN i % 31 = 0 THEN 'alpha key ' || i ELSE 'k' || i END AS k,
                 repeat('alpha ', 1 + i % 7) || CASE WHEN i % 3 = 0 THEN 'beta ' ELSE '' END
                   || CASE WHEN i % 5 = 0 THEN 'gammaray ' ELSE 'filler ' END || 'note' AS v
               FROM generate_series(1, 600) i) x`,
        [ids.get('team.r'), ids.get('team.r.sub'), ids.get('team.x'), ids.get('user.x')],
      ),
    );
    // Long memories through the product's own write path: tsvectors too long for the covering index, one in the
    // narrow scope.
    const words = Array.from({ length: 400 }, (_, i) => `word${i.toString(36)}x`).join(' ');
    await alice.upsert({ namespace: 'team.r.sub', key: 'alpha long', value: `alpha alpha alpha beta ${words}` });
    await alice.upsert({ namespace: 'team.x', key: 'long elsewhere', value: `alpha ${words}` });
    await owner.query('VACUUM ANALYZE cairn.memories');
  });
  /** A plain SQL session as alice (no Cairn code); the caller ends it. */
  async function member(): Promise<pg.Client> {
    const c = new pg.Client(sessionConfig(pg0.url('alice', db)));
    await c.connect();
    return c;
  }
  after(async () => {
    await alice?.close();
    await pg0?.stop();
  });

  it('builds the scope-text indexes, and the long memory has no entry in the covering one', async () => {
    const owner = pg0.admin(db);
    const valid = (
      await owner.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE c.relname IN ($1, $2) AND i.indisvalid ORDER BY 1`,
        [SCOPE_TEXT_INDEX, SCOPE_TEXT_LONG_INDEX],
      )
    ).rows.map((r) => r.name);
    assert.deepEqual(valid, [SCOPE_TEXT_INDEX, SCOPE_TEXT_LONG_INDEX]);
    const long = (await owner.query<{ n: number }>(`SELECT octet_length(fts::text) AS n FROM cairn.memories WHERE key = 'alpha long'`))
      .rows[0].n;
    assert.ok(long > SCOPE_TEXT_MAX, `the long memory's tsvector is ${long} characters`);
  });

  it('gives the same answer as ranking every match, for every pass, scope and limit', async () => {
    const scopes = [
      undefined,
      { root: 'team.r', includeUser: false },
      { namespaces: ['team.r.sub'], includeUser: false },
      { namespaces: ['team.r', 'team.x'], includeUser: false },
      { root: 'team.r' }, // and the user tree (ranked after team.r's on ties)
      { namespaces: ['team.r.sub', 'user.x'] }, // the user tree named as the scope's own too
    ];
    let compared = 0;
    let nonEmpty = 0;
    for (const text of ['alpha', 'alpha beta', 'beta alpha gam', 'gammaray note', 'nothingmatches'])
      for (const scope of scopes)
        for (const limit of [1, 2, 7, 40, 1000]) {
          const ranked = await ftsArm(alice, text, { scope, limit, now: NOW });
          const all = await ftsArm(alice, text, { scope, limit, now: NOW, allMatches: true });
          assert.deepEqual(ranked, all, `${text} / ${JSON.stringify(scope)} / ${limit}`);
          compared++;
          if (ranked.length > 0) nonEmpty++;
        }
    assert.equal(compared, 5 * 6 * 5);
    assert.equal(nonEmpty, 4 * 6 * 5); // every query but the last finds something in every scope
  });

  it('hands over only what can make the limit (ties included), and leaves out what the arm would', async () => {
    const c = await member();
    try {
      const count = async (top: number | null) =>
        Number(
          (
            await c.query(
              `SELECT count(*) AS n FROM cairn.text_matches(plainto_tsquery('english', 'alpha'), NULL, ARRAY['team.r'], false,
                 ARRAY[plainto_tsquery('english', 'alpha')], NULL, $1::float4[], $2::integer, $3::bigint)`,
              [WEIGHTS, top, NOW],
            )
          ).rows[0].n,
        );
      const all = await count(null);
      const five = await count(5);
      // Every match of the scope unranked (states the arm drops included); ranked: at least 5, far fewer than all.
      assert.ok(all > 200, `all: ${all}`);
      assert.ok(five >= 5 && five < all / 4, `top 5 handed over ${five} of ${all}`);
      // Ranked, no row the arm's visibility drops comes back.
      const states = (
        await c.query<{ bad: number }>(
          `SELECT count(*) FILTER (WHERE m.status <> 'active' OR m.deleted_at IS NOT NULL OR m.expires_at <= $2
             OR m.valid_from > $2 OR m.valid_to <= $2) AS bad
           FROM cairn.text_matches(plainto_tsquery('english', 'alpha'), NULL, ARRAY['team.r'], false,
             ARRAY[plainto_tsquery('english', 'alpha')], NULL, $1::float4[], 100000, $2::bigint) m`,
          [WEIGHTS, NOW],
        )
      ).rows[0].bad;
      assert.equal(Number(states), 0);
    } finally {
      await c.end();
    }
  });

  it('walks a narrow scope for a common term through the scope-text indexes, not the table', async () => {
    const c = await member();
    try {
      const scans = async (index: string) =>
        Number((await c.query(`SELECT pg_stat_get_xact_numscans($1::regclass) AS n`, [`cairn.${index}`])).rows[0].n);
      await c.query('BEGIN');
      const before = [await scans(SCOPE_TEXT_INDEX), await scans(SCOPE_TEXT_LONG_INDEX)];
      // "alpha" is in nearly every memory of the table and team.r.sub holds a tenth of them: a walk of the scope.
      const keys = (
        await c.query<{ key: string }>(
          `SELECT key FROM cairn.text_matches(plainto_tsquery('english', 'alpha'), ARRAY['team.r.sub'], NULL, false,
             ARRAY[plainto_tsquery('english', 'alpha')], NULL, $1::float4[], 1000, $2::bigint)`,
          [WEIGHTS, NOW],
        )
      ).rows.map((r) => r.key);
      const after = [await scans(SCOPE_TEXT_INDEX), await scans(SCOPE_TEXT_LONG_INDEX)];
      await c.query('ROLLBACK');
      assert.ok(after[0] > before[0], 'the covering index was scanned');
      assert.ok(after[1] > before[1], 'the long-tsvector index was scanned');
      // The long memory (no entry in the covering index) is among the walk's matches, and so are the scope's others.
      assert.ok(keys.includes('alpha long'), JSON.stringify(keys));
      assert.ok(keys.length > 40, `${keys.length} matches`);
    } finally {
      await c.end();
    }
  });

  it('weighs a rare term above a common one, with counts of what the caller may see only', async () => {
    // team.idf: "common" in 20 memories, "rare" in one; neither has both, so both are in the any-term tier.
    await alice.upsertBatch([
      ...Array.from({ length: 20 }, (_, i) => ({ namespace: 'team.idf', key: `c${i}`, value: `common word ${i}` })),
      { namespace: 'team.idf', key: 'r', value: 'rare word' },
    ]);
    // In the namespace, and in the whole store (every namespace alice may read).
    const arm = async () => {
      const out = [];
      for (const scope of [{ root: 'team.idf', includeUser: false }, undefined]) {
        const hits = await ftsArm(alice, 'common rare', { scope, limit: 3, now: Date.now() });
        const rows = await alice.byRowids(hits.map((h) => h.rowid));
        out.push(hits.map((h) => ({ key: rows.get(h.rowid)?.key, score: h.score })));
      }
      return out;
    };
    const before = await arm();
    for (const hits of before) {
      assert.equal(hits[0].key, 'r', JSON.stringify(hits));
      assert.ok(hits[0].score > 2 * hits[1].score, JSON.stringify(hits));
    }
    // Memories the caller cannot see change no score: "rare" written 50 times where alice has no grant, and in
    // team.idf once more, deleted.
    const owner = pg0.admin(db);
    await owner.query(`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ('hidden-ns', 'hidden.idf', 0)`);
    await ownerFixture(owner, (c) =>
      c.query(
        `INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties, anchors,
           created_at, updated_at, version, status, fts)
         SELECT 'h-' || i, 'hidden-ns', 'h' || i, 'rare rare', '', 'fact', '[]', 0.5, 0.5, 'sql', '{}', '[]', 0, 0, 1, 'active',
           to_tsvector('english', 'rare rare') FROM generate_series(1, 50) i`,
      ),
    );
    await alice.upsert({ namespace: 'team.idf', key: 'gone', value: 'rare thing, deleted' });
    await alice.delete({ namespace: 'team.idf', key: 'gone' });
    assert.deepEqual(await arm(), before);
  });

  it('answers a query of the longest allowed text with a thousand distinct words (its first TEAM_MAX_TERMS searched)', async () => {
    const chars = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const words = [...chars].flatMap((x) => [...chars].map((y) => `q${x}${y}`));
    const text = words.join(' ').slice(0, 4096);
    assert.ok(text.split(' ').length > 1000);
    await alice.upsertBatch([
      { namespace: 'team.long', key: 'early', value: `${words[3]} is one of the first words` },
      { namespace: 'team.long', key: 'late', value: `${words[TEAM_MAX_TERMS + 10]} comes after the cap` },
    ]);
    for (const allMatches of [false, true]) {
      const hits = await ftsArm(alice, text, { scope: { root: 'team.long', includeUser: false }, limit: 10, now: Date.now(), allMatches });
      const rows = await alice.byRowids(hits.map((h) => h.rowid));
      assert.deepEqual(
        hits.map((h) => rows.get(h.rowid)?.key),
        ['early'],
      );
    }
  });
});

/**
 * Episodes as data (docs/episodes.md#erasure-retention-export-and-backup): a restored backup's event indexes are
 * brought up to its event log, export and import carry episodes and events (idempotent per (episode, seq)), erasing an
 * episode gives a signed receipt, retention removes events per source and kind with a log of what went, inject/block
 * adds event snippets on request inside the same budget, and team namespaces are refused with a typed error.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type * as T from '../../daemon/src/protocol/types';
import type { Core } from '../../daemon/src/server/core';
import { restore } from '../../daemon/src/store/backup';
import { eventContentHash, verifyReceipt } from '../../daemon/src/store/receipt';
import { Store } from '../../daemon/src/store/store';
import { Core as CoreClass } from '../../daemon/src/server/core';
import { tempCore, tempDir } from '../helpers';

const A = { root: 'project.a', includeUser: false };

async function episode(core: Core, namespace: string, title = 'session', extra: Partial<T.EpisodeStartParams> = {}) {
  return (await core.call(R.episodesStart, { namespace, title, ...extra })).episode;
}

describe('restore brings the events indexes up to the event log', () => {
  it('an event missing from the copy full-text index is found after restore; missing event vectors are re-embedded', async () => {
    const t = tempCore();
    const dir = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      const ep = await episode(t.core, 'project.a');
      await t.core.call(R.eventsAppend, {
        episodeId: ep.id,
        events: [
          { kind: 'user', text: 'ordinary turn' },
          { kind: 'agent', text: 'the wombat deployment went fine' },
        ],
      });
      await t.core.call(R.indexWait, { position: 0 });
      const file = path.join(dir, 'b.db');
      await t.core.call(R.backup, { path: file });
      // A copy as a backup under writers can leave it: the event's full-text row gone while the watermark says
      // current, and the vector watermark past an event without a vector.
      const b = new Database(file);
      const pos = b.prepare(`SELECT pos FROM events WHERE text LIKE '%wombat%'`).pluck().get() as number;
      b.prepare('DELETE FROM events_fts WHERE rowid = ?').run(pos);
      b.prepare(`UPDATE index_state SET watermark = ?, model = 'm' WHERE name = 'events_vec'`).run(pos);
      b.close();
      t.store.close();
      const r = restore(db, file);
      assert.equal(r.eventsIndexed, 2);
      assert.equal(r.eventVectorsMissing, 2);
      const s = new Store(db);
      try {
        const hits = (await new CoreClass(s).call(R.eventsSearch, { query: 'wombat', scope: A })).hits;
        assert.deepEqual(
          hits.map((h) => h.event.position),
          [pos],
        );
        assert.equal(s.db.prepare(`SELECT watermark FROM index_state WHERE name = 'events_vec'`).pluck().get(), 0);
      } finally {
        s.close();
      }
    } finally {
      t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('episodes/erase gives a signed receipt', () => {
  it('the receipt verifies with the store key, its content hash is over the erased events, and the removal is logged', async () => {
    const t = tempCore();
    try {
      const ep = await episode(t.core, 'project.a', 'to erase');
      await t.core.call(R.eventsAppend, {
        episodeId: ep.id,
        events: [
          { kind: 'user', text: 'first', at: '2026-01-01T00:00:00.000Z' },
          { kind: 'agent', text: 'second', at: '2026-01-01T00:01:00.000Z' },
        ],
      });
      const r = await t.core.call(R.episodesErase, { id: ep.id, reason: 'asked to', scope: A });
      assert.equal(r.events, 2);
      const rc = r.receipt as T.ErasureReceipt;
      assert.deepEqual(rc.target, { episode: ep.id });
      assert.deepEqual(rc.episodes, [{ id: ep.id, namespace: 'project.a', events: 2 }]);
      assert.equal(rc.removed.events, 2);
      assert.equal(rc.reason, 'asked to');
      assert.deepEqual(verifyReceipt(rc, t.store.keys!.publicKeyB64), { ok: true, problem: null, trustedKey: true });
      assert.equal(
        rc.contentHash,
        eventContentHash(rc.salt, [
          [ep.id, 0, 'user', '2026-01-01T00:00:00.000Z', 'first'],
          [ep.id, 1, 'agent', '2026-01-01T00:01:00.000Z', 'second'],
        ]),
      );
      assert.equal(verifyReceipt({ ...rc, episodes: [{ id: ep.id, namespace: 'project.a', events: 1 }] }).ok, false, 'altered');
      const log = await t.core.call(R.episodesRemovals, { scope: A });
      assert.equal(log.entries.length, 1);
      assert.deepEqual(
        { ...log.entries[0], at: undefined, seq: undefined },
        {
          op: 'erase',
          episodeId: ep.id,
          namespace: 'project.a',
          events: 2,
          actor: 'user',
          reason: 'asked to',
          detail: { receipt: rc.id },
          at: undefined,
          seq: undefined,
        },
      );
      assert.deepEqual((await t.core.call(R.episodesRemovals, { scope: { root: 'project.b', includeUser: false } })).entries, []);
    } finally {
      t.close();
    }
  });
});

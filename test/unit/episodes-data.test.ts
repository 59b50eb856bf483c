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

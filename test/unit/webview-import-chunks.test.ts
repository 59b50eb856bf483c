/** Applying an import in chunks (the dashboard's progress bar) gives exactly what one store/import call gives. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { importChunks } from '../../extension/src/dashboard/chunks';
import { rejectsWith, tempCore } from '../helpers';

describe('dashboard import chunks', () => {
  it('imports in chunks exactly as in one call: memories, history, links, deletions, rejected values', async () => {
    const src = tempCore();
    const one = tempCore();
    const chunked = tempCore();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const m = await src.core.call(R.upsert, { namespace: i % 2 ? 'project.a' : 'user', key: `k${i}`, value: `value ${i}` });
        await src.core.call(R.upsert, { namespace: m.memory.namespace, key: m.memory.key, value: `value ${i}, edited` });
        ids.push(m.memory.id);
      }
      await src.core.call(R.link, { from: ids[0], to: ids[6], type: 'relates_to' });
      await src.core.call(R.forget, { id: ids[3] });
      const gone = await src.core.call(R.upsert, { namespace: 'project.a', key: 'purged', value: 'p' });
      await src.core.call(R.delete, { id: gone.memory.id });
      await src.core.call(R.purge, { id: gone.memory.id });
      const ep = (await src.core.call(R.episodesStart, { namespace: 'project.a', title: 'a session' })).episode;
      await src.core.call(R.eventsAppend, {
        episodeId: ep.id,
        events: [
          { kind: 'user', text: 'a turn' },
          { kind: 'agent', text: 'an answer' },
        ],
      });
      const records = (await src.core.call(R.exportRecords, {})).records;

      const chunks = importChunks(records, 3);
      assert.equal(chunks.length, 4, '7 memories in chunks of 3, then links and the rest');
      assert.equal(chunks.flat().length, records.length, 'every record lands in one chunk');
      const whole = await one.core.call(R.importRecords, { records });
      const parts: (typeof whole)[] = [];
      for (const c of chunks) parts.push(await chunked.core.call(R.importRecords, { records: c }));
      const sum = (k: 'memories' | 'history' | 'links' | 'skipped' | 'episodes' | 'events') => parts.reduce((a, p) => a + (p[k] ?? 0), 0);
      assert.deepEqual(
        [sum('memories'), sum('history'), sum('links'), sum('skipped'), sum('episodes'), sum('events')],
        [whole.memories, whole.history, whole.links, whole.skipped, 1, 2],
      );
      // Same records; history rows are numbered per chunk, so compare them in a fixed order (each memory's own order is kept).
      const strip = (rs: typeof records) =>
        rs
          .filter((r) => r.type !== 'header')
          .map((r) => (r.type === 'history' ? { ...r, entry: { ...r.entry, seq: 0 } } : r))
          // each store keys its rejected-value hashes with its own secret
          .map((r) => (r.type === 'rejected' ? { ...r, valueHash: '' } : r))
          .map((r) => JSON.stringify(r))
          .sort();
      assert.deepEqual(
        strip((await chunked.core.call(R.exportRecords, {})).records),
        strip((await one.core.call(R.exportRecords, {})).records),
      );
      // the forgotten value stays refused after a chunked import
      await rejectsWith(chunked.core.call(R.upsert, { namespace: 'project.a', key: 'again', value: 'value 3, edited' }), 'RejectedValue');
      assert.deepEqual(importChunks([]), [[]]);
    } finally {
      src.close();
      one.close();
      chunked.close();
    }
  });
});

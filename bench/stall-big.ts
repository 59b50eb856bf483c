/**
 * The big side of the stall probe (bench/reliability.ts stallProbe), in its own process so that building,
 * serializing and parsing its large messages does not count as the daemon's stall. Commands arrive by IPC:
 * build, importBatched (messages of about 1,000 records, cut at memory boundaries, as the CLI sends them),
 * importOne (the same records in one message), exportPages (store/exportPage, as the CLI exports), exportOne
 * (the one-reply store/export of one namespace's memories). Each is answered {ok} or {ok: false, error}.
 *
 *   (forked by stallProbe) bench/stall-big.ts SOCKET MEMORIES
 */
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { ExportRecord } from '../daemon/src/protocol/types';
import { exportOf } from './reliability';

const [socket, memories] = [process.argv[2], Number(process.argv[3])];
let records: ExportRecord[] = [];
let batched: ExportRecord[] = [];
let big: StreamClient | null = null;

const ops: Record<string, () => Promise<void>> = {
  build: async () => {
    // One store/import message must stay under Limits.messageBytes (16 MiB): about 10,000 memories with their history.
    records = await exportOf(memories);
    batched = await exportOf(memories, 'project.stall.batched');
    big = await StreamClient.connect(socket);
  },
  importBatched: async () => {
    let batch: ExportRecord[] = [];
    for (const r of batched) {
      if (batch.length >= 1000 && r.type !== 'history') {
        await big!.call(R.importRecords, { records: batch, actor: 'stall-probe' });
        batch = [];
      }
      batch.push(r);
    }
    if (batch.length) await big!.call(R.importRecords, { records: batch, actor: 'stall-probe' });
  },
  importOne: async () => void (await big!.call(R.importRecords, { records, actor: 'stall-probe' })),
  exportPages: async () => {
    let page = await big!.call(R.exportPage, { includeHistory: true });
    while (page.nextCursor) page = await big!.call(R.exportPage, { cursor: page.nextCursor });
  },
  // One namespace's 10,000 memories (about 13 MB): the whole store (20,000 after both imports) passes the 16 MiB limit
  // of one store/export reply (Limits.exportReplyBytes) and is refused.
  exportOne: async () =>
    void (await big!.call(R.exportRecords, { includeHistory: true, scope: { namespaces: ['project.stall'], includeUser: false } })),
};

process.on('message', (m: { op: string }) => {
  ops[m.op]().then(
    () => process.send!({ ok: true }),
    (e: Error) => process.send!({ ok: false, error: e?.message ?? String(e) }),
  );
});

/** Progress of the CLI's long commands: a re-embed followed to its end, an import's total. */
import * as fs from 'node:fs';
import * as readline from 'node:readline';
import type { CairnClient } from '../client/socket-client';
import { Notifications, Requests } from '../protocol/methods';
import type { IndexProgressParams } from '../protocol/types';

export type NotificationSource = {
  onNotification: (d: typeof Notifications.indexProgress, f: (p: IndexProgressParams) => void) => void;
};

/**
 * Follow a re-embed: a progress line on a terminal from index/progress notifications; done when one says `ready`,
 * or when the status no longer says `reindexing` (checked once a second, for a rebuild whose notification was lost
 * or that failed: a failure sends none). Subscribe before sending index/rebuild, then call `until`.
 */
export function followReindex(c: CairnClient & NotificationSource, write: (s: string) => void, tty: boolean) {
  let last: IndexProgressParams | undefined;
  let wake: () => void = () => {};
  const finished = () => last?.state === 'ready';
  c.onNotification(Notifications.indexProgress, (p) => {
    last = p;
    if (tty) write(`\rre-embedding: ${p.done}/${p.total} memories…`);
    if (p.state === 'ready') wake();
  });
  return {
    async until(queued: number): Promise<{ total: number; failed?: string }> {
      try {
        for (;;) {
          if (finished()) break;
          const ready = new Promise<void>((r) => (wake = r));
          let timer: NodeJS.Timeout | undefined;
          const tick = new Promise<void>((r) => (timer = setTimeout(r, 1000)));
          await Promise.race([ready, tick]);
          clearTimeout(timer);
          if (finished()) break;
          const s = await c.call(Requests.status, {});
          if (s.embeddings.state === 'ready') break;
          if (s.embeddings.state !== 'reindexing' && s.embeddings.state !== 'loading')
            return { total: queued, failed: s.embeddings.fallbackReason ?? `the vector index is ${s.embeddings.state}` };
        }
        return { total: last?.total ?? queued };
      } finally {
        if (tty && last) write('\n');
      }
    },
  };
}

/** How many memory records an export file holds (its lines that start a memory record), for "N/total". */
export async function countMemoryRecords(file: string): Promise<number | undefined> {
  try {
    const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
    let n = 0;
    for await (const line of rl) if (/^\s*\{\s*"type"\s*:\s*"memory"/.test(line)) n++;
    return n;
  } catch {
    return undefined; // unreadable here: the import itself reports why
  }
}

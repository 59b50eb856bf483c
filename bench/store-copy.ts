/** A private copy of a store for a benchmark that reads it, so nothing the bench does touches the store given. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test/helpers';

/** The store file `db` and its WAL, copied into a new temp folder (`dir`; remove it when done). */
export function storeCopy(db: string, prefix: string): { dir: string; copy: string } {
  const dir = tempDir(prefix);
  const copy = path.join(dir, 'cairn.db');
  for (const sfx of ['', '-wal']) if (fs.existsSync(db + sfx)) fs.copyFileSync(db + sfx, copy + sfx);
  return { dir, copy };
}

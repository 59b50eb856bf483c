/**
 * Output files that hold the store's content (`cairn export`, `cairn audit export`): written 0600 like backups and
 * receipts, also over an existing file that was readable by others, and a count of the secret-tagged memories whose
 * values they hold, for the note the command prints.
 */
import * as fs from 'node:fs';
import type { ExportRecord, HistoryEntry, Memory } from '../protocol/types';
import { isSecretTagged } from '../text/secrets';

/** A write stream on `file`, created 0600, or truncated and set to 0600 when it exists. */
export function privateWriteStream(file: string): fs.WriteStream {
  const fd = fs.openSync(file, 'w', 0o600);
  if (process.platform !== 'win32') fs.fchmodSync(fd, 0o600);
  return fs.createWriteStream('', { fd });
}

/** The memories tagged `secret` whose values a file holds (as memory records, or as states in history entries). */
export class SecretTally {
  private readonly ids = new Set<string>();

  get count(): number {
    return this.ids.size;
  }

  private memory(m: Memory | null | undefined): void {
    if (m && isSecretTagged(m.tags) && m.value !== '') this.ids.add(m.id);
  }

  entry(e: HistoryEntry): void {
    this.memory(e.previous);
    this.memory(e.state);
  }

  record(r: ExportRecord): void {
    if (r.type === 'memory') this.memory(r.memory);
    else if (r.type === 'history') this.entry(r.entry);
  }

  /** The note for stderr, or null when no secret value is in the output. */
  note(where: string): string | null {
    if (this.count === 0) return null;
    return `note: ${where} holds the values of ${this.count} memor${this.count === 1 ? 'y' : 'ies'} tagged secret in full; keep it private (Cairn wrote it 0600)`;
  }
}

/**
 * What one daemon remembers between its team writes, so that a write of a new key is one round trip (upsert.ts
 * fastUpsert): the id of each live namespace it has written, and the keys it has seen stored. Only a hint: the
 * blind create statement is guarded in the database (the namespace id must still be that live path's, the key
 * must be free, the value not rejected there), and when a guard stops it the write is decided again from a read.
 */
export class WriteCache {
  private readonly nsIds = new Map<string, string>();
  private readonly keys = new Set<string>();

  constructor(private readonly maxKeys = 50_000) {}

  /** The namespace's id when this daemon wrote into it before. */
  namespaceId(path: string): string | undefined {
    return this.nsIds.get(path);
  }

  /** True when the key may be stored already (this daemon read it or wrote it): a write of it reads first. */
  mayExist(path: string, key: string): boolean {
    return this.keys.has(`${path}\u0000${key}`);
  }

  /** The key is stored in namespace `nsId` at `path`. */
  stored(path: string, key: string, nsId: string): void {
    this.nsIds.set(path, nsId);
    if (this.keys.size >= this.maxKeys) this.keys.clear(); // a forgotten key costs one extra statement, once
    this.keys.add(`${path}\u0000${key}`);
  }

  /** A guard stopped a blind write: read before writing this key, and learn the namespace again. */
  missed(path: string, key: string): void {
    this.nsIds.delete(path);
    this.keys.add(`${path}\u0000${key}`);
  }
}

/**
 * A map from memory rowid to vector-index slot in one typed array indexed by rowid (-1: none). Rowids are dense
 * (SQLite's rowids of `memories`), so this costs 4 bytes per rowid up to the largest, where a Map of a million
 * entries cost about 40 bytes each and a long pause to build.
 */
export class RowSlots {
  private a = new Int32Array(0);
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** Bytes held (4 per rowid up to the largest). */
  get bytes(): number {
    return this.a.byteLength;
  }

  get(rowid: number): number | undefined {
    if (rowid < 0 || rowid >= this.a.length) return undefined;
    const s = this.a[rowid];
    return s < 0 ? undefined : s;
  }

  has(rowid: number): boolean {
    return this.get(rowid) !== undefined;
  }

  set(rowid: number, slot: number): void {
    if (!Number.isInteger(rowid) || rowid < 0 || rowid > 0x7fffffff) throw new RangeError(`bad rowid ${rowid}`);
    if (rowid >= this.a.length) {
      // Grow by a quarter (at least to the rowid): one memory at a time must not copy the array every time.
      const b = new Int32Array(Math.max(rowid + 1, Math.ceil(this.a.length * 1.25), 1024)).fill(-1);
      b.set(this.a);
      this.a = b;
    }
    if (this.a[rowid] < 0) this.n++;
    this.a[rowid] = slot;
  }

  delete(rowid: number): void {
    if (rowid < 0 || rowid >= this.a.length || this.a[rowid] < 0) return;
    this.a[rowid] = -1;
    this.n--;
  }

  /** The rowids held, ascending (a snapshot: deleting while iterating is safe). */
  keys(): number[] {
    const out: number[] = [];
    for (let r = 0; r < this.a.length; r++) if (this.a[r] >= 0) out.push(r);
    return out;
  }
}

/**
 * Callers of index/wait waiting for the vector watermark to reach a change-log position (Indexer.waitFor): each
 * resolves when a pass moves the watermark there, when the log is drained, or after its timeout.
 */

type Waiter = { position: number; resolve: (wm: number) => void };

export class WatermarkWaiters {
  private list: Waiter[] = [];

  get size(): number {
    return this.list.length;
  }

  /**
   * Wait for `position`: resolves with the watermark a settle() gives, or after `timeoutMs` with `watermark()`
   * then (reached: false).
   */
  add(position: number, timeoutMs: number, watermark: () => number): Promise<{ watermark: number; reached: boolean }> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.list = this.list.filter((w) => w !== waiter);
        resolve({ watermark: watermark(), reached: false });
      }, timeoutMs);
      const waiter: Waiter = {
        position,
        resolve: (w) => {
          clearTimeout(timer);
          resolve({ watermark: w, reached: w >= position });
        },
      };
      this.list.push(waiter);
    });
  }

  /**
   * Resolve the waiters the watermark `wm` reached; with `drained` (the log is drained and no pass runs) all of
   * them: positions that are not memory writes (or beyond the log) count as reached then.
   */
  settle(wm: number, drained: boolean): void {
    this.list = this.list.filter((w) => {
      if (wm >= w.position || drained) {
        w.resolve(wm);
        return false;
      }
      return true;
    });
  }
}

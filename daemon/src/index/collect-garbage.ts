/**
 * A full garbage collection on request, for the one moment the daemon knows a large amount of memory just became
 * garbage and is about to allocate as much again: the end of a model switch at a large store, where the previous
 * index's arrays (a quarter of a GiB at a million memories, in shared memory V8 does not weigh as heap) would otherwise
 * stay mapped until some later collection, while the new index is read beside them.
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

let gc: (() => void) | null | undefined;

/** Collect now; false when this runtime offers no way to ask (then memory is freed by V8's own schedule). */
export function collectGarbage(): boolean {
  if (gc === undefined) {
    gc = typeof globalThis.gc === 'function' ? (globalThis.gc as () => void) : null;
    if (!gc) {
      try {
        // Without --expose-gc at start: the flag set now exposes gc() in contexts created after it.
        v8.setFlagsFromString('--expose-gc');
        const fn = vm.runInNewContext('gc') as unknown;
        gc = typeof fn === 'function' ? (fn as () => void) : null;
      } catch {
        gc = null;
      }
    }
  }
  if (!gc) return false;
  gc();
  return true;
}

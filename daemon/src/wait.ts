/** Waiting, once: a delay and a deadline on a promise. Pure Node timers (the extension bundles it too). */

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `p`, or after `ms` the value of `onTimeout()`: return a fallback from it, or throw to reject. The timer never
 * outlives the race.
 */
export async function withTimeout<T>(p: PromiseLike<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve(p),
      new Promise<T>(
        (resolve, reject) =>
          (timer = setTimeout(() => {
            try {
              resolve(onTimeout());
            } catch (e) {
              reject(e);
            }
          }, ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

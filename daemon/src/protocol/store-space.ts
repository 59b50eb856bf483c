/**
 * How a store's free pages (`store/status` `free`) are worded, the same in `cairn status`, the extension's status
 * document and the dashboard: no clients' own phrasing of what the space means.
 */
import type { StoreStatusResult } from './types';

/** Free pages below this are not mentioned (SQLite's next writes reuse them anyway). */
export const FREE_MENTION_BYTES = 1 << 20;

/**
 * `, N KiB free` (with what happens to it in a store created before incremental auto-vacuum), or '' when the store
 * has less than FREE_MENTION_BYTES free or the daemon did not say.
 */
export function describeFree(free: StoreStatusResult['free']): string {
  if (!free || free.bytes < FREE_MENTION_BYTES) return '';
  const what = free.reclaims ? '' : ' (reused by later writes; not given back in a store this old)';
  return `, ${(free.bytes / 1024).toFixed(0)} KiB free${what}`;
}

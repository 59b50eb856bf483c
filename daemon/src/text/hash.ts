import { createHash, randomFillSync } from 'node:crypto';

/** A value as compared for rejection: Unicode NFKC, case folded, whitespace collapsed. */
export function normalizeValue(value: string): string {
  return value.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Unkeyed hash of a normalized value (legacy: memories.value_hash before it was left unstored, and rejected values). Rejections now use keyed hashes (store/rejected.ts). */
export function normalizedValueHash(value: string): string {
  return createHash('sha256').update(normalizeValue(value)).digest('hex');
}

/**
 * Random bytes from a pool refilled 4 KiB at a time (the same CSPRNG): one randomBytes(16) per id cost a call into
 * OpenSSL on every write (as crypto.randomUUID does, the pool amortizes it).
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;
function takeRandom(into: Buffer): void {
  if (poolAt + into.length > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  POOL.copy(into, 0, poolAt, poolAt + into.length);
  POOL.fill(0, poolAt, poolAt + into.length); // handed out once: never reused for another id
  poolAt += into.length;
}

/** A UUIDv7: 48-bit millisecond timestamp then random bits, so ids sort by creation time. */
export function uuidv7(now = Date.now()): string {
  const b = Buffer.allocUnsafe(16);
  takeRandom(b);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

import { createHash, randomBytes } from 'node:crypto';

/** Hash of a value after normalization (Unicode NFKC, case folded, whitespace collapsed), used for rejected values. */
export function normalizedValueHash(value: string): string {
  const norm = value.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  return createHash('sha256').update(norm).digest('hex');
}

/** A UUIDv7: 48-bit millisecond timestamp then random bits, so ids sort by creation time. */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

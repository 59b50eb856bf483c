/**
 * Erasure receipts: a signed statement of what `memory/erase` removed, when,
 * by whom, and a salted hash of the erased content, so whoever holds the
 * content can prove the receipt is about it. The store itself keeps no hash of
 * erased content: only the receipt, held by the caller, carries one. Signed with the
 * store's Ed25519 key (store/keys.ts) over the canonical JSON of every field
 * but `signature`. Pure node:crypto: verifying needs no daemon and no SQLite.
 */
import { createHash, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import type { ErasureReceipt } from '../protocol/types';
import { publicKeyFromRaw } from './keys';

/** JSON with object keys sorted at every level: one byte string per value. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

export interface ErasedContent {
  id: string;
  namespace: string;
  key: string;
  value: string;
}

/**
 * sha256 over the canonical JSON of [salt, [[id, namespace, key, value], ...]] with items sorted by id (then namespace,
 * key, value).
 * Anyone holding the erased memories and the receipt's salt can recompute it.
 */
export function contentHash(salt: string, items: ErasedContent[]): string {
  // By id, then the rest: a memory's branch rows (store/branch-rows.ts) share its id.
  const tuple = (m: ErasedContent) => [m.id, m.namespace, m.key, m.value];
  const order = (a: string[], b: string[]) => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return 0;
  };
  const rows = items.map(tuple).sort(order);
  return (
    'sha256:' +
    createHash('sha256')
      .update(canonicalJson([salt, rows]))
      .digest('hex')
  );
}

/**
 * An erased episode's content hash: sha256 over the canonical JSON of [salt, [[episode id, seq, kind, at, text], ...]]
 * in seq order (`at` as ISO-8601), which whoever holds the episode's events can recompute.
 */
export function eventContentHash(salt: string, events: unknown[][]): string {
  return (
    'sha256:' +
    createHash('sha256')
      .update(canonicalJson([salt, events]))
      .digest('hex')
  );
}

export const newSalt = () => randomBytes(16).toString('base64');

export function signReceipt(unsigned: Omit<ErasureReceipt, 'signature'>, privateKey: KeyObject): ErasureReceipt {
  const signature = sign(null, Buffer.from(canonicalJson(unsigned)), privateKey).toString('base64');
  return { ...unsigned, signature };
}

export interface ReceiptCheck {
  ok: boolean;
  /** Why it failed (signature, format, or key mismatch). */
  problem: string | null;
  /** True when the receipt's key equals `trustedKey` (when one was given). */
  trustedKey: boolean | null;
}

/** Check a receipt's signature against the key it names, and (optionally) that the key is the one you trust. */
export function verifyReceipt(r: unknown, trustedPublicKeyB64?: string): ReceiptCheck {
  const rec = r as Partial<ErasureReceipt> | null;
  if (rec && typeof rec === 'object' && (rec as { store?: unknown }).store === 'team')
    return {
      ok: false,
      problem: 'a receipt of the team database: it verifies it itself (`cairn team verify-receipt`)',
      trustedKey: null,
    };
  if (
    !rec ||
    typeof rec !== 'object' ||
    rec.format !== 'cairn-erasure-receipt' ||
    typeof rec.signature !== 'string' ||
    typeof rec.publicKey !== 'string'
  ) {
    return { ok: false, problem: 'not a Cairn erasure receipt', trustedKey: null };
  }
  const { signature, ...unsigned } = rec;
  let good = false;
  try {
    good = verify(null, Buffer.from(canonicalJson(unsigned)), publicKeyFromRaw(rec.publicKey), Buffer.from(signature, 'base64'));
  } catch (e) {
    return { ok: false, problem: `bad key or signature: ${(e as Error).message}`, trustedKey: null };
  }
  if (!good)
    return { ok: false, problem: 'the signature does not match the receipt (it was altered, or signed by another key)', trustedKey: null };
  if (trustedPublicKeyB64 === undefined) return { ok: true, problem: null, trustedKey: null };
  const trusted = rec.publicKey === trustedPublicKeyB64;
  return {
    ok: trusted,
    problem: trusted ? null : "the signature is valid but the key is not the one expected (this store's key or --public-key)",
    trustedKey: trusted,
  };
}

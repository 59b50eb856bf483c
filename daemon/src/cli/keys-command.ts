/**
 * `cairn keys public`: print the public key that signs this store's erasure receipts, read from the store's key file
 * (no daemon needed), for a third party to verify receipts with `cairn verify-receipt --key`. The same key is in
 * `store/status` (`signingKey`). And the reading of a trusted key given on the command line (base64 of the raw
 * 32-byte Ed25519 key, a PEM public key, or a file holding either).
 */
import * as fs from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { CairnError } from '../protocol/errors';

export class KeysUsageError extends Error {}

export async function keysCommand(pos: string[], o: { db?: string; json?: boolean }, out: (s: string) => void): Promise<number> {
  if (pos.length !== 1 || pos[0] !== 'public') throw new KeysUsageError('usage: cairn keys public [--db FILE] [--json]');
  const { resolveDbPath } = await import('../paths');
  const { loadStoreKeys } = await import('../store/keys');
  const db = resolveDbPath(o.db);
  const keys = loadStoreKeys(db, { create: false });
  if (!keys)
    throw new CairnError('NotFound', `the store ${db} has no key file yet (it is made when the store is first opened)`, { field: 'db' });
  if (o.json) out(JSON.stringify({ store: db, algorithm: 'ed25519', publicKey: keys.publicKeyB64 }, null, 2));
  else out(keys.publicKeyB64);
  return 0;
}

/** A trusted public key from `--key` / `--public-key`: base64 of the raw key, a PEM public key, or a file holding one. */
export async function trustedKeyArg(arg: string, flag: string): Promise<string> {
  let text = arg.trim();
  if (!text.startsWith('-----BEGIN') && fs.existsSync(text)) text = fs.readFileSync(text, 'utf8').trim();
  const { rawPublicKey } = await import('../store/keys');
  try {
    if (text.startsWith('-----BEGIN')) {
      const k = createPublicKey(text);
      if (k.asymmetricKeyType !== 'ed25519') throw new Error(`a ${k.asymmetricKeyType} key`);
      return rawPublicKey(k);
    }
    if (/^[A-Za-z0-9+/]{43}=$/.test(text) && Buffer.from(text, 'base64').length === 32) return text;
    throw new Error('not base64 of 32 bytes');
  } catch (e) {
    throw new CairnError(
      'InvalidParams',
      `${flag} is not an Ed25519 public key (base64 of its 32 raw bytes, as cairn keys public prints it, a PEM public key, or a file holding one): ${(e as Error).message}`,
      { field: flag.replace(/^--/, '') },
    );
  }
}

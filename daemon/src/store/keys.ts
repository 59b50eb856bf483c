/**
 * The store's secrets, kept beside the store in `<db>.keys` (mode 0600, never
 * inside the database file, so a copy of the database alone confirms nothing):
 *
 * - `hmac`: a 32-byte key for the keyed hashes of rejected (forgotten) values.
 *   An unkeyed hash of a short value confirms a guess; a keyed one needs this file.
 * - `ed25519`: the key pair that signs erasure receipts (store/receipt.ts).
 *
 * Created on first open with an atomic link, so two processes opening a new
 * store at once agree on one file. `cairn backup` copies it with the store.
 */
import { createHmac, generateKeyPairSync, randomBytes, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import * as fs from 'node:fs';

export interface StoreKeys {
  hmac: Buffer;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** Base64 of the raw 32-byte Ed25519 public key. */
  publicKeyB64: string;
}

interface KeyFile {
  format: 'cairn-keys';
  version: 1;
  hmac: string;
  ed25519: string;
}

export const keysPath = (db: string) => `${db}.keys`;

function generate(): KeyFile {
  const { privateKey } = generateKeyPairSync('ed25519');
  return {
    format: 'cairn-keys',
    version: 1,
    hmac: randomBytes(32).toString('base64'),
    ed25519: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

function fromFile(k: KeyFile): StoreKeys {
  const privateKey = createPrivateKey(k.ed25519);
  const publicKey = createPublicKey(privateKey);
  return { hmac: Buffer.from(k.hmac, 'base64'), privateKey, publicKey, publicKeyB64: rawPublicKey(publicKey) };
}

/** The raw 32 bytes of an Ed25519 public key, base64. */
export function rawPublicKey(k: KeyObject): string {
  const jwk = k.export({ format: 'jwk' }) as { x: string };
  return Buffer.from(jwk.x, 'base64url').toString('base64');
}

export function publicKeyFromRaw(b64: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(b64, 'base64').toString('base64url') }, format: 'jwk' });
}

function parse(text: string, file: string): KeyFile {
  const k = JSON.parse(text) as KeyFile;
  if (k.format !== 'cairn-keys' || typeof k.hmac !== 'string' || typeof k.ed25519 !== 'string')
    throw new Error(`${file} is not a Cairn key file`);
  return k;
}

/** Read the store's keys, creating them (0600) when the file does not exist. `:memory:` stores get keys that live in memory. */
export function loadStoreKeys(db: string, opts: { create?: boolean } = {}): StoreKeys | null {
  if (db === ':memory:' || db === '') return fromFile(generate());
  const file = keysPath(db);
  try {
    const text = fs.readFileSync(file, 'utf8');
    tighten(file);
    return fromFile(parse(text, file));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (opts.create === false) return null;
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(generate()), { mode: 0o600 });
  try {
    fs.linkSync(tmp, file); // atomic, and fails if another process created it first
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return fromFile(parse(fs.readFileSync(file, 'utf8'), file));
}

function tighten(file: string): void {
  if (process.platform === 'win32') return;
  try {
    const st = fs.statSync(file);
    if ((st.mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
  } catch {
    /* best effort */
  }
}

/** Keyed hash of a normalized value: `k1:` + HMAC-SHA256. Unkeyed (legacy) hashes are 64 bare hex digits. */
export function keyedHash(keys: StoreKeys, normalized: string): string {
  return 'k1:' + createHmac('sha256', keys.hmac).update(normalized).digest('hex');
}

export const isLegacyHash = (h: string) => /^[0-9a-f]{64}$/.test(h);

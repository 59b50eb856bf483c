/**
 * The store's public signing key is published (`store/status` `signingKey`, `cairn status --json`, `cairn keys public`)
 * and `cairn verify-receipt --key` verifies a receipt against a key obtained that way, without the store.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { CAIRN_BIN, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('the public signing key is published and receipts verify against it', () => {
  const dir = tempDir();
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const env = { CAIRN_DB: path.join(dir, 'store.db'), XDG_RUNTIME_DIR: dir };
  const elsewhere = { CAIRN_DB: path.join(dir, 'verifier', 'none.db'), XDG_RUNTIME_DIR: dir };

  it('status, keys public and the receipt name the same key; verify-receipt --key trusts it without the store', () => {
    assert.equal(cli(['add', 'project.k', 'gone', 'a value to erase', '--direct'], env).code, 0);
    const status = cli(['status', '--json', '--direct'], env);
    assert.equal(status.code, 0, status.err);
    const signingKey = JSON.parse(status.out).signingKey as { algorithm: string; publicKey: string };
    assert.equal(signingKey.algorithm, 'ed25519');
    assert.equal(Buffer.from(signingKey.publicKey, 'base64').length, 32);

    const pub = cli(['keys', 'public'], env);
    assert.equal(pub.code, 0, pub.err);
    assert.equal(pub.out.trim(), signingKey.publicKey);
    const pubJson = JSON.parse(cli(['keys', 'public', '--json'], env).out);
    assert.deepEqual([pubJson.algorithm, pubJson.publicKey], ['ed25519', signingKey.publicKey]);

    const receiptFile = path.join(dir, 'receipt.json');
    const er = cli(['erase', 'project.k', 'gone', '--receipt', receiptFile, '--direct'], env);
    assert.equal(er.code, 0, er.err);
    assert.equal(JSON.parse(fs.readFileSync(receiptFile, 'utf8')).publicKey, signingKey.publicKey);

    // A third party without the store: the key from status, given inline, in a file, or as PEM.
    fs.mkdirSync(path.dirname(elsewhere.CAIRN_DB));
    const noKey = cli(['verify-receipt', receiptFile], elsewhere);
    assert.equal(noKey.code, 1);
    assert.match(noKey.err, /NotFound/);
    const ok = cli(['verify-receipt', receiptFile, '--key', signingKey.publicKey], elsewhere);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^valid: receipt .* signed by the trusted key/);
    const keyFile = path.join(dir, 'store.pub');
    fs.writeFileSync(keyFile, pub.out);
    assert.equal(cli(['verify-receipt', receiptFile, '--key', keyFile], elsewhere).code, 0);
    const pem = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(signingKey.publicKey, 'base64').toString('base64url') },
      format: 'jwk',
    })
      .export({ type: 'spki', format: 'pem' })
      .toString();
    const pemFile = path.join(dir, 'store.pem');
    fs.writeFileSync(pemFile, pem);
    assert.equal(cli(['verify-receipt', receiptFile, '--key', pemFile], elsewhere).code, 0);
    assert.equal(cli(['verify-receipt', receiptFile, '--public-key', signingKey.publicKey], elsewhere).code, 0);

    // Another store's key: the signature is valid, but not by the key trusted.
    const other = { CAIRN_DB: path.join(dir, 'other.db'), XDG_RUNTIME_DIR: dir };
    assert.equal(cli(['add', 'project.k', 'x', 'y', '--direct'], other).code, 0);
    const otherKey = cli(['keys', 'public'], other).out.trim();
    assert.notEqual(otherKey, signingKey.publicKey);
    const wrong = cli(['verify-receipt', receiptFile, '--key', otherKey], elsewhere);
    assert.equal(wrong.code, 1);
    assert.match(wrong.err, /not the one expected/);
  });

  it('refuses a key that is not an Ed25519 public key, and keys public without a key file', () => {
    const receiptFile = path.join(dir, 'receipt.json');
    for (const k of ['not-a-key', Buffer.alloc(16).toString('base64')]) {
      const r = cli(['verify-receipt', receiptFile, '--key', k], elsewhere);
      assert.equal(r.code, 1);
      assert.match(r.err, /not an Ed25519 public key[\s\S]*\(code InvalidParams 1001, field key\)/);
    }
    const both = cli(['verify-receipt', receiptFile, '--key', 'a', '--public-key', 'b'], elsewhere);
    assert.equal(both.code, 2);
    const none = cli(['keys', 'public'], elsewhere);
    assert.equal(none.code, 1);
    assert.match(none.err, /no key file[\s\S]*\(code NotFound 1002/);
    assert.equal(cli(['keys'], env).code, 2);
    assert.equal(cli(['keys', 'private'], env).code, 2);
  });
});

/**
 * Downloading a hub model on first use, against a local stand-in of the Hugging Face hub
 * (http://127.0.0.1, `<repo>/resolve/main/<file>`): files land in the given cache folder (never
 * node_modules), pooling is taken from the upstream repository, and later starts work offline.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Embedder } from '../../daemon/src/embed';
import { writePoolingOnlyRepo, writeStandinModel } from './standin';

let tmp: string;
let hubDir: string;
let server: http.Server;
let host: string;
const requests: string[] = [];
const transformersCache = path.join(__dirname, '..', '..', 'node_modules', '@huggingface', 'transformers', '.cache');

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-embed-hub-'));
  hubDir = path.join(tmp, 'hub');
  await writeStandinModel(path.join(hubDir, 'test', 'hub-model'), { nameOrPath: 'upstream/hub-original' });
  writePoolingOnlyRepo(path.join(hubDir, 'upstream', 'hub-original'), 'cls');
  server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const m = /^\/([\w.-]+\/[\w.-]+)\/resolve\/main\/(.+)$/.exec(decodeURIComponent((req.url ?? '').split('?')[0]));
    const file = m ? path.join(hubDir, m[1], m[2]) : '';
    if (!m || !file.startsWith(hubDir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = fs.readFileSync(file);
    res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  host = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(() => {
  server?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('hub download', () => {
  it('downloads on first use into the cache folder, with pooling from the upstream repository', async () => {
    const cache = path.join(tmp, 'cache');
    const hadTransformersCache = fs.existsSync(transformersCache);
    const e = await Embedder.start({ model: 'test/hub-model', allowRemote: true, remoteHost: host, cacheDir: cache });
    try {
      assert.equal(e.info.fallbackReason, null);
      assert.equal(e.info.model, 'test/hub-model');
      assert.equal(e.info.pooling, 'cls');
      assert.equal(e.info.poolingSource, 'upstream/hub-original/1_Pooling/config.json');
      const [v] = await e.embed(['alpha beta']);
      assert.deepEqual([...v], [1, 0, 0, 0]);
    } finally {
      await e.close();
    }
    for (const f of [
      'test/hub-model/config.json',
      'test/hub-model/tokenizer.json',
      'test/hub-model/onnx/model.onnx',
      'upstream/hub-original/1_Pooling/config.json',
    ]) {
      assert.ok(fs.existsSync(path.join(cache, f)), `${f} cached`);
    }
    assert.equal(fs.existsSync(transformersCache), hadTransformersCache, 'nothing cached inside node_modules');
    // files the hub does not have are remembered, not asked for on every start
    const absent = JSON.parse(fs.readFileSync(path.join(cache, 'test/hub-model/.cairn-absent.json'), 'utf8'));
    assert.ok(absent.includes('modules.json'));

    // second start, hub unreachable: everything comes from the cache
    const before = requests.length;
    const offline = await Embedder.start({
      model: 'test/hub-model',
      allowRemote: true,
      remoteHost: 'http://127.0.0.1:9/',
      cacheDir: cache,
    });
    try {
      assert.equal(offline.info.fallbackReason, null);
      assert.equal(offline.info.pooling, 'cls');
    } finally {
      await offline.close();
    }
    // and with downloads turned off
    const local = await Embedder.start({ model: 'test/hub-model', allowRemote: false, cacheDir: cache });
    try {
      assert.equal(local.info.fallbackReason, null);
      assert.equal(local.info.model, 'test/hub-model');
    } finally {
      await local.close();
    }
    assert.equal(requests.length, before, 'no request to the first hub after the download');
  });

  it('falls back to the built-in model when the hub has no such model', async () => {
    const e = await Embedder.start({
      model: 'test/missing-model',
      allowRemote: true,
      remoteHost: host,
      cacheDir: path.join(tmp, 'cache2'),
    });
    try {
      assert.equal(e.info.model, 'cairn/mpnet-static');
      assert.match(
        e.info.fallbackReason ?? '',
        /^Embedding model "test\/missing-model" could not be loaded \(.+\); using the built-in offline model/,
      );
    } finally {
      await e.close();
    }
  });

  it('falls back with a network sentence when the hub is unreachable', async () => {
    const e = await Embedder.start({
      model: 'test/hub-model',
      allowRemote: true,
      remoteHost: 'http://127.0.0.1:9/',
      cacheDir: path.join(tmp, 'cache3'),
    });
    try {
      assert.equal(e.info.model, 'cairn/mpnet-static');
      assert.match(e.info.fallbackReason ?? '', /could not be downloaded, the network seems unavailable/);
    } finally {
      await e.close();
    }
  });
});

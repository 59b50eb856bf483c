/**
 * Model loading through the production path, fully offline: config-driven pooling on stand-in
 * models (see standin.ts), local model folders, and fallback to the built-in model.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BUILTIN_MODEL_ID, Embedder, builtinModelPath, isZeroVector, type EmbedderOptions } from '../../daemon/src/embed';
import { writePoolingOnlyRepo, writeStandinModel } from './standin';

const builtinDimension = () => JSON.parse(fs.readFileSync(path.join(builtinModelPath(), 'config.json'), 'utf8')).cairn.dimension as number;

let tmp: string;
let models: string; // a local models folder: <models>/<org>/<name>/...
let cache: string;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-embed-models-'));
  models = path.join(tmp, 'models');
  cache = path.join(tmp, 'cache');
  await writeStandinModel(path.join(models, 'test', 'standin-cls'), { pooling: 'cls' });
  await writeStandinModel(path.join(models, 'test', 'standin-plain')); // no pooling config
  await writeStandinModel(path.join(models, 'test', 'standin-modules'), { pooling: 'max', poolingDir: '2_CustomPooling' });
  await writeStandinModel(path.join(models, 'test', 'standin-converted'), { nameOrPath: 'upstream/original-model' });
  writePoolingOnlyRepo(path.join(models, 'upstream', 'original-model'), 'cls');
  await writeStandinModel(path.join(models, 'test', 'standin-broken'), { pooling: 'cls', withoutWeights: true });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function withEmbedder<T>(opts: EmbedderOptions, fn: (e: Embedder, logs: string[]) => Promise<T>): Promise<T> {
  const logs: string[] = [];
  const e = await Embedder.start({ allowRemote: false, cacheDir: cache, log: (m) => logs.push(m), ...opts });
  try {
    return await fn(e, logs);
  } finally {
    await e.close();
  }
}

const round = (v: Float32Array) => [...v].map((x) => Math.round(x * 1e4) / 1e4);
const S3 = Math.round((1 / Math.sqrt(3)) * 1e4) / 1e4;

describe('pooling comes from the model configuration', () => {
  it('cls from 1_Pooling/config.json', async () => {
    await withEmbedder({ model: 'test/standin-cls', modelPath: models }, async (e) => {
      assert.equal(e.info.model, 'test/standin-cls');
      assert.equal(e.info.fallbackReason, null);
      assert.equal(e.info.builtin, false);
      assert.equal(e.info.dimension, 4);
      assert.equal(e.info.pooling, 'cls');
      assert.equal(e.info.poolingSource, 'test/standin-cls/1_Pooling/config.json');
      assert.equal(e.info.dtype, 'fp32');
      const [a, b] = await e.embed(['alpha beta', 'gamma']);
      assert.deepEqual(round(a), [1, 0, 0, 0]); // the [CLS] vector
      assert.deepEqual(round(b), [1, 0, 0, 0]);
    });
  });

  it('mean by default when the model has no pooling configuration', async () => {
    await withEmbedder({ model: 'test/standin-plain', modelPath: models }, async (e) => {
      assert.equal(e.info.pooling, 'mean');
      assert.equal(e.info.poolingSource, 'default');
      const [a] = await e.embed(['alpha alpha beta']); // [CLS] + 2 alpha + beta + [SEP] = (1, 2, 1, 0), normalized
      assert.deepEqual(round(a), round(Float32Array.from([1, 2, 1, 0], (x) => x / Math.sqrt(6))));
    });
  });

  it('the Pooling folder named in modules.json', async () => {
    await withEmbedder({ model: 'test/standin-modules', modelPath: models }, async (e) => {
      assert.equal(e.info.pooling, 'max');
      assert.equal(e.info.poolingSource, 'test/standin-modules/2_CustomPooling/config.json');
      const [a] = await e.embed(['alpha alpha beta']); // max over tokens = (1, 1, 1, 0), normalized
      assert.deepEqual(round(a), [S3, S3, S3, 0]);
    });
  });

  it('the repository a conversion came from (_name_or_path) when the model has none', async () => {
    await withEmbedder({ model: 'test/standin-converted', modelPath: models }, async (e) => {
      assert.equal(e.info.pooling, 'cls');
      assert.equal(e.info.poolingSource, 'upstream/original-model/1_Pooling/config.json');
    });
  });

  it('the pooling option overrides the configuration', async () => {
    await withEmbedder({ model: 'test/standin-cls', modelPath: models, pooling: 'mean' }, async (e) => {
      assert.equal(e.info.pooling, 'mean');
      assert.equal(e.info.poolingSource, 'option');
    });
  });

  it('a model folder path works as the model id', async () => {
    await withEmbedder({ model: path.join(models, 'test', 'standin-cls') }, async (e) => {
      assert.equal(e.info.pooling, 'cls');
      assert.equal(e.info.fallbackReason, null);
      const [a, z] = await e.embed(['gamma', '']);
      assert.deepEqual(round(a), [1, 0, 0, 0]);
      assert.ok(isZeroVector(z), 'blank text gives the zero vector for any model');
    });
  });
});

describe('fallback to the built-in model', () => {
  it('when the configured hub id is not available locally and remote loading is off', async () => {
    await withEmbedder({ model: 'Xenova/all-MiniLM-L6-v2' }, async (e, logs) => {
      assert.equal(e.info.configuredModel, 'Xenova/all-MiniLM-L6-v2');
      assert.equal(e.info.model, BUILTIN_MODEL_ID);
      assert.equal(e.info.builtin, true);
      assert.equal(e.info.dimension, builtinDimension());
      const reason = e.info.fallbackReason ?? '';
      assert.match(reason, /^Embedding model "Xenova\/all-MiniLM-L6-v2" is not available locally/);
      assert.match(reason, /downloading models is turned off/);
      assert.match(reason, /using the built-in offline model cairn\/mpnet-static instead\.$/);
      assert.ok(logs.includes(reason), 'the reason is logged');
      const [v] = await e.embed(['still works']);
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-4);
    });
  });

  it('when the model files are broken', async () => {
    await withEmbedder({ model: 'test/standin-broken', modelPath: models }, async (e) => {
      assert.equal(e.info.model, BUILTIN_MODEL_ID);
      assert.match(e.info.fallbackReason ?? '', /^Embedding model "test\/standin-broken" .*built-in offline model/);
    });
  });

  it('without the options meant for the configured model (dtype, pooling)', async () => {
    await withEmbedder({ model: 'Xenova/bge-small-en-v1.5', dtype: 'fp16', pooling: 'cls' }, async (e) => {
      assert.equal(e.info.model, BUILTIN_MODEL_ID);
      assert.equal(e.info.dtype, 'int8');
      assert.equal(e.info.pooling, 'weightedmean');
      assert.match(e.info.poolingSource, /^static model/);
    });
  });

  it('when a model folder config.json is not JSON, or not a JSON object (read once, never twice)', async () => {
    for (const [name, text, why] of [
      ['bad-json', 'not json', /config.json is not valid JSON/],
      ['bad-array', '[1, 2]', /config.json is not a JSON object/],
    ] as const) {
      const dir = path.join(tmp, name);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'config.json'), text);
      await withEmbedder({ model: dir }, async (e) => {
        assert.equal(e.info.model, BUILTIN_MODEL_ID);
        assert.match(e.info.fallbackReason ?? '', why);
        assert.match(e.info.fallbackReason ?? '', /using the built-in offline model cairn\/mpnet-static instead\.$/);
      });
    }
  });

  it('when a model folder path does not exist', async () => {
    await withEmbedder({ model: path.join(tmp, 'nowhere') }, async (e) => {
      assert.equal(e.info.model, BUILTIN_MODEL_ID);
      assert.ok(e.info.fallbackReason);
    });
  });

  it('start fails clearly when not even the built-in model can be loaded', async () => {
    await assert.rejects(
      Embedder.start({ model: 'Xenova/all-MiniLM-L6-v2', allowRemote: false, cacheDir: cache, builtinPath: path.join(tmp, 'no-builtin') }),
      /embedding model could not be loaded: built-in model cairn\/mpnet-static not found at .*no-builtin/,
    );
  });
});

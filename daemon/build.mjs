// Bundles the daemon/CLI and the embedding worker with esbuild. Native and ONNX
// packages stay external: they are loaded from node_modules at run time. Then builds
// the full-text ranking extension (native/build.mjs).
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { buildRankingExtension } from './native/build.mjs';

const external = ['better-sqlite3', 'sqlite-vec', '@huggingface/transformers', 'onnxruntime-node', 'sharp', 'pg-native'];
const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: true, external, logLevel: 'warning' };

await build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cairn.js' });
if (existsSync('src/embed/worker.ts')) {
  await build({ ...common, entryPoints: ['src/embed/worker.ts'], outfile: 'dist/embed-worker.js' });
}
buildRankingExtension();

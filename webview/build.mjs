// Bundles the dashboard webview with esbuild into extension/out/webview/ (the extension serves it from there
// and the .vsix carries it):
//   dashboard.js   the UI (Preact), loaded by the panel's HTML under a nonce
//   graph.js       the relations graph (cytoscape), loaded on demand the first time a graph opens
//   dashboard.css  styles from VS Code's theme variables, with @vscode/codicons' classes
//   codicon.ttf    the codicon font (dashboard.css loads it; the panel's CSP allows fonts from this folder)
// Prints each file's size (and gzip size) so the bundle stays small.
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, '..', 'extension', 'out', 'webview');
const common = {
  bundle: true,
  platform: 'browser',
  target: 'es2022',
  format: 'iife',
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
  absWorkingDir: here,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
};
await Promise.all([
  build({ ...common, entryPoints: ['src/main.tsx'], outfile: path.join(out, 'dashboard.js') }),
  build({ ...common, entryPoints: ['src/graph.ts'], outfile: path.join(out, 'graph.js') }),
  build({
    ...common,
    entryPoints: ['src/styles.css'],
    outfile: path.join(out, 'dashboard.css'),
    loader: { '.ttf': 'file' },
    assetNames: '[name]',
  }),
]);
for (const f of ['dashboard.js', 'graph.js', 'dashboard.css', 'codicon.ttf']) {
  const b = readFileSync(path.join(out, f));
  console.log(`webview: ${f} ${(b.length / 1024).toFixed(1)} KiB (${(gzipSync(b).length / 1024).toFixed(1)} KiB gzip)`);
}

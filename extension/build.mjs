// Bundles the extension with esbuild.
//   out/extension.js         the extension (vscode external; vscode-languageclient and the shared
//                            protocol module bundled in; nothing native: the daemon runs in its own process)
//   out/test/index.js        mocha entry run inside a real extension host (extensionTestsPath)
import { build, context } from 'esbuild';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const watch = process.argv.includes('--watch');

// The shared protocol (daemon/src/protocol) and vscode-languageclient both import vscode-jsonrpc, and npm
// installs two copies (8.2.1 for the daemon, 8.2.0 pinned by the language client). vscode-jsonrpc compares
// ParameterStructures by identity, so a bundle holding both copies breaks by-name params: resolve every
// import of it to one copy.
const jsonrpcRoot = path.dirname(require.resolve('vscode-jsonrpc/package.json', { paths: [path.join(here, '..', 'daemon')] }));
const oneJsonRpc = {
  name: 'one-vscode-jsonrpc',
  setup(b) {
    b.onResolve({ filter: /^vscode-jsonrpc(\/.*)?$/ }, (args) => {
      const sub = args.path.slice('vscode-jsonrpc'.length);
      return { path: require.resolve(sub ? path.join(jsonrpcRoot, sub) : jsonrpcRoot) };
    });
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  absWorkingDir: here,
  plugins: [oneJsonRpc],
};

const configs = [
  { ...common, entryPoints: ['src/main.ts'], outfile: 'out/extension.js', external: ['vscode'], minify: !watch },
  // Extension-host tests: mocha stays external (resolved from node_modules of the checkout, as in any dev host).
  { ...common, entryPoints: ['src/test/index.ts'], outfile: 'out/test/index.js', external: ['vscode', 'mocha'] },
];

if (watch) {
  for (const c of configs) await (await context(c)).watch();
  console.log('watching…');
} else {
  await Promise.all(configs.map((c) => build(c)));
}

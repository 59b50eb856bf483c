// Writes `contributes.configuration` in package.json from the one settings schema
// (daemon/src/protocol/settings.ts). With --check it only compares and exits 1 on drift.
//
//   node scripts/sync-settings.mjs          regenerate
//   node scripts/sync-settings.mjs --check  fail when package.json differs from the schema
import { buildSync } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const extDir = path.join(here, '..');
const settingsTs = path.join(extDir, '..', 'daemon', 'src', 'protocol', 'settings.ts');

/** Settings that name executables or data locations, or that loosen what agents see: never taken from a workspace's own settings file. */
const MACHINE = new Set(['cairn.daemon.path', 'cairn.daemon.nodePath', 'cairn.agents.allowSecrets']);
const MACHINE_OVERRIDABLE = new Set(['cairn.store.path', 'cairn.embeddings.modelPath']);

export function loadSettings() {
  const out = buildSync({ entryPoints: [settingsTs], bundle: true, format: 'cjs', platform: 'node', write: false, logLevel: 'silent' });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', out.outputFiles[0].text)(mod, mod.exports, createRequire(settingsTs));
  return mod.exports.Settings;
}

export function configurationFor(settings) {
  const properties = {};
  let order = 0;
  for (const [key, def] of Object.entries(settings)) {
    const p = { type: def.type, default: def.default, markdownDescription: def.description };
    if (def.env) p.markdownDescription += ` Environment fallback: \`${def.env}\`.`;
    if (def.minimum !== undefined) p.minimum = def.minimum;
    if (def.maximum !== undefined) p.maximum = def.maximum;
    if (def.enum) p.enum = def.enum;
    if (MACHINE.has(key)) p.scope = 'machine';
    else if (MACHINE_OVERRIDABLE.has(key)) p.scope = 'machine-overridable';
    p.order = order++;
    properties[key] = p;
  }
  return { title: 'Cairn', properties };
}

const pkgPath = path.join(extDir, 'package.json');
const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
const want = configurationFor(loadSettings());
const have = pkg.contributes.configuration;
if (process.argv.includes('--check')) {
  if (JSON.stringify(have) !== JSON.stringify(want)) {
    console.error('extension/package.json contributes.configuration is out of date with daemon/src/protocol/settings.ts.');
    console.error('Run: npm run sync-settings -w extension');
    process.exit(1);
  }
  console.log(`settings: ${Object.keys(want.properties).length} keys match the schema`);
} else {
  pkg.contributes.configuration = want;
  writeFileSync(pkgPath, JSON.stringify(pkg, null, 2) + '\n');
  console.log(`settings: wrote ${Object.keys(want.properties).length} keys to package.json`);
}

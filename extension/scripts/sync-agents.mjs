// Writes `contributes.languageModelTools` in package.json from the agent tool definitions
// (src/agents/toolDefs.ts, which takes names, model descriptions and input schemas from the MCP server's
// tools in daemon/src/mcp/tools.ts). With --check it only compares and exits 1 on drift.
//
//   node scripts/sync-agents.mjs          regenerate
//   node scripts/sync-agents.mjs --check  fail when package.json differs from the definitions
import { buildSync } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const extDir = path.join(here, '..');
const toolDefs = path.join(extDir, 'src', 'agents', 'toolDefs.ts');
const pkgPath = path.join(extDir, 'package.json');

export function loadContribution() {
  const out = buildSync({
    entryPoints: [toolDefs],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    write: false,
    logLevel: 'silent',
    external: ['vscode'],
  });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', out.outputFiles[0].text)(mod, mod.exports, createRequire(toolDefs));
  return mod.exports.languageModelToolsContribution();
}

const text = readFileSync(pkgPath, 'utf8');
const pkg = JSON.parse(text);
const want = loadContribution();
if (process.argv.includes('--check')) {
  if (JSON.stringify(pkg.contributes?.languageModelTools) !== JSON.stringify(want)) {
    console.error('package.json contributes.languageModelTools differs from src/agents/toolDefs.ts: run node scripts/sync-agents.mjs');
    process.exit(1);
  }
  console.log('languageModelTools in sync');
} else {
  pkg.contributes.languageModelTools = want;
  writeFileSync(pkgPath, JSON.stringify(pkg, null, 2) + '\n');
  console.log(`wrote ${want.length} language-model tools to package.json`);
}

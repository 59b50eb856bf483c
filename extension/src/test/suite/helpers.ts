/** Shared helpers of the extension-host suites. */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Memory } from '../../../../daemon/src/protocol/types';
import type { Ctx } from '../../ctx';
import type { CairnApi } from '../../main';
import type { Node } from '../../memoryTree';
import type { Ui } from '../../ui';

export const EXTENSION_ID = 'cairn.cairn';

/** Collected across suites; index.ts prints and saves them. */
export const results = {
  failures: [] as { test: string; error: string }[],
  metrics: {} as Record<string, number | string>,
};

export async function api(): Promise<CairnApi> {
  const ext = vscode.extensions.getExtension<CairnApi>(EXTENSION_ID);
  if (!ext) throw new Error(`extension ${EXTENSION_ID} is not installed in this host`);
  return ext.isActive ? ext.exports : await ext.activate();
}

export async function ctx(): Promise<Ctx> {
  return (await api()).ctx;
}

/**
 * A value the harness (test/e2e/run.sh, electron.js) must pass in the environment. Missing, it throws: an expected
 * value that falls back to the actual one would make its assertion a tautology.
 */
export function harnessEnv(name: 'CAIRN_E2E_EXPECT_PROJECT' | 'CAIRN_E2E_EXPECT_DB' | 'CAIRN_E2E_SEEDED_KEY'): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the extension-host suites through test/e2e/run.sh or electron.js`);
  return v;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `fn` until it returns a truthy value; fail with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000, everyMs = 100): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}

/** The repository checkout the development host runs from (extension/..). */
export function repoRoot(c: Ctx): string {
  return path.resolve(c.extension.extensionPath, '..');
}

/** Run the Cairn CLI of the checkout, as a user in a terminal would (same environment, same default store). */
export function cli(c: Ctx, ...args: string[]): Promise<string> {
  const script = path.join(repoRoot(c), 'daemon', 'bin', 'cairn.js');
  return new Promise((resolve, reject) =>
    execFile(process.env.CAIRN_E2E_NODE || 'node', [script, ...args], { timeout: 30_000, env: process.env }, (err, stdout, stderr) =>
      err ? reject(new Error(`cairn ${args.join(' ')} failed: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

export interface Captured {
  info: string[];
  warn: string[];
  error: string[];
  restore(): void;
}

/**
 * Replace the extension's prompts: input boxes answer from `inputs` in order, quick picks choose the
 * item whose label is the next of `picks`, confirmations answer `confirm`. Messages are captured.
 */
export function stubUi(
  c: Ctx,
  o: { inputs?: (string | undefined)[]; picks?: string[]; confirm?: boolean; actions?: string[] } = {},
): Captured {
  const saved = c.ui;
  const inputs = [...(o.inputs ?? [])];
  const picks = [...(o.picks ?? [])];
  const cap: Captured = { info: [], warn: [], error: [], restore: () => (c.ui = saved) };
  const answer = (list: string[]) => (m: string) => {
    list.push(m);
    return Promise.resolve(o.actions?.shift());
  };
  const ui: Ui = {
    info: answer(cap.info),
    warn: answer(cap.warn),
    error: answer(cap.error),
    confirm: () => Promise.resolve(o.confirm ?? true),
    inputBox: (opts) => {
      if (!inputs.length) throw new Error(`unexpected input box: ${opts.title ?? opts.prompt}`);
      return Promise.resolve(inputs.shift());
    },
    quickPick: async (items) => {
      const want = picks.shift();
      return (await items).find((i) => i.label === want);
    },
    saveDialog: () => Promise.resolve(undefined),
    openDialog: () => Promise.resolve(undefined),
  };
  c.ui = ui;
  return cap;
}

/** Flatten the tree (root → namespaces → memories) as the view would show it fully expanded. */
export async function treeNodes(c: Ctx): Promise<Node[]> {
  const out: Node[] = [];
  const walk = async (n?: Node) => {
    const kids = await c.tree.getChildren(n);
    for (const k of kids) {
      out.push(k);
      if (k.kind !== 'memory' && k.kind !== 'message') await walk(k);
    }
  };
  await walk();
  return out;
}

export async function treeMemories(c: Ctx): Promise<Memory[]> {
  return (await treeNodes(c)).flatMap((n) => (n.kind === 'memory' ? [n.memory] : []));
}

/** A fresh unique key per test run. */
let n = 0;
export const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${n++}`;

export function workspaceFile(rel: string): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error('the e2e tests need a workspace folder');
  return vscode.Uri.joinPath(folder.uri, rel);
}

export function record(name: string, value: number | string): void {
  results.metrics[name] = value;
  console.log(`[metric] ${name} = ${value}`);
}

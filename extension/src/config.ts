/**
 * Typed access to the `cairn.*` settings. The keys, types and defaults come from the one schema
 * (daemon/src/protocol/settings.ts); package.json's `contributes.configuration` is generated from it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { namespaceProblem } from '../../daemon/src/protocol/namespace';
import { processEnv, Settings, type SettingDef, type SettingKey } from '../../daemon/src/protocol/settings';

type SettingValue<K extends SettingKey> = (typeof Settings)[K]['type'] extends 'boolean'
  ? boolean
  : (typeof Settings)[K]['type'] extends 'number'
    ? number
    : string;

export interface SettingProblem {
  key: SettingKey;
  message: string;
}

export class Config {
  /** Read one setting; a value of the wrong type falls back to the schema default. */
  get<K extends SettingKey>(key: K): SettingValue<K> {
    const def = Settings[key];
    const v = vscode.workspace.getConfiguration().get<unknown>(key);
    return (typeof v === def.type ? v : def.default) as SettingValue<K>;
  }

  /** True when the user set the key anywhere (user, workspace or folder), not just the default. */
  isSet(key: SettingKey): boolean {
    const i = vscode.workspace.getConfiguration().inspect(key);
    return !!i && (i.globalValue !== undefined || i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
  }

  get storePath(): string {
    return expandHome(this.get('cairn.store.path'));
  }
  get daemonPath(): string {
    return expandHome(this.get('cairn.daemon.path'));
  }
  get nodePath(): string {
    return expandHome(this.get('cairn.daemon.nodePath'));
  }
  get hoverEnabled(): boolean {
    return this.get('cairn.hover.enabled');
  }
  get includeUser(): boolean {
    return this.get('cairn.scope.includeUser');
  }

  /**
   * Environment for a daemon this extension starts: settings the user changed from their default are
   * passed through their documented `CAIRN_*` variables; everything else is inherited unchanged.
   */
  daemonEnv(base: NodeJS.ProcessEnv = processEnv()): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...base };
    for (const key of Object.keys(Settings) as SettingKey[]) {
      const def: SettingDef = Settings[key];
      if (!def.env || !this.isSet(key) || key === 'cairn.store.path' || key === 'cairn.daemon.path' || key === 'cairn.daemon.nodePath')
        continue;
      const v = this.get(key);
      env[def.env] = typeof v === 'boolean' ? (v ? '1' : '0') : String(v);
    }
    return env;
  }

  /** Every setting problem a user should hear about (bad namespace, missing executables, out-of-range numbers). */
  validate(): SettingProblem[] {
    const problems: SettingProblem[] = [];
    const ns = this.get('cairn.scope.projectNamespace');
    if (ns) {
      const p = namespaceProblem(ns);
      if (p) problems.push({ key: 'cairn.scope.projectNamespace', message: p });
    }
    for (const key of ['cairn.daemon.path', 'cairn.daemon.nodePath'] as const) {
      const v = expandHome(this.get(key));
      if (v && path.isAbsolute(v) && !fs.existsSync(v)) problems.push({ key, message: `${v} does not exist` });
      if (v && !path.isAbsolute(v) && v.includes('/')) problems.push({ key, message: `${v} must be an absolute path` });
    }
    const store = this.storePath;
    if (store && !path.isAbsolute(store)) problems.push({ key: 'cairn.store.path', message: `${store} must be an absolute path` });
    for (const key of Object.keys(Settings) as SettingKey[]) {
      const def: SettingDef = Settings[key];
      const raw = vscode.workspace.getConfiguration().get<unknown>(key);
      if (raw !== undefined && typeof raw !== def.type) {
        problems.push({ key, message: `must be a ${def.type}, got ${JSON.stringify(raw)}` });
        continue;
      }
      if (def.type === 'number' && typeof raw === 'number') {
        if (def.minimum !== undefined && raw < def.minimum) problems.push({ key, message: `${raw} is below the minimum ${def.minimum}` });
        if (def.maximum !== undefined && raw > def.maximum) problems.push({ key, message: `${raw} is above the maximum ${def.maximum}` });
      }
    }
    return problems;
  }
}

export function expandHome(p: string): string {
  if (p === '~') return os.homedir();
  if (p.startsWith('~/')) return path.join(os.homedir(), p.slice(2));
  return p;
}

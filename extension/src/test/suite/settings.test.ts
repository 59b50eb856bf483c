import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { Settings, type SettingDef } from '../../../../daemon/src/protocol/settings';
import { ctx, stubUi, waitFor } from './helpers';

suite('settings', () => {
  test('VS Code registered exactly the schema keys, with its types and defaults', async () => {
    const c = await ctx();
    const props = c.extension.extension.packageJSON.contributes.configuration.properties as Record<string, { type: string }>;
    assert.deepEqual(Object.keys(props).sort(), Object.keys(Settings).sort());
    const cfg = vscode.workspace.getConfiguration();
    for (const [key, def] of Object.entries(Settings) as [string, SettingDef][]) {
      assert.equal(props[key].type, def.type, key);
      assert.deepEqual(cfg.inspect(key)?.defaultValue, def.default, `${key} default as registered`);
    }
  });

  test('invalid settings are reported with the key and the reason', async () => {
    const c = await ctx();
    const cfg = vscode.workspace.getConfiguration('cairn');
    const cap = stubUi(c);
    try {
      await cfg.update('scope.projectNamespace', 'Not A Namespace', vscode.ConfigurationTarget.Workspace);
      await cfg.update('injection.k', 500, vscode.ConfigurationTarget.Global);
      const problems = c.config.validate();
      assert.ok(
        problems.some((p) => p.key === 'cairn.scope.projectNamespace' && /must match/.test(p.message)),
        JSON.stringify(problems),
      );
      assert.ok(
        problems.some((p) => p.key === 'cairn.injection.k' && /maximum 50/.test(p.message)),
        JSON.stringify(problems),
      );
      const warned = await waitFor('a warning naming the settings', () => cap.warn.find((w) => w.includes('cairn.scope.projectNamespace')));
      assert.match(warned, /invalid/);
      // An invalid override is ignored: the namespace is still derived from the workspace.
      assert.match(c.project?.namespace ?? '', /^project\./);
    } finally {
      await cfg.update('scope.projectNamespace', undefined, vscode.ConfigurationTarget.Workspace);
      await cfg.update('injection.k', undefined, vscode.ConfigurationTarget.Global);
      cap.restore();
    }
    assert.deepEqual(c.config.validate(), []);
  });

  test('a valid per-workspace project namespace overrides the derived one', async () => {
    const c = await ctx();
    const cfg = vscode.workspace.getConfiguration('cairn');
    await cfg.update('scope.projectNamespace', 'team.override', vscode.ConfigurationTarget.Workspace);
    try {
      assert.deepEqual(c.project, { namespace: 'team.override', source: 'setting' });
    } finally {
      await cfg.update('scope.projectNamespace', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });
});

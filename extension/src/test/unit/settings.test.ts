import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { suite, test } from 'node:test';
import { Settings } from '../../../../daemon/src/protocol/settings';

/** package.json's contributes.configuration must declare exactly the schema's keys, types and defaults. */
suite('settings schema', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const props: Record<string, { type: string; default: unknown; minimum?: number; maximum?: number; enum?: string[] }> =
    pkg.contributes.configuration.properties;

  test('same keys', () => {
    assert.deepEqual(Object.keys(props).sort(), Object.keys(Settings).sort());
  });
  test('same types, defaults and bounds', () => {
    for (const [key, def] of Object.entries(Settings) as [
      string,
      { type: string; default: unknown; minimum?: number; maximum?: number; enum?: string[] },
    ][]) {
      assert.equal(props[key].type, def.type, `${key} type`);
      assert.deepEqual(props[key].default, def.default, `${key} default`);
      assert.equal(props[key].minimum, def.minimum, `${key} minimum`);
      assert.equal(props[key].maximum, def.maximum, `${key} maximum`);
      assert.deepEqual(props[key].enum, def.enum, `${key} enum`);
    }
  });
  test('executable paths cannot come from a workspace', () => {
    assert.equal((props['cairn.daemon.path'] as { scope?: string }).scope, 'machine');
    assert.equal((props['cairn.daemon.nodePath'] as { scope?: string }).scope, 'machine');
  });
});

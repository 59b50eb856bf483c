/** The protocol module is the single source: the checked-in JSON Schema and docs/protocol.md must match it. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { renderProtocolSchema } from '../../daemon/tools/protocol-schema';
import { ErrorCodes } from '../../daemon/src/protocol/errors';
import { Notifications, Requests } from '../../daemon/src/protocol/methods';
import { namespaceProblem, slugify } from '../../daemon/src/protocol/namespace';
import { ROOT } from '../helpers';

describe('protocol definition', () => {
  it('daemon/schema/protocol.schema.json is up to date (npm run gen:schema -w daemon)', () => {
    const file = path.join(ROOT, 'daemon', 'schema', 'protocol.schema.json');
    assert.equal(fs.readFileSync(file, 'utf8'), renderProtocolSchema());
  });

  it('every method name is declared once', () => {
    const names = [...Object.values(Requests), ...Object.values(Notifications)].map((d) => d.method);
    assert.equal(new Set(names).size, names.length);
  });

  it('docs/protocol.md documents every method, notification and error code', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'protocol.md'), 'utf8');
    for (const d of [...Object.values(Requests), ...Object.values(Notifications)])
      assert.ok(doc.includes(`### ${d.method}\n`), `docs/protocol.md lacks a section "### ${d.method}"`);
    for (const [name, code] of Object.entries(ErrorCodes))
      assert.ok(doc.includes(`| ${code} | \`${name}\` |`), `docs/protocol.md lacks error ${name} (${code})`);
    const documented = [...doc.matchAll(/^### ([a-z]+(?:\/[a-zA-Z]+)?)$/gm)].map((m) => m[1]);
    const declared = new Set([...Object.values(Requests), ...Object.values(Notifications)].map((d) => d.method));
    for (const m of documented) assert.ok(declared.has(m), `docs/protocol.md documents ${m}, which the protocol does not declare`);
  });

  it('error codes stay outside the JSON-RPC and LSP reserved ranges', () => {
    for (const code of Object.values(ErrorCodes)) assert.ok(code > 0 && !(code >= -32768 && code <= -32000));
  });

  it('namespace grammar', () => {
    for (const ok of ['user', 'user.preferences', 'project.cairn.branch.feature-x', 'project.my_app', 'a1.b-2'])
      assert.equal(namespaceProblem(ok), null, ok);
    for (const bad of [
      '',
      '.',
      'a..b',
      'a.',
      '.a',
      'A',
      'a b',
      'a.*',
      'a.%',
      'a/b',
      '-a',
      '_a',
      'a'.repeat(65),
      Array(17).fill('a').join('.'),
    ])
      assert.notEqual(namespaceProblem(bad), null, bad);
    assert.equal(slugify('My Repo.git'), 'my-repo');
    assert.equal(slugify('***'), 'workspace');
  });
});

/** The dashboard's error sentences, made from the daemon's real errors: a person reads a sentence, the code stays in the details. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCodes, type CairnErrorData } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { WebviewError } from '../../daemon/src/protocol/webview';
import { describeProblem, fieldLabel, sentence } from '../../webview/src/errors';
import { tempCore } from '../helpers';

/** The error a daemon call fails with, as the extension hands it to the webview. */
async function failure(p: Promise<unknown>): Promise<WebviewError> {
  try {
    await p;
  } catch (e) {
    const data = (e as { data: CairnErrorData }).data;
    return { code: ErrorCodes[data.name], name: data.name, message: (e as Error).message, data };
  }
  throw new Error('the call succeeded');
}

/** A sentence for a person: capitalised, one full stop at the end, no protocol words or zod phrasing. */
function assertSentence(text: string) {
  assert.match(text, /^[A-Z"]/, `starts with a capital: ${text}`);
  assert.match(text, /[.]$/, `ends with a full stop: ${text}`);
  for (const raw of [
    /InvalidParams|InvalidFilter|NotFound|VersionConflict|RejectedValue|memory\/upsert|Invalid input|received|Too big|>=|<=|\[\d\]/,
  ])
    assert.doesNotMatch(text, raw, `no protocol words: ${text}`);
}

describe('webview error sentences', () => {
  it('says "Importance must be a number between 0 and 1" for the issue\'s error, keeping the raw error as details', async () => {
    const c = tempCore();
    try {
      const e = await failure(c.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'v', importance: 'high' as never }));
      assert.equal(e.message, 'importance must be a number, not a string'); // the issue saw zod's words here; the daemon now says this
      const p = describeProblem(e);
      assert.equal(p.text, 'Importance must be a number between 0 and 1.');
      assert.equal(p.details, 'InvalidParams (1001): importance must be a number, not a string');
      // A daemon from before the plain-words messages still gets the same sentence.
      const old = { ...e, message: 'memory/upsert: importance: Invalid input: expected number, received string' };
      assert.equal(describeProblem(old).text, 'Importance must be a number between 0 and 1.');
    } finally {
      c.close();
    }
  });

  it('turns every validation and state error of the daemon into a sentence naming the field as the form does', async () => {
    const c = tempCore();
    try {
      const base = { namespace: 'project.a', key: 'k', value: 'v' };
      const up = (x: Record<string, unknown>) => failure(c.core.call(R.upsert, { ...base, ...x } as never));
      const cases: [Promise<WebviewError>, string][] = [
        [up({ confidence: 'sure' }), 'Confidence must be a number between 0 and 1.'],
        [up({ validFrom: 'next tuesday' }), 'Valid from must be a date and time such as 2026-05-01T09:00:00Z, or empty.'],
        [up({ expiresAt: '2026-13-01' }), 'Expires at must be a date and time such as 2026-05-01T09:00:00Z, or empty.'],
        [up({ tags: ['x'.repeat(65)] }), 'Tag 1 can be at most 64 characters long.'],
        [up({ tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }), 'Tags can hold at most 64 entries.'],
        [up({ anchors: [{ path: '' }] }), 'The path of anchor 1 cannot be empty.'],
        [up({ anchors: [{ path: 'a', startLine: 0 }] }), 'The start line of anchor 1 must be 1 or more.'],
        [up({ kind: 'bogus' }), 'Kind must be one of fact, preference, decision, procedure, episode, note.'],
        [up({ properties: { ticket: 'x'.repeat(2000) } }), 'Property "ticket" can be at most 1024 characters long.'],
        [up({ value: '' }), 'The value cannot be empty.'],
        [
          up({ namespace: 'Bad Path' }),
          'That namespace name is not valid: use lowercase letters, digits, "-" and "_", in parts separated by dots.',
        ],
        [failure(c.core.call(R.get, { id: 'no-such-id' })), 'Cairn cannot find that memory; it may have been deleted or purged.'],
        [
          failure(c.core.call(R.search, { query: 'x', filter: { and: 3 } } as never)),
          'One of the filters is not valid; check the tags, sources and dates.',
        ],
      ];
      const m = (await c.core.call(R.upsert, base)).memory;
      cases.push(
        [
          failure(c.core.call(R.upsert, { ...base, value: 'w', ifVersion: 9 })),
          'This memory changed elsewhere (it is now version 1); reload it to see the change, then edit again.',
        ],
        [failure(c.core.call(R.restore, { id: m.id })), 'This memory is not deleted, so there is nothing to restore.'],
        [failure(c.core.call(R.link, { from: m.id, to: m.id, type: 'relates_to' })), 'A memory cannot link to itself.'],
      );
      for (const [p, want] of cases) {
        const e = await p;
        const got = describeProblem(e);
        assert.equal(got.text, want, e.message);
        assertSentence(got.text);
        assert.ok(got.details?.startsWith(`${e.name} (${e.code}): `), 'the code stays in the details line');
      }
      await c.core.call(R.forget, { id: m.id, actor: 'test' });
      const forgotten = describeProblem(await failure(c.core.call(R.upsert, { ...base, key: 'k2' })));
      assert.equal(forgotten.text, 'This value was forgotten in this namespace, so Cairn will not store it again.');
      const deleted = describeProblem(await failure(c.core.call(R.upsert, { ...base, value: 'other' })));
      assert.equal(deleted.text, 'This memory was deleted by test; restore it before changing it.');
    } finally {
      c.close();
    }
  });

  it("has a sentence for every error name in the closed set, and for the host's own errors", () => {
    for (const name of Object.keys(ErrorCodes) as (keyof typeof ErrorCodes)[]) {
      const p = describeProblem({ code: ErrorCodes[name], name, message: 'raw words', data: { name } });
      assertSentence(p.text);
      assert.equal(p.details, `${name} (${ErrorCodes[name]}): raw words`);
    }
    const host = (name: keyof typeof ErrorCodes, field: string, message: string) =>
      describeProblem({ code: ErrorCodes[name], name, message, data: { name, field } }).text;
    assert.equal(
      host('NotFound', 'anchor.path', 'cannot open src/gone.py'),
      'Cairn cannot open the anchored file; it may have been moved, renamed or deleted.',
    );
    assert.equal(host('NotFound', 'token', 'that import preview is gone'), 'That import preview is gone; choose the file again.');
    assert.equal(host('InvalidParams', 'file', 'x.jsonl: line 3 is not JSON'), 'The file is not a Cairn export: line 3 is not JSON.');
    assert.equal(
      describeProblem({ code: 1013, name: 'Unavailable', message: 'did not answer', data: { name: 'Unavailable', sent: true } }).text,
      'The Cairn daemon did not answer in time; the change may still have been made, so reload before trying again.',
    );
  });

  it('labels nested fields and makes any text a sentence', () => {
    assert.equal(fieldLabel('anchors[2]'), 'Anchor 3');
    assert.equal(fieldLabel('anchors[0].symbol'), 'The symbol of anchor 1');
    assert.equal(fieldLabel('somethingNew'), 'The field "somethingNew"');
    assert.equal(sentence('  graph bundle did not load '), 'Graph bundle did not load.');
    assert.equal(sentence('Done!'), 'Done!');
    assert.equal(sentence(''), 'Something went wrong.');
  });
});

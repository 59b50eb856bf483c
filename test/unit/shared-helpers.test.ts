/** The helpers every surface shares (daemon/src/text/format.ts, daemon/src/wait.ts). */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeMarkdown, oneLine } from '../../daemon/src/text/format';
import { sleep, withTimeout } from '../../daemon/src/wait';

test('oneLine folds whitespace and cuts with an ellipsis', () => {
  assert.equal(oneLine('  a\n\tb   c ', 10), 'a b c');
  assert.equal(oneLine('abcdefghij', 10), 'abcdefghij');
  assert.equal(oneLine('abcdefghijk', 10), 'abcdefghi…');
  assert.equal(oneLine('abcdefghijk', 10).length, 10);
});

test('escapeMarkdown escapes inline Markdown characters everywhere and block markers at line starts', () => {
  const inline = '\\`*_[]<>#|~&$';
  assert.equal(escapeMarkdown(inline), [...inline].map((c) => '\\' + c).join(''));
  // Punctuation that is only syntax at a line start stays as it is inside a line: keys and namespaces read normally.
  assert.equal(
    escapeMarkdown('project.sample-app/retry-policy (v2) + more = 1. done!'),
    'project.sample-app/retry-policy (v2) + more = 1. done!',
  );
  assert.equal(
    escapeMarkdown('- item\n  + item\n1. first\n2) second\n===\n# title'),
    '\\- item\n  \\+ item\n1\\. first\n2\\) second\n\\===\n\\# title',
  );
  assert.equal(
    escapeMarkdown('**bold** [link](http://x) $(alert) <b>&amp;'),
    '\\*\\*bold\\*\\* \\[link\\](http://x) \\$(alert) \\<b\\>\\&amp;',
  );
});

test('withTimeout: the promise when it settles first, else the fallback, or the thrown error', async () => {
  assert.equal(await withTimeout(Promise.resolve('fast'), 10_000, () => 'fallback'), 'fast');
  const never = new Promise<string>(() => {});
  assert.equal(await withTimeout(never, 1, () => 'fallback'), 'fallback');
  await assert.rejects(
    withTimeout(never, 1, () => {
      throw new Error('timed out');
    }),
    /timed out/,
  );
  await assert.rejects(
    withTimeout(Promise.reject(new Error('own failure')), 10_000, () => 'fallback'),
    /own failure/,
  );
});

test('sleep resolves', async () => {
  assert.equal(await sleep(1), undefined);
});

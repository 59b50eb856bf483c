/** The wording of a store's free pages, shared by `cairn status`, the extension's status document and the dashboard. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeFree, FREE_MENTION_BYTES } from '../../daemon/src/protocol/store-space';

test('free pages are mentioned from a MiB on, with what an old store does with them', () => {
  assert.equal(describeFree(undefined), '', 'a daemon that does not report free pages');
  assert.equal(describeFree({ bytes: FREE_MENTION_BYTES - 4096, reclaims: true }), '');
  assert.equal(describeFree({ bytes: FREE_MENTION_BYTES, reclaims: true }), ', 1024 KiB free');
  assert.equal(
    describeFree({ bytes: 3 * FREE_MENTION_BYTES, reclaims: false }),
    ', 3072 KiB free (reused by later writes; not given back in a store this old)',
  );
});

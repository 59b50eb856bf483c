import * as assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { fieldChanges, lineDiff } from '../../diff';

suite('history diff', () => {
  test('line diff keeps common lines and marks changes', () => {
    assert.deepEqual(lineDiff('a\nb\nc', 'a\nB\nc\nd'), ['  a', '- b', '+ B', '  c', '+ d']);
    assert.deepEqual(lineDiff('same', 'same'), ['  same']);
    assert.deepEqual(lineDiff('', 'new'), ['- ', '+ new']);
  });
  test('huge inputs degrade to remove-all/add-all', () => {
    assert.deepEqual(lineDiff('a\nb', 'c', 1), ['- a', '- b', '+ c']);
  });
  test('field changes', () => {
    assert.deepEqual(fieldChanges({ kind: 'note', tags: ['a'] }, { kind: 'fact', tags: ['a'] }, ['kind', 'tags']), [
      'kind: "note" → "fact"',
    ]);
    assert.deepEqual(fieldChanges(null, { kind: 'fact' }, ['kind']), []);
  });
});

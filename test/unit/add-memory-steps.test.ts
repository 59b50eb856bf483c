/** "Cairn: Add Memory": one step numbering for every prompt, and the kind Enter takes is the kind the picker names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADD_MEMORY_STEPS, DEFAULT_KIND, kindItems, parseTags, stepTitle } from '../../extension/src/add-memory-steps';
import { MEMORY_KINDS } from '../../daemon/src/protocol/types';

describe('Add Memory steps', () => {
  it('numbers every prompt, the tags prompt included, out of the same total', () => {
    assert.deepEqual(ADD_MEMORY_STEPS.map(stepTitle), [
      'Add Memory (1/5): namespace',
      'Add Memory (2/5): key',
      'Add Memory (3/5): value',
      'Add Memory (4/5): kind',
      'Add Memory (5/5): tags (optional)',
    ]);
  });

  it('the first kind item (what Enter takes) is the default, and every kind is offered once', () => {
    const items = kindItems();
    assert.equal(DEFAULT_KIND, 'note');
    assert.deepEqual(items[0], { label: 'note', description: 'default' });
    assert.deepEqual(items.map((i) => i.label).sort(), [...MEMORY_KINDS].sort());
    assert.equal(items.filter((i) => i.description).length, 1);
    assert.equal(kindItems('decision')[0].label, 'decision');
  });

  it('tags: trimmed, empty ones dropped, none when dismissed', () => {
    assert.deepEqual(parseTags(' tooling, js,, '), ['tooling', 'js']);
    assert.deepEqual(parseTags(undefined), []);
  });
});

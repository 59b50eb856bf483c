/** The dashboard's From/To day fields (text in the editor's style, not the browser's date control). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dayRangeError, filterFor, emptyChips, parseDay } from '../../webview/src/state';

describe('day fields', () => {
  it('reads YYYY-MM-DD, pads one-digit months and days, and empty clears', () => {
    assert.deepEqual(parseDay('2026-05-01'), { day: '2026-05-01' });
    assert.deepEqual(parseDay(' 2026-5-1 '), { day: '2026-05-01' });
    assert.deepEqual(parseDay('2024-02-29'), { day: '2024-02-29' });
    assert.deepEqual(parseDay(''), { day: '' });
    assert.deepEqual(parseDay('   '), { day: '' });
  });

  it('says in words what is wrong with anything else', () => {
    for (const bad of ['05/01/2026', 'yesterday', '2026-05', '2026-05-01T10:00', '20260501']) {
      const r = parseDay(bad);
      assert.ok('error' in r, bad);
      assert.match(r.error, /YYYY-MM-DD/);
    }
    for (const impossible of ['2026-02-30', '2025-02-29', '2026-13-01', '2026-00-10']) {
      const r = parseDay(impossible);
      assert.ok('error' in r, impossible);
      assert.equal(r.error, `${impossible} is not a day of the calendar.`);
    }
  });

  it('flags From after To, and nothing else', () => {
    assert.match(dayRangeError('2026-05-02', '2026-05-01') ?? '', /From is after To/);
    assert.equal(dayRangeError('2026-05-01', '2026-05-01'), null);
    assert.equal(dayRangeError('2026-05-01', ''), null);
    assert.equal(dayRangeError('', '2026-05-01'), null);
  });

  it('a parsed day becomes the filter the daemon gets', () => {
    const r = parseDay('2026-5-1');
    assert.ok('day' in r);
    const f = filterFor({ ...emptyChips(), from: r.day });
    assert.deepEqual(f, { field: 'updatedAt', op: 'gte', value: '2026-05-01T00:00:00.000Z' });
  });
});

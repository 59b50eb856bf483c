/** The overview's writes-per-day chart (webview/src/chart.ts): every day of the window, stacks, round ticks, tooltips. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chartModel, dayRange, dayTitle, niceTicks, shortDay } from '../../webview/src/chart';

describe('overview chart', () => {
  it('lists every day of the window, oldest first, across a month end', () => {
    assert.deepEqual(dayRange('2026-03-02', 4), ['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
    assert.deepEqual(dayRange('2026-03-02', 1), ['2026-03-02']);
    assert.deepEqual(dayRange('2026-03-02', 0), []);
    assert.deepEqual(dayRange('not a day', 3), []);
  });

  it('makes round ticks from 0 to at least the busiest day', () => {
    assert.deepEqual(niceTicks(0), [0, 1]);
    assert.deepEqual(niceTicks(1), [0, 1]);
    assert.deepEqual(niceTicks(3), [0, 1, 2, 3]);
    assert.deepEqual(niceTicks(7), [0, 2, 4, 6, 8]);
    assert.deepEqual(niceTicks(10), [0, 5, 10]);
    assert.deepEqual(niceTicks(5009), [0, 2000, 4000, 6000]);
    for (const max of [2, 9, 13, 99, 101, 734, 4999]) {
      const t = niceTicks(max);
      assert.ok(t[t.length - 1] >= max, `top tick >= ${max}`);
      assert.ok(t.length >= 2 && t.length <= 7, `${t.length} ticks for ${max}`);
      const step = t[1];
      assert.ok(
        t.every((v, i) => v === i * step),
        `even steps for ${max}`,
      );
    }
  });

  it('stacks sources per day, fills empty days with zero, and totals agree with the rows', () => {
    const rows = [
      { day: '2026-03-08', source: 'cli', count: 2 },
      { day: '2026-03-10', source: 'agent', count: 3 },
      { day: '2026-03-10', source: 'cli', count: 1 },
      { day: '2026-01-01', source: 'cli', count: 50 }, // before the window
    ];
    const m = chartModel(rows, 5, '2026-03-10');
    assert.deepEqual(
      m.bars.map((b) => [b.day, b.total]),
      [
        ['2026-03-06', 0],
        ['2026-03-07', 0],
        ['2026-03-08', 2],
        ['2026-03-09', 0],
        ['2026-03-10', 4],
      ],
    );
    assert.deepEqual(m.bars[4].parts, [
      { source: 'agent', count: 3, y0: 0, y1: 3 },
      { source: 'cli', count: 1, y0: 3, y1: 4 },
    ]);
    assert.equal(m.total, 6);
    assert.equal(m.busiest?.day, '2026-03-10');
    assert.deepEqual(m.sources, ['agent', 'cli']);
    assert.deepEqual(m.ticks, [0, 1, 2, 3, 4]);
  });

  it("ends at the newest row's day when the daemon's clock is ahead", () => {
    const m = chartModel([{ day: '2026-03-11', source: 'cli', count: 1 }], 3, '2026-03-10');
    assert.deepEqual(
      m.bars.map((b) => b.day),
      ['2026-03-09', '2026-03-10', '2026-03-11'],
    );
    assert.equal(m.total, 1);
  });

  it('has no busiest day and a unit scale when nothing was written', () => {
    const m = chartModel([], 30, '2026-03-10');
    assert.equal(m.bars.length, 30);
    assert.equal(m.total, 0);
    assert.equal(m.busiest, null);
    assert.deepEqual(m.ticks, [0, 1]);
  });

  it('labels days and tooltips in words', () => {
    assert.equal(shortDay('2026-03-01'), 'Mar 1');
    const m = chartModel([{ day: '2026-03-10', source: 'cli', count: 1 }], 2, '2026-03-10');
    assert.equal(dayTitle(m.bars[1]), 'Mar 10 (2026-03-10): 1 write — cli 1');
    assert.equal(dayTitle(m.bars[0]), 'Mar 9 (2026-03-09): 0 writes');
  });
});

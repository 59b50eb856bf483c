/** Relative time phrases read against a reference time (daemon/src/text/time-phrases.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readTimePhrase } from '../../daemon/src/text/time-phrases';

/** Wednesday 10 May 2023, 15:30 UTC. */
const REF = Date.parse('2023-05-10T15:30:00Z');
const d = (s: string) => Date.parse(s + 'T00:00:00Z');

function check(query: string, since: string, before: string, rest: string, ref = REF): void {
  const r = readTimePhrase(query, ref);
  assert.ok(r, `no phrase read in ${JSON.stringify(query)}`);
  assert.equal(new Date(r.since).toISOString().slice(0, 10), since, `${query}: since`);
  assert.equal(r.since, d(since));
  assert.equal(r.before, d(before), `${query}: before ${new Date(r.before).toISOString()}`);
  assert.equal(r.rest, rest);
  assert.match(r.reading, new RegExp(`reference ${new Date(ref).toISOString().slice(0, 10)}`));
}

describe('readTimePhrase', () => {
  test('days: yesterday, today, the day before yesterday', () => {
    check('what did we fix yesterday', '2023-05-09', '2023-05-10', 'what did we fix');
    check('tests run today?', '2023-05-10', '2023-05-11', 'tests run ?');
    check('the day before yesterday the build broke', '2023-05-08', '2023-05-09', 'the build broke');
  });

  test('calendar weeks start on Monday; months and years', () => {
    check('last week deploy', '2023-05-01', '2023-05-08', 'deploy');
    check('this week', '2023-05-08', '2023-05-15', '');
    check('what happened last month', '2023-04-01', '2023-05-01', 'what happened');
    check('last year', '2022-01-01', '2023-01-01', '');
    check('last weekend', '2023-05-06', '2023-05-08', '');
  });

  test('month names: the latest such month at or before the reference, or the year given', () => {
    check('the migration in May', '2023-05-01', '2023-06-01', 'the migration');
    check('trip in June', '2022-06-01', '2022-07-01', 'trip'); // June 2023 is after the reference
    check('during March 2021 we moved', '2021-03-01', '2021-04-01', 'we moved');
    check('in Sept', '2022-09-01', '2022-10-01', '');
    check('in 2020', '2020-01-01', '2021-01-01', '');
  });

  test('"may" the verb is not a month', () => {
    assert.equal(readTimePhrase('we may need a cache', REF), null);
    assert.equal(readTimePhrase('how do we run the tests', REF), null);
  });

  test('counts: ago, last N', () => {
    check('3 days ago', '2023-05-07', '2023-05-08', '');
    check('two weeks ago', '2023-04-24', '2023-05-01', '');
    check('a month ago', '2023-04-01', '2023-05-01', '');
    check('in the last 3 days', '2023-05-08', '2023-05-11', '');
    check('past two weeks', '2023-04-27', '2023-05-11', '');
  });

  test('weekdays: the latest such day before the reference day', () => {
    check('on Monday', '2023-05-08', '2023-05-09', '');
    check('last Wednesday', '2023-05-03', '2023-05-04', ''); // the reference is a Wednesday
    check('friday standup', '2023-05-05', '2023-05-06', 'standup');
  });

  test('the earliest phrase wins and the reading names the range', () => {
    const r = readTimePhrase('yesterday or last week', REF)!;
    assert.equal(r.phrase, 'yesterday');
    assert.equal(r.rest, 'or last week');
    assert.equal(r.reading, '"yesterday" = 2023-05-09 (the day before the reference day; reference 2023-05-10)');
    const w = readTimePhrase('last week', REF)!;
    assert.equal(w.reading, '"last week" = 2023-05-01 to 2023-05-07 (the week before the reference week; reference 2023-05-10)');
  });

  test('the reference decides, not the clock', () => {
    check('yesterday', '2019-12-31', '2020-01-01', '', Date.parse('2020-01-01T08:00:00Z'));
    check('last month', '2019-12-01', '2020-01-01', '', Date.parse('2020-01-15T08:00:00Z'));
  });
});

/**
 * Search snippets (retrieval/snippet.ts): an excerpt of the value around the first match, matches in «…», cut
 * between words.
 * The last test holds the function to the plan it had before it stopped reading words past the excerpt.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapEnd, snapStart, snippet } from '../../daemon/src/retrieval/snippet';
import { queryTokens, splitIdentifier, STOPWORDS, WORD } from '../../daemon/src/text/identifiers';

describe('snippet', () => {
  it('marks every match of a query word, whitespace collapsed', () => {
    assert.equal(snippet('Deploy  the\nbuild, then deploy\tagain', 'deploy'), '«Deploy» the build, then «deploy» again');
  });

  it('a value without a match: its beginning, up to 160 characters, cut after a whole word', () => {
    assert.equal(snippet('short value', 'nothing'), 'short value');
    const long = 'word '.repeat(60).trim();
    assert.equal(snippet(long, 'nothing'), 'word '.repeat(32).trim() + '…');
    const prose =
      'Deployments freeze on Fridays because the release train leaves on Thursday evening and nobody is around to roll back a bad build over the weekend, so wait until Monday.';
    const got = snippet(prose, 'nothing');
    assert.ok(prose.length > 160);
    assert.equal(got, prose.slice(0, prose.slice(0, 161).lastIndexOf(' ')) + '…');
    assert.ok(prose.startsWith(got.slice(0, -1) + ' '), 'ends at a whole word');
  });

  it('a late first match: the excerpt starts at a word about 40 characters before it, and ends at a word', () => {
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa';
    const value = `${words} needle ${words} ${words}`;
    const got = snippet(value, 'needle');
    assert.ok(got.startsWith('…'), got);
    assert.ok(got.endsWith('…'), got);
    const inner = got.slice(1, -1).replace(/[«»]/g, '');
    assert.ok(value.includes(` ${inner} `), `whole words on both sides: ${got}`);
    assert.ok(got.includes('«needle»'));
    assert.ok(inner.length <= 160 && inner.length >= 160 - 2 * 30, `${inner.length} characters`);
    assert.ok(inner.indexOf('needle') <= 40, 'about 40 characters of context before the match');
  });

  it('a word longer than the slack on a cut side is cut (a long hash or URL cannot be skipped)', () => {
    const value = `${'a'.repeat(100)} needle ${'b'.repeat(300)}`;
    const got = snippet(value, 'needle');
    assert.equal(got, `…${'a'.repeat(39)} «needle» ${'b'.repeat(160 - 47)}…`);
  });

  it('matches past the excerpt are not marked (and the excerpt is not moved to them)', () => {
    const value = `first hit ${'x'.repeat(200)} hit again`;
    const got = snippet(value, 'hit');
    assert.equal(got, `first «hit» ${'x'.repeat(150)}…`);
  });

  it('identifiers: a query word finds the parts of camelCase and SCREAMING_SNAKE identifiers', () => {
    assert.equal(snippet('set maxRetries to 3', 'retries'), 'set «maxRetries» to 3');
    assert.equal(snippet('env MAX_RETRIES=3', 'retries'), 'env «MAX_RETRIES»=3');
    assert.equal(snippet('calls getUserById', 'user'), 'calls «getUserById»');
  });

  it('prefixes of three letters or more match; shorter words and stopwords do not', () => {
    assert.equal(snippet('the deployment of the db pool', 'deploy'), 'the «deployment» of the db pool');
    assert.equal(snippet('dbpool and db', 'db'), 'dbpool and «db»');
    assert.equal(snippet('the deployment of the db pool', 'the db'), 'the deployment of the «db» pool');
    assert.equal(snippet('the deployment', 'the'), '«the» deployment', 'only stopwords: they are the terms');
  });
});

/**
 * The function before it stopped at the excerpt's end (every word read, the excerpt placed afterwards); its
 * cut sides moved to word boundaries as snippet() moves them.
 */
function snippetBefore(value: string, query: string): string {
  const WINDOW = 160;
  const all = queryTokens(query).filter((t) => t.length > 1);
  const content = all.filter((t) => !STOPWORDS.has(t));
  const terms = content.length > 0 ? content : all;
  const flat = value.replace(/\s+/g, ' ').trim();
  const clip = (s: string) => (s.length > WINDOW ? s.slice(0, snapEnd(s, WINDOW, WINDOW - 30)) + '…' : s);
  if (terms.length === 0) return clip(flat);
  const matches = (p: string) => terms.some((t) => p === t || (t.length >= 3 && p.startsWith(t)));
  const hits: [number, number][] = [];
  for (const m of flat.matchAll(WORD)) {
    const raw = m[0];
    const w = raw.toLowerCase();
    if (matches(w) || w.split(/[_$]+/).some(matches) || splitIdentifier(raw).some(matches)) hits.push([m.index!, m.index! + raw.length]);
  }
  if (hits.length === 0) return clip(flat);
  const start = snapStart(flat, Math.max(0, hits[0][0] - 40), hits[0][0]);
  const end = snapEnd(flat, Math.min(flat.length, Math.max(0, hits[0][0] - 40) + WINDOW), hits[0][1]);
  let out = '';
  let at = start;
  for (const [s, e] of hits) {
    if (s < start || e > end) continue;
    out += flat.slice(at, s) + '«' + flat.slice(s, e) + '»';
    at = e;
  }
  out += flat.slice(at, end);
  return (start > 0 ? '…' : '') + out + (end < flat.length ? '…' : '');
}

describe('snippet: word boundaries', () => {
  it('snapStart moves a mid-word start to the next word, never past the match', () => {
    const t = 'one two three four';
    assert.equal(snapStart(t, 0, 10), 0);
    assert.equal(snapStart(t, 4, 10), 4, 'already at a word');
    assert.equal(snapStart(t, 5, 10), 8, 'mid "two": to "three"');
    assert.equal(snapStart(t, 3, 10), 4, 'on the space: the next word');
    assert.equal(snapStart(t, 5, 6), 5, 'the next word would pass the match: kept');
    assert.equal(snapStart('x'.repeat(50) + ' y', 1, 60), 1, 'no space within the slack: kept');
  });

  it('snapEnd moves a mid-word end back after the last whole word, never before the match', () => {
    const t = 'one two three four';
    assert.equal(snapEnd(t, 18, 0), 18, 'the whole value');
    assert.equal(snapEnd(t, 7, 0), 7, 'right after "two"');
    assert.equal(snapEnd(t, 8, 0), 7, 'after a space: the space dropped');
    assert.equal(snapEnd(t, 10, 0), 7, 'mid "three": after "two"');
    assert.equal(snapEnd(t, 10, 7), 10, 'the last space is the match end: kept');
    assert.equal(snapEnd('y ' + 'x'.repeat(50), 40, 0), 40, 'no space within the slack: kept');
  });
});

describe('snippet: the same excerpts as before it stopped at the excerpt', () => {
  it('on 3,000 generated values and queries', () => {
    const words = [
      'deploy',
      'deployment',
      'the',
      'a',
      'pool',
      'db',
      'maxRetries',
      'MAX_RETRIES',
      'getUserById',
      'user_id',
      'retries',
      'x',
      'build',
      'tests',
      'test',
      'café',
      'naïve',
      'HTTPServer',
      'v2',
      '$scope',
      'pool.ts',
      'src/pool.ts',
      'connection',
      'timeout',
      'CONNECTION_TIMEOUT_MS',
      'it',
      'is',
      'of',
    ];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const space = () => [' ', ' ', ' ', '  ', '\n', '\t', ', ', '. '][rand(8)];
    let withMatch = 0;
    for (let i = 0; i < 3000; i++) {
      const n = 1 + rand(90);
      let value = '';
      for (let j = 0; j < n; j++) value += words[rand(words.length)] + space();
      const q = Array.from({ length: 1 + rand(3) }, () => words[rand(words.length)]).join(' ');
      const got = snippet(value, q);
      assert.equal(got, snippetBefore(value, q), JSON.stringify({ value, q }));
      if (got.includes('«')) withMatch++;
    }
    assert.ok(withMatch > 1500, `most cases have a match (${withMatch})`);
  });
});

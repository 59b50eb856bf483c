/**
 * Relative time phrases in a query ("yesterday", "last week", "in May", "3 days ago") read as a time range against a
 * reference time: the time of the episodes being searched, not the time the query is asked or the events were
 * ingested. Pure: no clock, no store. Calendar units are UTC; weeks start on Monday (ISO).
 *
 * readTimePhrase() finds the first phrase it knows, returns the range [since, before) it stands for, a sentence saying
 * how it was read, and the query without the phrase (what is left to search for).
 */

export interface TimeReading {
  /** The phrase as it appears in the query. */
  phrase: string;
  /** Start of the range, inclusive (ms since the epoch). */
  since: number;
  /** End of the range, exclusive (ms since the epoch). */
  before: number;
  /** How the phrase was read, e.g. `"last week" = 2023-05-01 to 2023-05-07 (the week before 2023-05-10)`. */
  reading: string;
  /** The query with the phrase taken out (trimmed, single spaces). */
  rest: string;
}

const DAY = 86_400_000;

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_ABBR = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  couple: 2,
  few: 3,
};

const dayStart = (t: number) => Math.floor(t / DAY) * DAY;
/** Monday 00:00 UTC of t's ISO week. */
const weekStart = (t: number) => {
  const d = dayStart(t);
  const dow = new Date(d).getUTCDay(); // 0 = Sunday
  return d - ((dow + 6) % 7) * DAY;
};
const monthStart = (y: number, m: number) => Date.UTC(y, m, 1);
const day = (t: number) => new Date(t).toISOString().slice(0, 10);
/** "2023-05-01 to 2023-05-07": the inclusive days of [since, before). */
const span = (since: number, before: number) => (before - since <= DAY ? day(since) : `${day(since)} to ${day(before - 1)}`);

function num(s: string): number | null {
  const w = s.toLowerCase();
  if (/^\d+$/.test(w)) return Number(w);
  return NUMBER_WORDS[w] ?? null;
}

const monthIndex = (s: string): number => {
  const w = s.toLowerCase().replace(/\.$/, '');
  const full = MONTHS.indexOf(w);
  return full >= 0 ? full : MONTH_ABBR.indexOf(w.slice(0, 3)) >= 0 && w.length <= 4 ? MONTH_ABBR.indexOf(w.slice(0, 3)) : -1;
};

type Unit = 'day' | 'week' | 'month' | 'year';
const unitOf = (s: string): Unit => s.toLowerCase().replace(/s$/, '') as Unit;

/** The calendar unit of `t` that is `back` units before the one holding `ref` ([since, before)). */
function calendarUnit(unit: Unit, ref: number, back: number): [number, number] {
  const d = new Date(ref);
  if (unit === 'day') {
    const s = dayStart(ref) - back * DAY;
    return [s, s + DAY];
  }
  if (unit === 'week') {
    const s = weekStart(ref) - back * 7 * DAY;
    return [s, s + 7 * DAY];
  }
  if (unit === 'month') {
    const m = d.getUTCMonth() - back;
    return [monthStart(d.getUTCFullYear(), m), monthStart(d.getUTCFullYear(), m + 1)];
  }
  const y = d.getUTCFullYear() - back;
  return [Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)];
}

/** `n` units back from the reference, up to the end of the reference day. */
function rolling(unit: Unit, ref: number, n: number): [number, number] {
  const end = dayStart(ref) + DAY;
  const d = new Date(dayStart(ref));
  if (unit === 'day') return [end - n * DAY, end];
  if (unit === 'week') return [end - n * 7 * DAY, end];
  if (unit === 'month') return [Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, d.getUTCDate() + 1), end];
  return [Date.UTC(d.getUTCFullYear() - n, d.getUTCMonth(), d.getUTCDate() + 1), end];
}

interface Rule {
  re: RegExp;
  read(m: RegExpExecArray, ref: number): { since: number; before: number; why: string } | null;
}

const N = '(\\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple(?: of)?|few)';
const MONTH_RE =
  '(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)';

const RULES: Rule[] = [
  {
    re: /\bthe day before yesterday\b/i,
    read: (_m, ref) => {
      const [since, before] = calendarUnit('day', ref, 2);
      return { since, before, why: 'two days before the reference day' };
    },
  },
  {
    re: /\b(yesterday|today|tonight|this morning|this afternoon|this evening)\b/i,
    read: (m, ref) => {
      const back = m[1].toLowerCase() === 'yesterday' ? 1 : 0;
      const [since, before] = calendarUnit('day', ref, back);
      return { since, before, why: back ? 'the day before the reference day' : 'the reference day' };
    },
  },
  {
    re: /\blast weekend\b/i,
    read: (_m, ref) => {
      const sat = weekStart(ref) - 2 * DAY;
      return { since: sat, before: sat + 2 * DAY, why: 'the Saturday and Sunday before the reference week' };
    },
  },
  {
    re: new RegExp(`\\b(?:in the |over the |during the )?(?:last|past|previous) ${N} (days?|weeks?|months?|years?)\\b`, 'i'),
    read: (m, ref) => {
      const n = num(m[1].replace(/ of$/i, ''));
      if (n === null || n === 0) return null;
      const u = unitOf(m[2]);
      const [since, before] = rolling(u, ref, n);
      return { since, before, why: `the ${n} ${u}${n === 1 ? '' : 's'} up to the reference day` };
    },
  },
  {
    re: new RegExp(`\\b${N} (days?|weeks?|months?|years?) ago\\b`, 'i'),
    read: (m, ref) => {
      const n = num(m[1].replace(/ of$/i, ''));
      if (n === null) return null;
      const u = unitOf(m[2]);
      const [since, before] = calendarUnit(u, ref, n);
      return { since, before, why: `the ${u} ${n} ${u}${n === 1 ? '' : 's'} before the reference ${u}` };
    },
  },
  {
    re: /\b(last|this|previous|past) (week|month|year)\b/i,
    read: (m, ref) => {
      const back = m[1].toLowerCase() === 'this' ? 0 : 1;
      const u = unitOf(m[2]);
      const [since, before] = calendarUnit(u, ref, back);
      return { since, before, why: back ? `the ${u} before the reference ${u}` : `the reference ${u}` };
    },
  },
  {
    re: /\b(?:on |last )?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b/i,
    read: (m, ref) => {
      const want = WEEKDAYS.indexOf(m[1].toLowerCase());
      const refDow = new Date(ref).getUTCDay();
      const back = (refDow - want + 7) % 7 || 7; // the latest such day before the reference day
      const since = dayStart(ref) - back * DAY;
      return { since, before: since + DAY, why: `the last ${WEEKDAYS[want]} before the reference day` };
    },
  },
  {
    re: new RegExp(`\\b(?:in |during |since |of )?(?:early |late |mid-?)?${MONTH_RE}\\.?(?:,? (\\d{4}))?\\b`, 'i'),
    read: (m, ref) => {
      const mi = monthIndex(m[1]);
      if (mi < 0) return null;
      // "may" alone is too often the verb: take it only with a preposition or a year.
      if (m[1].toLowerCase() === 'may' && !m[2] && !/^(in|during|since|of) /i.test(m[0])) return null;
      const d = new Date(ref);
      let y = m[2] ? Number(m[2]) : d.getUTCFullYear();
      if (!m[2] && mi > d.getUTCMonth()) y -= 1; // the latest such month at or before the reference
      return {
        since: monthStart(y, mi),
        before: monthStart(y, mi + 1),
        why: m[2] ? `${MONTHS[mi]} ${y}` : `the latest ${MONTHS[mi]} at or before the reference month`,
      };
    },
  },
  {
    re: /\b(?:in|during) ((?:19|20)\d\d)\b/i,
    read: (m) => {
      const y = Number(m[1]);
      return { since: Date.UTC(y, 0, 1), before: Date.UTC(y + 1, 0, 1), why: `the year ${y}` };
    },
  },
];

/** The first relative time phrase of `query` read against `reference` (ms), or null when it has none. */
export function readTimePhrase(query: string, reference: number): TimeReading | null {
  let best: { m: RegExpExecArray; r: NonNullable<ReturnType<Rule['read']>> } | null = null;
  for (const rule of RULES) {
    const m = rule.re.exec(query);
    if (!m) continue;
    const r = rule.read(m, reference);
    if (!r) continue;
    // The earliest phrase in the query wins; at one position, the rule listed first (the longer phrase).
    if (!best || m.index < best.m.index) best = { m, r };
  }
  if (!best) return null;
  const { m, r } = best;
  const phrase = m[0].trim();
  const rest = (query.slice(0, m.index) + ' ' + query.slice(m.index + m[0].length)).replace(/\s+/g, ' ').trim();
  return {
    phrase,
    since: r.since,
    before: r.before,
    reading: `"${phrase}" = ${span(r.since, r.before)} (${r.why}; reference ${day(reference)})`,
    rest,
  };
}

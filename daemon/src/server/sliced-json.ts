/**
 * Decoding and parsing a large message in slices, yielding to the event loop between them, so one big frame (a
 * `store/import` of 16 MiB) does not hold every other connection's requests for the whole of a JSON.parse
 * (docs/protocol.md#limits, "Request time and stalls").
 *
 * The body is UTF-8-decoded in slices (a fatal streaming TextDecoder), then scanned once, in slices, for the
 * arrays that are values of a property of a top-level property (`params.records`, `params.items`,
 * `result.records`): each element of those arrays is parsed on its own, and the rest (the "skeleton", with those
 * arrays left empty) in one JSON.parse. The result is what JSON.parse of the whole text gives; whenever the scan
 * meets something it does not handle exactly that way (a duplicate or special property name, a bracket mismatch,
 * anything odd), it falls back to one JSON.parse of the whole text, so invalid JSON is refused exactly as before.
 */

/** Frames at or above this many bytes are decoded and parsed in slices; smaller ones in one go (no extra tick). */
export const SLICED_PARSE_BYTES = 256 * 1024;
/** Work between two yields: about this many ms. */
const SLICE_MS = 8;
const DECODE_SLICE = 512 * 1024;

const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Decode UTF-8 bytes in slices; throws (TypeError) on invalid UTF-8 exactly as a fatal TextDecoder does. */
export async function decodeSliced(body: Uint8Array): Promise<string> {
  if (body.length < SLICED_PARSE_BYTES) return new TextDecoder('utf-8', { fatal: true }).decode(body);
  const dec = new TextDecoder('utf-8', { fatal: true });
  const parts: string[] = [];
  let until = performance.now() + SLICE_MS;
  for (let at = 0; at < body.length; at += DECODE_SLICE) {
    const end = Math.min(at + DECODE_SLICE, body.length);
    parts.push(dec.decode(body.subarray(at, end), { stream: end < body.length }));
    if (performance.now() > until) {
      await yieldNow();
      until = performance.now() + SLICE_MS;
    }
  }
  return parts.join('');
}

interface BigArray {
  /** The top-level property and the property inside it holding the array (raw JSON string tokens). */
  outerKey: [number, number];
  innerKey: [number, number];
  /** Index of `[` and of its `]`. */
  open: number;
  close: number;
  /** [start, end) text spans of the elements. */
  elements: [number, number][];
}

const Q = 0x22; // "
const BS = 0x5c; // \

/**
 * JSON.parse(text), in slices when the text is large. Throws SyntaxError for invalid JSON (from JSON.parse itself).
 */
export async function parseSliced(text: string): Promise<unknown> {
  if (text.length < SLICED_PARSE_BYTES) return JSON.parse(text);
  const arrays = await scan(text);
  if (!arrays) return JSON.parse(text);
  // The skeleton: the text with each big array's contents left out.
  const pieces: string[] = [];
  let from = 0;
  for (const a of arrays) {
    pieces.push(text.slice(from, a.open + 1));
    from = a.close;
  }
  pieces.push(text.slice(from));
  let root: unknown;
  try {
    root = JSON.parse(pieces.join(''));
  } catch {
    return JSON.parse(text); // throws the error of the whole text
  }
  let until = performance.now() + SLICE_MS;
  for (const a of arrays) {
    const outer = JSON.parse(text.slice(a.outerKey[0], a.outerKey[1])) as string;
    const inner = JSON.parse(text.slice(a.innerKey[0], a.innerKey[1])) as string;
    const holder = (root as Record<string, unknown>)[outer] as Record<string, unknown> | undefined;
    const target = holder?.[inner];
    if (!Array.isArray(target) || target.length !== 0) return JSON.parse(text);
    for (const [s, e] of a.elements) {
      try {
        target.push(JSON.parse(text.slice(s, e)));
      } catch {
        return JSON.parse(text);
      }
      if (performance.now() > until) {
        await yieldNow();
        until = performance.now() + SLICE_MS;
      }
    }
  }
  return root;
}

/**
 * One pass over the text, in slices: the arrays at depth 2 (a property of a property of the top-level object) and
 * their elements' spans. Null when the text should simply be parsed whole (not an object, a duplicate pair of
 * keys, a property name that needs care, mismatched brackets, a string never closed).
 */
async function scan(text: string): Promise<BigArray[] | null> {
  const n = text.length;
  let i = 0;
  // Skip leading whitespace; the top level must be an object.
  while (i < n && text.charCodeAt(i) <= 0x20) i++;
  if (text.charCodeAt(i) !== 0x7b) return null;
  const stack: number[] = []; // opener char codes
  const arrays: BigArray[] = [];
  const seen = new Set<string>();
  /** The last string token seen at depth 1 and depth 2 (a property name when followed by ':'). */
  let lastKey1: [number, number] = [0, 0];
  let lastKey2: [number, number] = [0, 0];
  let lastString: [number, number] = [0, 0];
  let cur: BigArray | null = null;
  let elemStart = -1;
  let until = performance.now() + SLICE_MS;
  let steps = 0;
  while (i < n) {
    if (++steps >= 4096) {
      steps = 0;
      if (performance.now() > until) {
        await yieldNow();
        until = performance.now() + SLICE_MS;
      }
    }
    const c = text.charCodeAt(i);
    if (c === Q) {
      // A string: find its closing quote (one not escaped by an odd run of backslashes).
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return null;
        let b = 0;
        for (let k = j - 1; text.charCodeAt(k) === BS; k--) b++;
        if (b % 2 === 0) break;
        j++;
      }
      lastString = [i, j + 1];
      if (cur && stack.length === 3 && elemStart < 0) elemStart = i;
      i = j + 1;
      continue;
    }
    if (c === 0x3a /* : */) {
      if (cur && stack.length === 3 && elemStart < 0) return null; // a colon before an element: let JSON.parse refuse it
      if (stack.length === 1) lastKey1 = lastString;
      else if (stack.length === 2) lastKey2 = lastString;
      i++;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (cur && stack.length === 3 && elemStart < 0) elemStart = i;
      if (c === 0x5b && stack.length === 2 && stack[1] === 0x7b && stack[0] === 0x7b) {
        const id = `${text.slice(lastKey1[0], lastKey1[1])}\0${text.slice(lastKey2[0], lastKey2[1])}`;
        if (seen.has(id)) return null;
        seen.add(id);
        for (const k of [lastKey1, lastKey2]) {
          const name = text.slice(k[0] + 1, k[1] - 1);
          if (name.includes('\\') || name === '__proto__') return null; // parse whole: escapes and special names
        }
        cur = { outerKey: lastKey1, innerKey: lastKey2, open: i, close: -1, elements: [] };
        elemStart = -1;
      }
      stack.push(c);
      i++;
      continue;
    }
    if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      const opener = stack.pop();
      if (opener === undefined || (opener === 0x7b) !== (c === 0x7d)) return null;
      if (cur && stack.length === 2) {
        // The big array closes.
        if (c !== 0x5d) return null;
        if (elemStart >= 0) cur.elements.push([elemStart, i]);
        else if (cur.elements.length > 0) return null; // a trailing comma: let JSON.parse refuse it
        cur.close = i;
        arrays.push(cur);
        cur = null;
        elemStart = -1;
      }
      i++;
      if (stack.length === 0) {
        while (i < n && text.charCodeAt(i) <= 0x20) i++;
        if (i !== n) return null;
        return arrays;
      }
      continue;
    }
    if (c === 0x2c /* , */ && cur && stack.length === 3) {
      if (elemStart < 0) return null; // an empty element: let JSON.parse refuse it
      cur.elements.push([elemStart, i]);
      elemStart = -1;
      i++;
      continue;
    }
    if (c > 0x20 && cur && stack.length === 3 && elemStart < 0) elemStart = i; // a number, true, false, null
    i++;
  }
  return null;
}

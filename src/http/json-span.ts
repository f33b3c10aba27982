/**
 * Where a top-level field's array value lies in a JSON body, found without parsing it: a gateway
 * resends the same 250 tool schemas every turn, and JSON.parse of those bytes was the largest cost
 * of a selector request after the model. A structural scan (strings skipped with indexOf) is several
 * times cheaper than building the objects.
 */

export interface ByteSpan {
  start: number;
  /** Exclusive. */
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

function isWhitespace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** A quote preceded by an odd number of backslashes is part of the string. */
function isEscaped(json: Buffer, quote: number): boolean {
  let backslashes = 0;
  for (let i = quote - 1; i >= 0 && json[i] === BACKSLASH; i--) backslashes++;
  return backslashes % 2 === 1;
}

/** Whether the string that ended just before `at` is an object key (a colon follows). */
function isKey(json: Buffer, at: number): boolean {
  let next = at;
  while (isWhitespace(json[next])) next++;
  return json[next] === COLON;
}

/**
 * The bytes of the array that the top-level object's `key` holds (the last such key, as JSON.parse
 * keeps the last), or undefined when there is none, the value is not an array, a top-level key is
 * written with an escape, or the scan finds the body malformed. Exact for valid JSON; on invalid JSON the answer means nothing, so callers parse
 * what they rely on (see http/selector.ts).
 */
export function topLevelArraySpan(json: Buffer, key: string): ByteSpan | undefined {
  const keyBytes = Buffer.from(key, 'utf8');
  let depth = 0;
  let found: ByteSpan | undefined;
  let valueStart = -1;
  let i = 0;
  while (i < json.length) {
    const byte = json[i];
    if (byte === QUOTE) {
      const start = i + 1;
      let end = json.indexOf(QUOTE, start);
      while (end !== -1 && isEscaped(json, end)) end = json.indexOf(QUOTE, end + 1);
      if (end === -1) return undefined;
      i = end + 1;
      if (depth !== 1 || !isKey(json, i)) continue;
      // JSON.parse reads `"tool\u0073"` as the key tools; a byte compare would not. A top-level key
      // with any escape makes the scan give up rather than disagree with the parser.
      if (json.subarray(start, end).includes(BACKSLASH)) return undefined;
      if (end - start === keyBytes.length && json.compare(keyBytes, 0, keyBytes.length, start, end) === 0) {
        let next = i;
        while (isWhitespace(json[next])) next++;
        next++; // the colon
        while (isWhitespace(json[next])) next++;
        if (json[next] === OPEN_ARRAY) {
          valueStart = next;
          i = next;
        }
      }
      continue;
    }
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth++;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
      if (depth < 0) return undefined;
      if (depth === 1 && valueStart !== -1) {
        found = { start: valueStart, end: i + 1 };
        valueStart = -1;
      }
    }
    i++;
  }
  return depth === 0 ? found : undefined;
}

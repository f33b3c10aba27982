/**
 * Where a top-level field's array value lies in a JSON body, found without parsing it: a gateway
 * resends the same 250 tool schemas every turn, and JSON.parse of those bytes was the largest cost
 * of a selector request after the model. A structural scan (strings skipped with indexOf) is several
 * times cheaper than building the objects.
 */
import type { TimeSlice } from '../lib/time-slice.js';

export interface ByteSpan {
  start: number;
  /** Exclusive. */
  end: number;
}

/**
 * Bytes a scan covers between two chances to stop: the scans below are generators that pause every
 * SCAN_STEP bytes, run to the end in one piece (topLevelArraySpan) or between time slices (...InSlices).
 */
const SCAN_STEP = 64 * 1024;

function toEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

async function inSlices<T>(steps: Generator<void, T>, slice: TimeSlice): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slice.due()) await slice.yield();
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** The first position at or after `at` that is not JSON whitespace. */
export function skipWhitespace(json: Buffer, at: number): number {
  let next = at;
  while (json[next] === 0x20 || json[next] === 0x0a || json[next] === 0x0d || json[next] === 0x09) next++;
  return next;
}

/** A quote preceded by an odd number of backslashes is part of the string. */
export function isEscaped(json: Buffer, quote: number): boolean {
  let backslashes = 0;
  for (let i = quote - 1; i >= 0 && json[i] === BACKSLASH; i--) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * The bytes of the array that the top-level object's `key` holds (the last such key, as JSON.parse
 * keeps the last), or undefined when there is none, the value is not an array, a top-level key is
 * written with an escape, or the scan finds the body malformed. Exact for valid JSON; on invalid
 * JSON the answer means nothing, so callers parse what they rely on (see http/selector.ts).
 */
export function topLevelArraySpan(json: Buffer, key: string): ByteSpan | undefined {
  return toEnd(topLevelArraySpanSteps(json, key));
}

/** topLevelArraySpan, letting other requests run between slices (a 10,000-tool body's scan took 8-32 ms). */
export function topLevelArraySpanInSlices(json: Buffer, key: string, slice: TimeSlice): Promise<ByteSpan | undefined> {
  return inSlices(topLevelArraySpanSteps(json, key), slice);
}

function* topLevelArraySpanSteps(json: Buffer, key: string): Generator<void, ByteSpan | undefined> {
  const keyBytes = Buffer.from(key, 'utf8');
  let depth = 0;
  let found: ByteSpan | undefined;
  let valueStart = -1;
  let i = 0;
  let pauseAt = SCAN_STEP;
  while (i < json.length) {
    if (i >= pauseAt) {
      yield;
      pauseAt = i + SCAN_STEP;
    }
    const byte = json[i];
    if (byte === QUOTE) {
      const start = i + 1;
      let end = json.indexOf(QUOTE, start);
      while (end !== -1 && isEscaped(json, end)) end = json.indexOf(QUOTE, end + 1);
      if (end === -1) return undefined;
      i = end + 1;
      // Only a top-level key (a string followed by a colon) matters.
      const colon = skipWhitespace(json, i);
      if (depth !== 1 || json[colon] !== COLON) continue;
      // JSON.parse reads `"tool\u0073"` as the key tools; a byte compare would not. A top-level key
      // with any escape makes the scan give up rather than disagree with the parser.
      if (json.subarray(start, end).includes(BACKSLASH)) return undefined;
      if (end - start === keyBytes.length && json.compare(keyBytes, 0, keyBytes.length, start, end) === 0) {
        const value = skipWhitespace(json, colon + 1);
        if (json[value] === OPEN_ARRAY) {
          valueStart = value;
          i = value;
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

const COMMA = 0x2c;

/**
 * The spans of the elements of the array at `span` (as topLevelArraySpan found it), split at its
 * own commas (strings skipped), each without surrounding whitespace; undefined when an element is
 * empty (`[1,,2]`, `[1,]`) or the scan finds the array malformed. Each span is one JSON value only
 * if JSON.parse accepts it alone; if every one does, the array is exactly those values.
 */
export function arrayElementSpans(json: Buffer, span: ByteSpan): ByteSpan[] | undefined {
  return toEnd(arrayElementSpansSteps(json, span));
}

/** arrayElementSpans, letting other requests run between slices (a 10,000-tool array's took 10-24 ms). */
export function arrayElementSpansInSlices(json: Buffer, span: ByteSpan, slice: TimeSlice): Promise<ByteSpan[] | undefined> {
  return inSlices(arrayElementSpansSteps(json, span), slice);
}

function* arrayElementSpansSteps(json: Buffer, span: ByteSpan): Generator<void, ByteSpan[] | undefined> {
  const elements: ByteSpan[] = [];
  const last = span.end - 1;
  if (json[span.start] !== OPEN_ARRAY || json[last] !== CLOSE_ARRAY) return undefined;
  let start = skipWhitespace(json, span.start + 1);
  if (start === last) return elements;
  let depth = 0;
  let i = start;
  let pauseAt = start + SCAN_STEP;
  while (i <= last) {
    if (i >= pauseAt) {
      yield;
      pauseAt = i + SCAN_STEP;
    }
    const byte = json[i];
    if (byte === QUOTE) {
      let end = json.indexOf(QUOTE, i + 1);
      while (end !== -1 && isEscaped(json, end)) end = json.indexOf(QUOTE, end + 1);
      if (end === -1 || end >= last) return undefined;
      i = end + 1;
      continue;
    }
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) depth++;
    else if ((byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) && i < last) depth--;
    if (depth < 0) return undefined;
    if (depth === 0 && (byte === COMMA || i === last)) {
      let end = i;
      while (end > start && (json[end - 1] === 0x20 || json[end - 1] === 0x0a || json[end - 1] === 0x0d || json[end - 1] === 0x09)) end--;
      if (end === start) return undefined;
      elements.push({ start, end });
      start = skipWhitespace(json, i + 1);
    }
    i++;
  }
  return depth === 0 ? elements : undefined;
}

/**
 * A body carrying a tool list (the gateway selector's, tool-search's inline `tools`), read as little
 * as possible: callers resend the same tools every turn, and a list already remembered by its bytes
 * (`SelectorDeps.toolListCache`) is neither parsed nor indexed again.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import type { KnownBytes } from '../lib/known-bytes.js';
import type { LruCache } from '../lib/lru-cache.js';
import type { CachedToolList } from '../search/selector.js';
import { TimeSlice } from '../lib/time-slice.js';
import { assertSafeJson } from './input-safety.js';
import { declaredCharset, parseStub, parseToolsInSlices, SLICED_PARSE_BYTES, withoutBom } from './json-body.js';
import { skipWhitespace, topLevelArraySpan, topLevelArraySpanInSlices, type ByteSpan } from './json-span.js';

export interface ToolListBody {
  json: unknown;
  /** A digest of the exact bytes of the top-level `tools` array: equal digests, equal tools. */
  toolsKey?: string;
  /** The list that key names, when already known: its bytes were then not parsed again. */
  cached?: CachedToolList;
}

function parseJson(text: string): unknown {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new AppError('invalid_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
  // As express.json's strict mode: a bare string, number or null is not a request body.
  if (typeof json !== 'object' || json === null) throw new AppError('invalid_json', 'request body is not valid JSON: the top level must be an object');
  assertSafeJson(json);
  return json;
}

/** Tool-list bodies are read as UTF-8 only (what every gateway and SDK sends; JSON between systems is UTF-8, RFC 8259). */
export function requireUtf8(contentType: string | undefined): void {
  const charset = declaredCharset(contentType);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError('unsupported_media_type', `unsupported charset "${charset.toUpperCase()}": send UTF-8 JSON`);
  }
}

/**
 * The request body, parsed as little as possible. A gateway (or a tool-search hook) resends the same tools every turn:
 * when the bytes of the `tools` array digest to a list already cached, only the rest of the body
 * (pattern, top_k, ...) is parsed, with `[]` standing in for the tools. That stand-in body parsing
 * means the real one parses too (one valid array replaced by another), so no malformed body gets
 * through; anything unusual (no tools array, escaped key, a stub that fails) takes the full parse,
 * which also produces the error message.
 */
export function readToolListBody(raw: Buffer, lists: LruCache<string, CachedToolList>, known?: KnownBytes): ToolListBody {
  const body = withoutBom(raw);
  if (body.length === 0) return { json: {} };
  return (known && readKnown(body, lists, known)) ?? readSpans(body, topLevelArraySpan(body, 'tools'), lists, known);
}

/**
 * readToolListBody, except that a `tools` array of SLICED_PARSE_BYTES or more that is not cached is
 * parsed one tool at a time, yielding to other requests between slices (http/json-body.ts).
 * Anything the sliced parse does not accept takes the full parse.
 */
export async function readToolListBodyInSlices(raw: Buffer, lists: LruCache<string, CachedToolList>, known?: KnownBytes): Promise<ToolListBody> {
  const body = withoutBom(raw);
  if (body.length < SLICED_PARSE_BYTES) return readToolListBody(raw, lists, known);
  const remembered = known && readKnown(body, lists, known);
  if (remembered) return remembered;
  const span = await topLevelArraySpanInSlices(body, 'tools', new TimeSlice());
  if (!span || span.end - span.start < SLICED_PARSE_BYTES) return readSpans(body, span, lists, known);
  const toolsKey = toolsDigest(body, span);
  const cached = lists.get(toolsKey);
  if (!cached) {
    const json = await parseToolsInSlices(body, span);
    if (json) return { json, toolsKey };
  }
  return readKeyed(body, span, toolsKey, cached, known);
}

const TOOLS_KEY = Buffer.from('"tools"');
const STAND_IN = Buffer.from('[]');
/** Occurrences of `"tools"` tried as the list's key (a pattern or an always_keep name may spell it too). */
const KEY_TRIES = 4;

/**
 * The body of a turn that resends a remembered list, found without scanning or digesting the list:
 * where a `"tools": [` opens, the bytes of a list read before (`known`, exact compare), and the
 * rest of the body parsed with `[]` in their place (parseStub). That stand-in must also be where
 * the structural scan of the body without the list finds its top-level `tools` array, so the bytes
 * found are exactly the array the full path would have found and digested: for valid JSON the scan
 * is exact, and replacing one JSON array by another keeps the text valid. Anything else (a key
 * spelled with an escape, a nested `tools` first, a list not known) is left to the full path.
 */
function readKnown(body: Buffer, lists: LruCache<string, CachedToolList>, known: KnownBytes): ToolListBody | undefined {
  let at = -1;
  for (let tries = 0; tries < KEY_TRIES; tries++) {
    at = body.indexOf(TOOLS_KEY, at + 1);
    if (at === -1) return undefined;
    const colon = skipWhitespace(body, at + TOOLS_KEY.length);
    if (body[colon] !== 0x3a) continue;
    const start = skipWhitespace(body, colon + 1);
    const found = body[start] === 0x5b ? known.find(body, start) : undefined;
    if (!found) continue;
    const span = { start, end: found.end };
    const stub = Buffer.concat([body.subarray(0, start), STAND_IN, body.subarray(found.end)]);
    const stubSpan = topLevelArraySpan(stub, 'tools');
    if (stubSpan?.start !== start || stubSpan.end !== start + STAND_IN.length) return undefined;
    // Known bytes whose list has since been forgotten take the full path, which parses them (in slices when large).
    const cached = lists.get(found.key);
    const json = cached && parseStub(body, span);
    return json ? { json, toolsKey: found.key, cached } : undefined;
  }
  return undefined;
}

function toolsDigest(body: Buffer, span: ByteSpan): string {
  return createHash('sha256').update(body.subarray(span.start, span.end)).digest('base64');
}

function readSpans(body: Buffer, span: ByteSpan | undefined, lists: LruCache<string, CachedToolList>, known?: KnownBytes): ToolListBody {
  if (!span) return { json: parseJson(body.toString('utf8')) };
  const toolsKey = toolsDigest(body, span);
  return readKeyed(body, span, toolsKey, lists.get(toolsKey), known);
}

/**
 * The body whose tools digest to `toolsKey`: only the stub parsed when that list is `cached`, else
 * the whole. A cached list's bytes are remembered in `known`, so its next turn skips the scan and the digest.
 */
function readKeyed(body: Buffer, span: ByteSpan, toolsKey: string, cached: CachedToolList | undefined, known?: KnownBytes): ToolListBody {
  if (cached) {
    const json = parseStub(body, span);
    if (json) {
      known?.remember(toolsKey, body.subarray(span.start, span.end));
      return { json, toolsKey, cached };
    }
  }
  return { json: parseJson(body.toString('utf8')), toolsKey };
}

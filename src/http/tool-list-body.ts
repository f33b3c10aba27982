/**
 * A body carrying a tool list (the gateway selector's, tool-search's inline `tools`), read as little
 * as possible: callers resend the same tools every turn, and a list already remembered by its bytes
 * (`SelectorDeps.toolListCache`) is neither parsed nor indexed again.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import type { LruCache } from '../lib/lru-cache.js';
import type { CachedToolList } from '../search/selector.js';
import { TimeSlice } from '../lib/time-slice.js';
import { assertSafeJson } from './input-safety.js';
import { declaredCharset, parseStub, parseToolsInSlices, SLICED_PARSE_BYTES, withoutBom } from './json-body.js';
import { topLevelArraySpan, topLevelArraySpanInSlices, type ByteSpan } from './json-span.js';

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
export function readToolListBody(raw: Buffer, lists: LruCache<string, CachedToolList>): ToolListBody {
  const body = withoutBom(raw);
  if (body.length === 0) return { json: {} };
  return readSpans(body, topLevelArraySpan(body, 'tools'), lists);
}

/**
 * readToolListBody, except that a `tools` array of SLICED_PARSE_BYTES or more that is not cached is
 * parsed one tool at a time, yielding to other requests between slices (http/json-body.ts).
 * Anything the sliced parse does not accept takes the full parse.
 */
export async function readToolListBodyInSlices(raw: Buffer, lists: LruCache<string, CachedToolList>): Promise<ToolListBody> {
  const body = withoutBom(raw);
  if (body.length < SLICED_PARSE_BYTES) return readToolListBody(raw, lists);
  const span = await topLevelArraySpanInSlices(body, 'tools', new TimeSlice());
  if (!span || span.end - span.start < SLICED_PARSE_BYTES) return readSpans(body, span, lists);
  const toolsKey = toolsDigest(body, span);
  const cached = lists.get(toolsKey);
  if (!cached) {
    const json = await parseToolsInSlices(body, span);
    if (json) return { json, toolsKey };
  }
  return readKeyed(body, span, toolsKey, cached);
}

function toolsDigest(body: Buffer, span: ByteSpan): string {
  return createHash('sha256').update(body.subarray(span.start, span.end)).digest('base64');
}

function readSpans(body: Buffer, span: ByteSpan | undefined, lists: LruCache<string, CachedToolList>): ToolListBody {
  if (!span) return { json: parseJson(body.toString('utf8')) };
  const toolsKey = toolsDigest(body, span);
  return readKeyed(body, span, toolsKey, lists.get(toolsKey));
}

/** The body whose tools digest to `toolsKey`: only the stub parsed when that list is `cached`, else the whole. */
function readKeyed(body: Buffer, span: ByteSpan, toolsKey: string, cached: CachedToolList | undefined): ToolListBody {
  if (cached) {
    const json = parseStub(body, span);
    if (json) return { json, toolsKey, cached };
  }
  return { json: parseJson(body.toString('utf8')), toolsKey };
}

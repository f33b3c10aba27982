/**
 * Large JSON bodies parsed one array element at a time, yielding to other requests between
 * slices: JSON.parse of a 4,000-tool catalog (1.7 MB) and its safety walk held every other request
 * ~0.1 s in one piece, a 10,000-tool selector body ~0.3 s (`npm run bench -- --stalls`). The result
 * is exactly JSON.parse's; anything the sliced parse does not accept takes the full parse, which
 * also produces the error message.
 */
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors.js';
import { TimeSlice } from '../lib/time-slice.js';
import { arrayElementSpansInSlices, skipWhitespace, topLevelArraySpanInSlices, type ByteSpan } from './json-span.js';
import { assertSafeJson } from './input-safety.js';

/** The charset a Content-Type declares, lower-cased, or undefined when it declares none. */
export function declaredCharset(contentType: string | undefined): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
}

/** Bodies whose big array is at least this large are parsed in slices. */
export const SLICED_PARSE_BYTES = 256 * 1024;

/** A UTF-8 byte order mark is tolerated, as express.json tolerates it. */
export function withoutBom(raw: Buffer): Buffer {
  return raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
}

/** The object with `[]` for the array at `span`, if that parses as an object and is safe; undefined otherwise. */
export function parseStub(body: Buffer, span: ByteSpan): Record<string, unknown> | undefined {
  try {
    const json: unknown = JSON.parse(`${body.toString('utf8', 0, span.start)}[]${body.toString('utf8', span.end)}`);
    if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
    assertSafeJson(json);
    return json as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * The elements of the array at `span`, each parsed on its own, yielding after every SLICE_MS of
 * work (by time, not by bytes: 128 KB was 5-10 ms on a quiet machine and several times that on a
 * busy one), or undefined when any fails (the full parse then names the error). Equal to
 * JSON.parse of the array: each element span is exactly one JSON value, and the scan split the
 * array only at its own commas. `at` is where the array sits in the body (e.g. `['tools']`), so
 * each element is checked at its real depth and path.
 */
export async function parseArrayInSlices(body: Buffer, span: ByteSpan, at: string[]): Promise<unknown[] | undefined> {
  const slice = new TimeSlice();
  const elements = await arrayElementSpansInSlices(body, span, slice);
  if (!elements) return undefined;
  const values: unknown[] = [];
  for (const [index, { start, end }] of elements.entries()) {
    if (slice.due()) await slice.yield();
    try {
      const value: unknown = JSON.parse(body.toString('utf8', start, end));
      assertSafeJson(value, 'body', [...at, index]);
      values.push(value);
    } catch {
      return undefined;
    }
  }
  return values;
}

/** As express.json (strict) plus the safety walk: an object or array, or a 400 saying why not. */
function parseWhole(body: Buffer): unknown {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new AppError('invalid_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null)
    throw new AppError('invalid_json', 'request body is not valid JSON: the top level must be an object or an array');
  assertSafeJson(json);
  return json;
}

/**
 * The body with the array at `span` (its `tools`) parsed one element at a time, or undefined when
 * any part fails (the full parse then names the error).
 */
export async function parseToolsInSlices(body: Buffer, span: ByteSpan): Promise<Record<string, unknown> | undefined> {
  const json = parseStub(body, span);
  const tools = json && (await parseArrayInSlices(body, span, ['tools']));
  if (!tools) return undefined;
  json!.tools = tools;
  return json;
}

/**
 * A catalog write's body (`{"tools": [...]}`, an MCP tools/list result or a bare array), with a
 * large top-level array parsed in slices; other shapes, and bodies under SLICED_PARSE_BYTES, in one
 * piece. An empty body is `{}`, as express.json has it.
 */
export async function readJsonBodyInSlices(raw: Buffer): Promise<unknown> {
  const body = withoutBom(raw);
  if (body.length === 0) return {};
  if (body.length < SLICED_PARSE_BYTES) return parseWhole(body);
  const first = skipWhitespace(body, 0);
  if (body[first] === 0x5b) {
    let end = body.length;
    while (end > first && (body[end - 1] === 0x20 || body[end - 1] === 0x0a || body[end - 1] === 0x0d || body[end - 1] === 0x09)) end--;
    const values = await parseArrayInSlices(body, { start: first, end }, []);
    if (values) return values;
  } else if (body[first] === 0x7b) {
    const span = await topLevelArraySpanInSlices(body, 'tools', new TimeSlice());
    const json = span && span.end - span.start >= SLICED_PARSE_BYTES ? await parseToolsInSlices(body, span) : undefined;
    if (json) return json;
  }
  return parseWhole(body);
}

/**
 * express.json for bodies that may be large, parsed in slices (readJsonBodyInSlices): an
 * application/json body in UTF-8 whose Content-Length is SLICED_PARSE_BYTES or more, or whose size
 * is only known once read (chunked, or compressed: Content-Length counts the compressed bytes).
 * Every other body (a smaller one, another charset) is left to express.json. Sets
 * `res.locals.bodyChecked`: the safety walk is done (rejectUnsafeInput skips it).
 */
export function jsonInSlices(limit: number): RequestHandler {
  const raw = express.raw({ type: () => true, limit });
  return (req, res, next) => {
    const declared = Number(req.headers['content-length'] ?? Number.NaN);
    const sizeUnknown = Number.isNaN(declared) || (req.headers['content-encoding'] ?? 'identity').toLowerCase() !== 'identity';
    const charset = declaredCharset(req.get('content-type'));
    const utf8 = charset === undefined || charset === 'utf-8' || charset === 'utf8';
    if (!(declared >= SLICED_PARSE_BYTES || sizeUnknown) || !utf8 || !req.is('application/json')) {
      next();
      return;
    }
    raw(req, res, (error?: unknown) => {
      if (error) {
        next(error);
        return;
      }
      readJsonBodyInSlices(req.body as Buffer).then((json) => {
        req.body = json;
        res.locals.bodyChecked = true;
        next();
      }, next);
    });
  };
}

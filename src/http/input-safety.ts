import type { RequestHandler } from 'express';
import { AppError } from '../errors.js';

/**
 * Bodies are JSON of any shape the tool formats allow, so one walk checks what no schema can:
 * nesting deeper than MAX_JSON_DEPTH (a schema nested 3,000 deep overflowed the stack while
 * hashing), NUL characters (PostgreSQL's text type cannot hold them: a 500 from the store), and
 * lone UTF-16 surrogates (not encodable as UTF-8: the store would silently store U+FFFD instead,
 * changing a tool's name). Each is a 400 naming the field, before any I/O.
 */
export const MAX_JSON_DEPTH = 128;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function describe(path: (string | number)[]): string {
  return path.length === 0 ? 'the body' : path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`)).join('').replace(/^\./, '');
}

function checkString(value: string, path: (string | number)[], where: string): void {
  if (value.includes('\u0000')) throw new AppError('validation_failed', `invalid ${where}: ${describe(path)}: contains a NUL character (\\u0000)`);
  if (LONE_SURROGATE.test(value)) throw new AppError('validation_failed', `invalid ${where}: ${describe(path)}: contains a lone UTF-16 surrogate (not valid Unicode text)`);
}

/**
 * Throws a 400 for the first unsafe value in `value` (iterative: no recursion to overflow). `at`:
 * where `value` sits in the body, when it is a part of it (its depth counts, and messages name it).
 */
export function assertSafeJson(value: unknown, where = 'body', at: (string | number)[] = []): void {
  const stack: Array<{ value: unknown; path: (string | number)[] }> = [{ value, path: at }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      checkString(current, path, where);
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    if (path.length >= MAX_JSON_DEPTH) {
      throw new AppError('validation_failed', `invalid ${where}: nested deeper than ${MAX_JSON_DEPTH} levels at ${describe(path.slice(0, 8))}...`);
    }
    if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push({ value: current[index], path: [...path, index] });
    } else {
      for (const [key, child] of Object.entries(current)) {
        checkString(key, [...path, key], where);
        stack.push({ value: child, path: [...path, key] });
      }
    }
  }
}

/** Path and query checks every route shares: NUL in the path, and parsed bodies and queries. */
export const rejectUnsafeInput: RequestHandler = (req, res, next) => {
  const rawPath = req.originalUrl.split('?')[0] ?? '';
  if (/%00/i.test(rawPath)) throw new AppError('validation_failed', 'invalid path: contains a NUL character (%00)');
  assertSafeJson(req.query, 'query');
  // A body parsed in slices was checked slice by slice (http/json-body.ts).
  if (req.body !== undefined && !Buffer.isBuffer(req.body) && res.locals.bodyChecked !== true) assertSafeJson(req.body, 'body');
  next();
};

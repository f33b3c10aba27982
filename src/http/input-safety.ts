import type { RequestHandler } from 'express';
import { AppError } from '../errors.js';
import { textProblem } from '../lib/safe-text.js';

/**
 * Bodies are JSON of any shape the tool formats allow, so one walk checks what no schema can:
 * nesting deeper than MAX_JSON_DEPTH (a schema nested 3,000 deep overflowed the stack while
 * hashing), NUL characters (PostgreSQL's text type cannot hold them: a 500 from the store), and
 * lone UTF-16 surrogates (not encodable as UTF-8: the store would silently store U+FFFD instead,
 * changing a tool's name). Each is a 400 naming the field, before any I/O. An MCP message gets the
 * depth check only (rejectUnsafeInput, below).
 */
export const MAX_JSON_DEPTH = 128;

function describe(path: (string | number)[]): string {
  return path.length === 0
    ? 'the body'
    : path
        .map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`))
        .join('')
        .replace(/^\./, '');
}

/** An object or array being walked: its keys (null for an array), the next child, and where it sits. */
interface Frame {
  container: object;
  keys: string[] | null;
  next: number;
  depth: number;
  parent: Frame | null;
  key: string | number | undefined;
}

/** Where a value sits: built only for the error message, so the walk allocates no paths. */
function pathTo(at: (string | number)[], frame: Frame | null, key?: string | number): (string | number)[] {
  const parts: (string | number)[] = key === undefined ? [] : [key];
  for (let current = frame; current?.key !== undefined; current = current.parent) parts.push(current.key);
  return [...at, ...parts.reverse()];
}

/** `value` sits at `key` of `frame` (the root when both are absent). */
function checkString(value: string, where: string, at: (string | number)[], frame: Frame | null, key?: string | number): void {
  const problem = textProblem(value);
  if (problem) throw new AppError('validation_failed', `invalid ${where}: ${describe(pathTo(at, frame, key))}: ${problem}`);
}

function open(container: object, depth: number, parent: Frame | null, key: string | number | undefined, at: (string | number)[], where: string): Frame {
  const frame: Frame = { container, keys: Array.isArray(container) ? null : Object.keys(container), next: 0, depth, parent, key };
  if (depth >= MAX_JSON_DEPTH) {
    throw new AppError('validation_failed', `invalid ${where}: nested deeper than ${MAX_JSON_DEPTH} levels at ${describe(pathTo(at, frame).slice(0, 8))}...`);
  }
  return frame;
}

/**
 * Throws a 400 for the first unsafe value in `value`, in document order (iterative: no recursion to
 * overflow). `at`: where `value` sits in the body, when it is a part of it (its depth counts, and
 * messages name it).
 */
export function assertSafeJson(value: unknown, where = 'body', at: (string | number)[] = [], options: { text: boolean } = { text: true }): void {
  const checkText = options.text ? checkString : () => {};
  if (typeof value === 'string') {
    checkText(value, where, at, null);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  let frame: Frame | null = open(value, at.length, null, undefined, at, where);
  while (frame !== null) {
    const { container, keys }: Frame = frame;
    if (frame.next === (keys ?? (container as unknown[])).length) {
      frame = frame.parent;
      continue;
    }
    const index = frame.next++;
    const key = keys === null ? index : keys[index]!;
    if (keys !== null) checkText(key as string, where, at, frame, key);
    const child: unknown = (container as Record<string | number, unknown>)[key];
    if (typeof child === 'string') checkText(child, where, at, frame, key);
    else if (typeof child === 'object' && child !== null) frame = open(child, frame.depth + 1, frame, key, at, where);
  }
}

/** Path and query checks every route shares: NUL in the path, and parsed bodies and queries. */
export const rejectUnsafeInput: RequestHandler = (req, res, next) => {
  const rawPath = req.originalUrl.split('?')[0] ?? '';
  if (/%00/i.test(rawPath)) throw new AppError('validation_failed', 'invalid path: contains a NUL character (%00)');
  assertSafeJson(req.query, 'query');
  // A body parsed in slices was checked slice by slice (http/json-body.ts). An MCP message's depth
  // only: its text is checked where toolsift reads it (mcp/server.ts), so a meta-tool answers an
  // isError result the model can read, and a proxied call's arguments reach the upstream as sent.
  const text = !/^\/mcp(\/|$)/.test(req.path);
  if (req.body !== undefined && !Buffer.isBuffer(req.body) && res.locals.bodyChecked !== true) assertSafeJson(req.body, 'body', [], { text });
  next();
};

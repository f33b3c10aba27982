import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ZodError, type ZodType } from 'zod';
import { AppError, type ErrorCode } from '../errors.js';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable, isTransientConflict } from '../store/database.js';

/** The one place that decides which HTTP status each error code is. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  invalid_json: 400,
  validation_failed: 400,
  invalid_tool: 400,
  // The definition scanner found something that must not reach an agent (SCAN_POLICY=refuse).
  unsafe_tool: 400,
  // The name is held by another source of the catalog (an upstream's tool, or for a sync a pushed one).
  name_conflict: 409,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  // Answered by the HTTP server before express (http/server.ts).
  malformed_request: 400,
  request_timeout: 408,
  headers_too_large: 431,
  // A key past its requests a minute (http/rate-limit.ts), with Retry-After.
  rate_limited: 429,
  quota_exceeded: 403,
  service_unavailable: 503,
  /** An upstream MCP server (or its authorization server) failed what was asked of it on the caller's behalf: its OAuth start. */
  upstream_failed: 502,
  internal_error: 500,
};

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: unknown; request_id: string };
}

export function sendError(res: Response, error: AppError): void {
  const body: ErrorBody = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
      request_id: String(res.locals.requestId ?? ''),
    },
  };
  res.status(STATUS_BY_CODE[error.code]).json(body);
}

function zodDetails(error: ZodError) {
  return error.issues.map((issue) => ({ path: issue.path, message: plainMessage(issue.message), code: issue.code }));
}

/** zod says "received Infinity" for 1e309 and "received NaN" for ?limit=abc: say what the caller sent. */
function plainMessage(message: string): string {
  return message.replace(/expected number, received Infinity/, 'number out of range').replace(/expected number, received NaN/, 'expected a number');
}

/** Parses a request part with its zod schema; a failure is a 400 naming every bad field. */
export function parseInput<T>(schema: ZodType<T, any>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0]!;
  const where = first.path.length ? first.path.join('.') : what;
  throw new AppError('validation_failed', `invalid ${what}: ${where}: ${plainMessage(first.message)}`, zodDetails(result.error));
}

export const notFoundRoute: RequestHandler = (req) => {
  throw new AppError('not_found', `no route for ${req.method} ${req.path}`);
};

/** Translates body-parser failures, AppErrors and anything unexpected into the one error shape. */
export function errorMiddleware(log: (error: unknown, req: Parameters<RequestHandler>[0]) => void): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error instanceof AppError) {
      sendError(res, error);
      return;
    }
    if (error instanceof ZodError) {
      sendError(res, new AppError('validation_failed', 'invalid request', zodDetails(error)));
      return;
    }
    const type = (error as { type?: string }).type;
    if (type === 'request.aborted') {
      // The client went away mid-body: nothing to answer, nothing wrong with the service.
      (req.res?.locals.log as { info?: (obj: object, msg: string) => void } | undefined)?.info?.({ path: req.path }, 'client aborted the request');
      return;
    }
    const zlibCode = (error as { code?: string }).code;
    if (typeof zlibCode === 'string' && zlibCode.startsWith('Z_')) {
      sendError(
        res,
        new AppError(
          'invalid_json',
          `request body could not be decompressed (Content-Encoding ${req.get('content-encoding') ?? '?'}): ${(error as Error).message}`,
        ),
      );
      return;
    }
    if (error instanceof URIError) {
      sendError(res, new AppError('validation_failed', 'invalid path: malformed percent-escape (%XX must encode UTF-8)'));
      return;
    }
    if (type === 'entity.too.large') {
      const limit = (error as { limit?: number }).limit;
      sendError(res, new AppError('payload_too_large', `request body exceeds the limit of ${limit} bytes (BODY_LIMIT)`));
      return;
    }
    if (type === 'entity.parse.failed') {
      sendError(res, new AppError('invalid_json', `request body is not valid JSON: ${(error as Error).message}`));
      return;
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      sendError(res, new AppError('unsupported_media_type', (error as Error).message));
      return;
    }
    if (isDatabaseUnavailable(error)) {
      // Never a 500 for a database that is down, unreachable or slower than DB_TIMEOUT_MS.
      res.setHeader('Retry-After', '1');
      sendError(res, new AppError('service_unavailable', DATABASE_UNAVAILABLE_MESSAGE));
      return;
    }
    if (isTransientConflict(error)) {
      // A write that kept conflicting with concurrent ones after its retries (store/database.ts).
      res.setHeader('Retry-After', '1');
      sendError(res, new AppError('service_unavailable', 'the write conflicted with concurrent writes of the same catalog or tools; retry shortly'));
      return;
    }
    log(error, req);
    sendError(res, new AppError('internal_error', 'internal error; see the service log for this request id'));
  };
}

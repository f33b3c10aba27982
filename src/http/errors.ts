import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ZodError, type ZodType } from 'zod';
import { AppError, type ErrorCode } from '../errors.js';

/** The one place that decides which HTTP status each error code is. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  invalid_json: 400,
  validation_failed: 400,
  invalid_tool: 400,
  unauthorized: 401,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  service_unavailable: 503,
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
  return error.issues.map((issue) => ({ path: issue.path, message: issue.message, code: issue.code }));
}

/** Parses a request part with its zod schema; a failure is a 400 naming every bad field. */
export function parseInput<T>(schema: ZodType<T, any>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0]!;
  const where = first.path.length ? first.path.join('.') : what;
  throw new AppError('validation_failed', `invalid ${what}: ${where}: ${first.message}`, zodDetails(result.error));
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
    log(error, req);
    sendError(res, new AppError('internal_error', 'internal error; see the service log for this request id'));
  };
}

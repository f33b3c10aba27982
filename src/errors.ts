/**
 * The closed list of error codes toolsift answers with. Every layer throws `AppError` with one of
 * these; only `http/errors.ts` knows which HTTP status each one becomes.
 */
export const ERROR_CODES = [
  'invalid_json',
  'validation_failed',
  'invalid_tool',
  'unsafe_tool',
  'name_conflict',
  'unauthorized',
  'forbidden',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'malformed_request',
  'request_timeout',
  'headers_too_large',
  'rate_limited',
  'quota_exceeded',
  'service_unavailable',
  'upstream_failed',
  'internal_error',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

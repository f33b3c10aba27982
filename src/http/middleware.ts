import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's X-Request-Id when it is sane, otherwise makes one; echoed on every answer. */
export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.get('x-request-id');
  const id = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};

/** The methods whose operations take a body; the others' operations take none. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Runs `handler` (a body parser or the body budget) only for a method that takes a body. A GET or
 * DELETE that sends one anyway is answered as without it: the body is never read into memory,
 * parsed or refused (Node discards it), as openapi.yaml documents no 413 or 415 for them.
 */
export const forBodies = (handler: RequestHandler): RequestHandler => (req, res, next) => (BODY_METHODS.has(req.method) ? handler(req, res, next) : next());

/**
 * Bodies must be JSON: a form or text body would otherwise arrive as "no body" and confuse. A
 * declared type other than JSON is refused even with an empty body (the MCP transport would
 * otherwise refuse it in its own shape).
 */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  if (!BODY_METHODS.has(req.method)) return next();
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if ((hasBody || req.get('content-type') !== undefined) && !declaresJson(req)) throw notJson(req);
  next();
};

/** Whether the request's Content-Type is application/json (any parameters). */
export const declaresJson = (req: Request) => req.get('content-type')?.split(';')[0]!.trim().toLowerCase() === 'application/json';

/** The 415 for a body that is not declared JSON. */
export const notJson = (req: Request) =>
  new AppError('unsupported_media_type', `request body must be application/json, got ${req.get('content-type') ?? 'no content type'}`);

function presentedKey(authorization: string | undefined, apiKey: string | undefined): string | undefined {
  if (apiKey) return apiKey.trim();
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
  return match?.[1]?.trim();
}

export const DEFAULT_TENANT = 'default';

/**
 * API keys map to tenants (`API_KEYS=key:tenant,...`). Either `Authorization: Bearer <key>` or
 * `X-API-Key: <key>` is accepted (the two gateway generations send one each). With no keys
 * configured the service is open and every caller is the default tenant.
 */
export function authenticate(keys: Map<string, string> | undefined): RequestHandler {
  return (req, res, next) => {
    if (!keys || keys.size === 0) {
      res.locals.tenant = DEFAULT_TENANT;
      next();
      return;
    }
    const key = presentedKey(req.get('authorization'), req.get('x-api-key'));
    if (!key && req.get('authorization')) {
      throw new AppError('unauthorized', 'Authorization header without the Bearer scheme: send Authorization: Bearer <key> (or X-API-Key: <key>)');
    }
    if (!key) throw new AppError('unauthorized', 'missing API key: send Authorization: Bearer <key> or X-API-Key: <key>');
    const tenant = keys.get(key);
    if (!tenant) throw new AppError('unauthorized', 'invalid API key');
    res.locals.tenant = tenant;
    next();
  };
}

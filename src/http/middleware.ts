import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
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

/** Bodies must be JSON: a form or text body would otherwise arrive as "no body" and confuse. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (['POST', 'PUT', 'PATCH'].includes(req.method) && hasBody && !req.is('application/json')) {
    throw new AppError('unsupported_media_type', `request body must be application/json, got ${req.get('content-type') ?? 'no content type'}`);
  }
  next();
};

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

import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import { ANONYMOUS_CALLER } from '../search/feedback.js';
import { Access, fullAccess, keyDigest, type KeyPolicy, type PolicyDecision } from '../trust/policy.js';

/** The caller `authenticate` found for this request. */
export const requestCaller = (res: Response): string => String(res.locals.caller ?? ANONYMOUS_CALLER);

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
export const forBodies =
  (handler: RequestHandler): RequestHandler =>
  (req, res, next) =>
    BODY_METHODS.has(req.method) ? handler(req, res, next) : next();

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
export const declaresJson = (req: Request) => (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';

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
 * API keys map to tenants (`API_KEYS=key:tenant,...`, and API_KEYS_FILE's keys with their scopes:
 * `res.locals.access`). Either `Authorization: Bearer <key>` or
 * `X-API-Key: <key>` is accepted (the two gateway generations send one each). With no keys
 * configured the service is open and every caller is the default tenant.
 */
export function authenticate(
  keys: Map<string, string> | undefined,
  options: { policies?: Map<string, KeyPolicy>; record?: (decision: PolicyDecision) => void } = {},
): RequestHandler {
  return (req, res, next) => {
    if (!keys || keys.size === 0) {
      res.locals.tenant = DEFAULT_TENANT;
      res.locals.caller = ANONYMOUS_CALLER;
      // No key, so no management over MCP: only a key given `manage` in API_KEYS_FILE is offered it.
      res.locals.access = new Access(fullAccess(DEFAULT_TENANT, 'open'), options.record);
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
    res.locals.caller = callerOf(key);
    // A key of API_KEYS, or of the keys file without scopes: all of its tenant (trust/policy.ts).
    res.locals.access = new Access(options.policies?.get(key) ?? fullAccess(tenant, callerOf(key)), options.record);
    next();
  };
}

/** Who calls, without the key: what bounds one caller's share of what is learned (search/feedback.ts), and a key's default id. */
export const callerOf = keyDigest;

/** The presenting key's policy for this request, at the route `via` (set by `authenticate`). */
export const requestAccess = (res: Response, via: string): Access =>
  ((res.locals.access as Access | undefined) ?? new Access(fullAccess(String(res.locals.tenant ?? DEFAULT_TENANT), 'open'))).at('rest', via);

/** Whether a browser origin is listed: an origin (`https://app.example`) or a hostname, or `*`. */
export function originAllowed(origin: string, allowed: string): boolean {
  const entries = allowed
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.includes('*')) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return entries.some((entry) => (entry.includes('://') ? entry.replace(/\/$/, '') === url.origin : entry === url.hostname));
}

/** Whether the Host header names a host this instance answers to (`*`: any). */
export function hostAllowed(host: string | undefined, allowed: string): boolean {
  const entries = allowed
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.includes('*')) return true;
  if (!host) return false;
  const hostname = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  return entries.includes(hostname.toLowerCase());
}

/** Routes a load balancer or orchestrator probes by address (Host: a pod IP): they hold no tenant's data. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * DNS rebinding (issue 70): a web page on a name its author controls can point that name at
 * 127.0.0.1 and then call an open toolsift as same-origin. So every route answers only Host names
 * it serves (ALLOWED_HOSTS: the loopback names when no API key is set), and a browser's Origin must
 * be listed (ALLOWED_ORIGINS) or be the page's own origin under an allowed Host (the playground at
 * /ui). Requests without an Origin (every non-browser client) are checked by Host only.
 */
export function hostAndOriginGuard(options: { allowedHosts: string; allowedOrigins: string }): RequestHandler {
  return (req, _res, next) => {
    if (PROBES.has(req.path)) return next();
    const host = req.get('host');
    if (!hostAllowed(host, options.allowedHosts)) {
      throw new AppError(
        'forbidden',
        `host ${host ?? '(none)'} is not served here (ALLOWED_HOSTS; an instance without API_KEYS answers only its loopback names)`,
      );
    }
    const origin = req.get('origin');
    if (origin !== undefined && !originAllowed(origin, options.allowedOrigins) && !sameOrigin(origin, host, req.protocol)) {
      throw new AppError('forbidden', `origin ${origin} may not call this service (ALLOWED_ORIGINS)`);
    }
    next();
  };
}

function sameOrigin(origin: string, host: string | undefined, protocol: string): boolean {
  if (!host) return false;
  try {
    return new URL(origin).origin === new URL(`${protocol}://${host}`).origin;
  } catch {
    return false;
  }
}

/**
 * /metrics names tenants and upstreams: with API keys set it takes `Authorization: Bearer
 * <METRICS_TOKEN>` (Prometheus' `authorization` scrape setting), and answers 401 without one.
 */
export function metricsAuth(keys: Map<string, string> | undefined, token: string | undefined): RequestHandler {
  return (req, _res, next) => {
    if (!keys || keys.size === 0) return next();
    if (!token) throw new AppError('unauthorized', 'with API_KEYS set, /metrics needs METRICS_TOKEN set and sent as Authorization: Bearer <token>');
    const presented = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '')?.[1]?.trim();
    if (!presented || !timingSafeEqualText(presented, token))
      throw new AppError('unauthorized', 'missing or wrong metrics token: send Authorization: Bearer <METRICS_TOKEN>');
    next();
  };
}

function timingSafeEqualText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

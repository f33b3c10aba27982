import type { Request, RequestHandler, Response } from 'express';
import { traceContext, type TraceContext } from '../lib/trace-context.js';
import { CATALOG, RESULTS, TENANT, type Tracing } from '../tracing/tracing.js';

/** Probes and scrapes: a span every few seconds each that says nothing of the traffic. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * A SERVER span per HTTP request (installed only when tracing is on), named by its route as
 * OpenTelemetry's HTTP conventions name it (`POST /v1/catalogs/:catalog/search`), continuing the
 * caller's `traceparent` header. Its context is the request's (requestTrace): the MCP route's
 * meta-tool spans run within it when a call's own `_meta` names no parent.
 */
export function traceRequests(tracing: Tracing): RequestHandler {
  return (req, res, next) => {
    if (UNTRACED.has(req.path)) return next();
    const span = tracing.start(req.method, {
      kind: 'server',
      parent: headerTrace(req),
      attributes: { 'http.request.method': req.method },
    });
    res.locals.trace = span.context;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const route = routeOf(req);
      // A client that left before the answer: no status was sent, and the failure is not the server's.
      const status = res.writableFinished ? res.statusCode : undefined;
      span.rename(route ? `${req.method} ${route}` : req.method);
      const facts = (res.locals.traceFacts ?? {}) as TraceFacts;
      span.set({
        'http.route': route,
        'http.response.status_code': status,
        [TENANT]: typeof res.locals.tenant === 'string' ? res.locals.tenant : undefined,
        [CATALOG]: facts.catalog ?? (typeof req.params?.catalog === 'string' ? req.params.catalog : undefined),
        [RESULTS]: facts.results,
      });
      span.end(status !== undefined && status >= 500 ? String(status) : undefined);
    };
    res.on('finish', end);
    res.on('close', end);
    next();
  };
}

/** What a route tells its request's span beyond the route: how many results it answered, the stored catalog a body named. */
export interface TraceFacts {
  results?: number;
  catalog?: string;
}

/** Notes `facts` for the request's span (read when the answer is sent; nothing is done without tracing but keeping them). */
export function traceFacts(res: Response, facts: TraceFacts): void {
  res.locals.traceFacts = facts;
}

/** The trace context a request's work continues: its span's when requests are traced, else the caller's headers'. */
export function requestTrace(req: Request, res: Response): TraceContext | undefined {
  return (res.locals.trace as TraceContext | undefined) ?? headerTrace(req);
}

const headerTrace = (req: Request) => traceContext({ traceparent: req.headers.traceparent, tracestate: req.headers.tracestate });

/**
 * The matched route's template, or undefined (404). A route given several paths names the one this
 * request took: the path itself when it has no parameters, else the one whose parameters it has.
 */
function routeOf(req: Request): string | undefined {
  if (!req.route) return undefined;
  const paths = ([] as unknown[]).concat(req.route.path).map(String);
  const taken =
    paths.length === 1
      ? paths[0]
      : (paths.find((path) => `${req.baseUrl}${path}` === req.originalUrl.split('?')[0]) ??
        paths
          .map((path) => ({ path, names: [...path.matchAll(/:(\w+)/g)].map((match) => match[1]!) }))
          .filter(({ names }) => names.every((name) => req.params?.[name] !== undefined))
          .sort((a, b) => b.names.length - a.names.length)[0]?.path);
  return taken === undefined ? undefined : `${req.baseUrl}${taken}`;
}

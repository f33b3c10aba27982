import type { RequestHandler } from 'express';
import { CATALOG_NAME, notDots } from './catalogs.js';
import { requestAccess } from './middleware.js';

/**
 * What each route under /v1/catalogs/{catalog} needs of the key, by method and the path after the
 * catalog: reading the catalog, writing it, or writing it whole (the tools a limited key does not
 * see would go too). A route not listed needs a write: a new route is closed until it is placed here.
 * Tool- and upstream-level checks are made where the answers are produced (catalog-service,
 * rankCatalog, the upstream routes).
 */
const RULES: { method: string; rest: RegExp; need: 'read' | 'write' | 'whole' }[] = [
  { method: 'GET', rest: /^$/, need: 'read' },
  { method: 'PUT', rest: /^$/, need: 'whole' },
  { method: 'PATCH', rest: /^$/, need: 'write' },
  { method: 'DELETE', rest: /^$/, need: 'whole' },
  { method: 'GET', rest: /^\/tools(\/[^/]+)?$/, need: 'read' },
  { method: 'POST', rest: /^\/tools$/, need: 'write' },
  { method: 'DELETE', rest: /^\/tools\/[^/]+$/, need: 'write' },
  { method: 'POST', rest: /^\/search$/, need: 'read' },
  { method: 'DELETE', rest: /^\/feedback$/, need: 'write' },
  { method: 'GET', rest: /^\/upstreams(\/[^/]+)?$/, need: 'read' },
  { method: 'PUT', rest: /^\/upstreams\/[^/]+$/, need: 'write' },
  { method: 'POST', rest: /^\/upstreams\/[^/]+\/(approve|reject)$/, need: 'write' },
  { method: 'DELETE', rest: /^\/upstreams\/[^/]+$/, need: 'write' },
];

/** The route family's rule, for the policy test's walk over every route. */
export function catalogRouteNeed(method: string, rest: string): 'read' | 'write' | 'whole' {
  return RULES.find((rule) => rule.method === method && rule.rest.test(rest))?.need ?? 'write';
}

/**
 * The catalog-level check of every /v1/catalogs/{catalog} route, before its body is read: 403 when
 * the key may not use the catalog, or not write it (decided by the name and the key alone, so it
 * says nothing of whether the catalog exists). A malformed name is left to the route's 400.
 */
export const catalogAccess: RequestHandler = (req, res, next) => {
  const catalog = req.params.catalog;
  if (typeof catalog !== 'string' || !CATALOG_NAME.test(catalog) || !notDots(catalog)) return next();
  const rest = req.path.replace(/\/$/, '');
  const need = catalogRouteNeed(req.method === 'HEAD' ? 'GET' : req.method, rest);
  const access = requestAccess(res, `${req.method} /v1/catalogs/{catalog}${rest.replace(/^\/(tools|upstreams)\/[^/]+/, '/$1/{name}')}`);
  if (need === 'read') {
    access.requireCatalog(catalog);
    access.allowed('see_catalog', { catalog });
  } else if (need === 'whole') access.requireWholeCatalog(catalog);
  else access.requireWrite(catalog);
  next();
};

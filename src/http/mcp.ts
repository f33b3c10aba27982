import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { Router, type Request, type Response } from 'express';
import { readScopeCatalog, type DiscoveryScope } from '../mcp/discovery.js';
import { createToolsiftMcpServer, type McpDeps } from '../mcp/server.js';
import { catalogParams } from './catalogs.js';
import { parseInput } from './errors.js';
import { declaresJson, notJson, requestAccess, requestCaller } from './middleware.js';
import type { ChargeKey } from './rate-limit.js';
import { requestTrace } from './trace-requests.js';

export const MCP_PATHS = ['/mcp', '/mcp/:catalog'];

/**
 * `/mcp` (every catalog of the caller's tenant) and `/mcp/{catalog}` (one), Streamable HTTP through
 * the official SDK's `createMcpHandler`: stateless, serving 2026-07-28 clients and legacy clients
 * that open with `initialize` from one endpoint. Runs behind the same API-key authentication and
 * Host / Origin checks (middleware.ts) as the REST API; the tenant and catalog scope reach the
 * per-request server through `authInfo`.
 */
export function mcpRoutes(deps: McpDeps): Router {
  const handler = createMcpHandler(
    ({ authInfo }) => {
      const scope = authInfo?.extra as DiscoveryScope | undefined;
      if (!scope) throw new Error('MCP request without a tenant scope');
      return createToolsiftMcpServer(deps, scope);
    },
    { onerror: (error) => deps.logger.warn({ err: error }, 'mcp: request rejected or failed') },
  );
  const serve = toNodeHandler(handler, { onerror: (error) => deps.logger.error({ err: error }, 'mcp: handler failed') });
  const router = Router();
  const route = async (req: Request, res: Response) => {
    // A message without a JSON Content-Type, empty or not: the 415 openapi.yaml documents, not the transport's own.
    if (req.method === 'POST' && !declaresJson(req)) throw notJson(req);
    const tenant = String(res.locals.tenant);
    const caller = requestCaller(res);
    const access = requestAccess(res, 'mcp').at('mcp', 'mcp');
    const chargeKey = res.locals.chargeKey as ChargeKey | undefined;
    // The W3C trace context of the HTTP request (its span's, when requests are traced); a call's own _meta wins (server.ts).
    const trace = requestTrace(req, res);
    let scope: DiscoveryScope = { tenant, caller, access, ...(chargeKey ? { chargeKey } : {}), ...(trace ? { trace } : {}) };
    if (req.params.catalog !== undefined) {
      const catalog = parseInput(catalogParams, req.params, 'path').catalog;
      // 403 for a catalog outside the key's catalogs, decided by its name alone (before it is looked up).
      access.requireCatalog(catalog);
      // 404 for an unknown catalog; the row then serves this request's tools (one read, not two).
      // While the store does not answer, the row as last read here (readScopeCatalog).
      scope = { ...scope, catalog, summary: await readScopeCatalog(deps, tenant, catalog) };
    }
    (req as Request & { auth?: unknown }).auth = { token: '', clientId: tenant, scopes: [], extra: { ...scope } };
    await serve(req, res, req.body);
  };
  router.all(MCP_PATHS, route);
  return router;
}

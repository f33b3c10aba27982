import express, { type Express } from 'express';
import type { Logger } from '../logger.js';
import type { CatalogDeps } from '../catalog/catalog-service.js';
import type { RankDeps } from '../search/hybrid-search.js';
import { catalogRoutes } from './catalogs.js';
import { errorMiddleware, notFoundRoute } from './errors.js';
import { searchRoutes } from './search.js';
import { SELECTOR_PATHS, selectorRoutes } from './selector.js';
import { withEarlyQuery } from './early-query.js';
import type { SelectorDeps } from '../search/selector.js';
import { healthRoutes, type ReadinessCheck } from './health.js';
import { jobRoutes } from './jobs.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import { authenticate, forBodies, hostAndOriginGuard, metricsAuth, requestId, requireJsonBody } from './middleware.js';
import { metricsRoutes, observeRequests } from './observability.js';
import { docsRoutes } from './docs.js';
import { uiRoutes } from './ui.js';
import { mcpRoutes } from './mcp.js';
import type { SandboxPool } from '../sandbox/sandbox-pool.js';
import { rejectUnsafeInput } from './input-safety.js';
import { bodyBudget } from './body-budget.js';
import { jsonInSlices } from './json-body.js';
import { TOOL_SEARCH_PATH, toolSearchRoutes } from './tool-search.js';
import { catalogListCache, toolRowCache, upstreamRowCache } from '../mcp/discovery.js';
import { argumentChecks } from '../catalog/tool-arguments.js';
import type { ResultScanMode } from '../mcp/result-scan.js';
import { policyRecorder, type AuditLog } from '../audit.js';
import type { KeyPolicy } from '../trust/policy.js';
import { catalogAccess } from './catalog-access.js';
import { rateLimit } from './rate-limit.js';
import { serviceVersion } from '../lib/paths.js';
import type { UpstreamService } from '../upstream/upstreams.js';
import { clientMetadataRoutes, oauthCallbackRoutes, upstreamRoutes } from './upstreams.js';
import { scanRoutes } from './scan.js';
import { feedbackRoutes } from './feedback.js';
import type { Metrics } from '../metrics.js';
import type { SharedBuckets } from '../store/shared-buckets.js';
import type { Tracing } from '../tracing/tracing.js';
import { traceRequests } from './trace-requests.js';

export interface AppDeps {
  /** The settings the HTTP layer reads (config.ts has their meaning). */
  config: {
    BODY_LIMIT: number;
    BODY_MEMORY: number;
    API_KEYS?: Map<string, string>;
    /** API_KEYS_FILE's keys' scopes (trust/policy.ts); a key not in it has full access within its tenant. */
    KEY_POLICIES?: Map<string, KeyPolicy>;
    ALLOWED_ORIGINS: string;
    ALLOWED_HOSTS: string;
    METRICS_TOKEN?: string;
    /** on: the draft MCP methods and tools on /mcp (mcp/drafts.ts). */
    MCP_DRAFTS?: 'on' | 'off';
    /** Toolsift's OAuth callback as an operator's browser reaches it; unset: from the start request. */
    OAUTH_REDIRECT_URL?: string;
    /** Requests a minute for keys without their own (http/rate-limit.ts); unset: none. */
    RATE_LIMIT_PER_MINUTE?: number;
    /** What proxied calls' results are screened for (mcp/result-scan.ts), and how much of each is read. */
    RESULT_SCAN: ResultScanMode;
    RESULT_SCAN_MAX_CHARS: number;
  };
  logger: Logger;
  catalog: CatalogDeps;
  search: RankDeps;
  selector: SelectorDeps;
  readiness: ReadinessCheck[];
  metrics: Metrics;
  /** Embedding jobs for GET /v1/jobs/{id}; null or absent when nothing is embedded. */
  queue?: EmbedQueue | null;
  /** Upstream MCP servers: their REST routes and call_tool's route to them; absent in some tests. */
  upstreams?: UpstreamService | null;
  /** The gateway's audit trail (proxied calls); absent in some tests. */
  audit?: AuditLog;
  /** Code mode's sandbox (CODE_MODE=on): run_code on /mcp. */
  sandbox?: SandboxPool | null;
  /** Rate limits' buckets shared by the replicas (REDIS_URL); absent: this process's. */
  rateBuckets?: SharedBuckets | null;
  /** Spans of requests, meta-tool calls and upstream calls (OTEL_EXPORTER_OTLP_*); absent or off: none. */
  tracing?: Tracing;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(requestId);
  if (deps.tracing?.enabled) app.use(traceRequests(deps.tracing));
  app.use(observeRequests(deps.logger, deps.metrics));
  app.use(hostAndOriginGuard({ allowedHosts: deps.config.ALLOWED_HOSTS, allowedOrigins: deps.config.ALLOWED_ORIGINS }));
  app.use(healthRoutes(deps.readiness));
  app.use('/metrics', metricsAuth(deps.config.API_KEYS, deps.config.METRICS_TOKEN));
  app.use(metricsRoutes(deps.metrics));
  app.use(docsRoutes());
  app.use(uiRoutes());
  // An operator's browser back from an OAuth authorization server: no API key, the state is the
  // capability. The client ID metadata document is for authorization servers, which have no key either.
  if (deps.upstreams) app.use(oauthCallbackRoutes(deps.upstreams), clientMetadataRoutes(deps.upstreams.clientMetadata));
  // Authenticate before reading a body of up to BODY_LIMIT bytes.
  app.use(
    ['/v1', '/api', '/mcp'],
    authenticate(deps.config.API_KEYS, { policies: deps.config.KEY_POLICIES, record: policyRecorder(deps.audit, deps.metrics) }),
    // A key past its requests a minute is answered before anything else is done for it.
    rateLimit({ perMinute: deps.config.RATE_LIMIT_PER_MINUTE, metrics: deps.metrics, shared: deps.rateBuckets }),
  );
  // The key's catalog-level scope on every /v1/catalogs/{catalog} route, before a body is read.
  app.use('/v1/catalogs/:catalog', catalogAccess);
  app.use(requireJsonBody);
  app.use(forBodies(bodyBudget(deps.config.BODY_MEMORY, deps.config.BODY_LIMIT)));
  // The selector and tool-search read their own JSON: they skip parsing tool lists seen before (http/tool-list-body.ts).
  const rawBody = express.raw({ type: () => true, limit: deps.config.BODY_LIMIT });
  // The selector's query starts on the model while its tools are still arriving (http/early-query.ts).
  app.use(SELECTOR_PATHS, forBodies(withEarlyQuery(rawBody, deps.selector)));
  app.use(TOOL_SEARCH_PATH, forBodies(rawBody));
  // Catalog writes of thousands of tools: parsed in slices, so other requests run meanwhile.
  app.use('/v1/catalogs', forBodies(jsonInSlices(deps.config.BODY_LIMIT)));
  app.use(forBodies(express.json({ limit: deps.config.BODY_LIMIT })));
  app.use(rejectUnsafeInput);
  app.use(catalogRoutes(deps.catalog));
  app.use(scanRoutes());
  app.use(searchRoutes(deps.search, deps.metrics));
  app.use(feedbackRoutes(deps.search));
  app.use(selectorRoutes(deps.selector, deps.search));
  app.use(toolSearchRoutes({ selector: deps.selector, search: deps.search, tokens: deps.selector.tokens }, deps.metrics));
  app.use(
    mcpRoutes({
      catalog: deps.catalog,
      search: deps.search,
      upstreams: deps.upstreams ?? null,
      management: deps.upstreams ?? null,
      toolRows: toolRowCache(),
      catalogLists: catalogListCache(),
      upstreamRows: upstreamRowCache(),
      argumentChecks: argumentChecks(),
      resultScan: { mode: deps.config.RESULT_SCAN, maxChars: deps.config.RESULT_SCAN_MAX_CHARS },
      audit: deps.audit,
      logger: deps.logger,
      metrics: deps.metrics,
      version: serviceVersion(),
      sandbox: deps.sandbox ?? null,
      drafts: deps.config.MCP_DRAFTS === 'on',
      ...(deps.tracing ? { tracing: deps.tracing } : {}),
    }),
  );
  app.use(jobRoutes(deps.queue ?? null, deps.catalog.db));
  if (deps.upstreams) app.use(upstreamRoutes(deps.upstreams, { redirectUrl: deps.config.OAUTH_REDIRECT_URL }));
  app.use(notFoundRoute);
  app.use(
    errorMiddleware((error, req) => {
      const log = (req.res?.locals.log as Logger | undefined) ?? deps.logger;
      log.error({ err: error, method: req.method, path: req.path }, 'request failed');
    }),
  );
  return app;
}

import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { Router } from 'express';
import { z } from 'zod';
import { rankCatalog } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import { catalogParams, toolJson } from './catalogs.js';
import { parseInput } from './errors.js';
import { requestAccess, requestCaller } from './middleware.js';
import { recordSearch, type Metrics } from '../metrics.js';
import { traceFacts } from './trace-requests.js';

export const catalogSearchRequest = z
  .object({
    query: z.string().trim().min(1, 'query must not be empty').max(QUERY_CHARS_MAX),
    top_k: z.number().int().min(1).max(100).default(5),
    tags: z.array(z.string().min(1).max(64)).max(64).optional(),
    mode: z.enum(['hybrid', 'bm25', 'vector']).default('hybrid'),
    detail: z.enum(['brief', 'full']).default('brief'),
    explain: z.boolean().default(false),
  })
  .strict();
export type CatalogSearchRequest = z.infer<typeof catalogSearchRequest>;

export function searchRoutes(deps: RankDeps, metrics?: Metrics): Router {
  const router = Router();
  router.post('/v1/catalogs/:catalog/search', async (req, res) => {
    const started = performance.now();
    const { catalog } = parseInput(catalogParams, req.params, 'path');
    const body = parseInput(catalogSearchRequest, req.body, 'body');
    const ref = { tenant: String(res.locals.tenant), name: catalog };
    // The store's ranking, or while the store does not answer the catalog as last seen here (as
    // tool-search, the selector and MCP answer it): one rule on every path.
    const access = requestAccess(res, 'POST /v1/catalogs/{catalog}/search');
    const ranking = await rankCatalog(deps, ref, { query: body.query, topK: body.top_k, mode: body.mode, tags: body.tags, access });
    const answered = ranking.from === 'store' ? ranking.result : undefined;
    if (answered) recordSearch(metrics, 'catalog_search', answered.timings, answered.degraded, answered.language);
    else recordSearch(metrics, 'catalog_search', {}, 'store_error');
    const results =
      ranking.from === 'store'
        ? ranking.result.tools.map((ranked) => ({
            ...toolJson(ranked.tool, body.detail),
            score: ranked.score,
            ...(body.explain ? { explain: ranked.explain } : {}),
          }))
        : ranking.tools.map(({ name, score }) => {
            // Text only for the tools a search here answered with before: the index holds terms, not text.
            const seen = ranking.index && deps.seenTools?.get(ranking.index.catalogId, name);
            const server = seen ? seen.server : (ranking.index?.servers.serverOf.get(name) ?? null);
            return {
              ...(seen
                ? toolJson(seen, body.detail)
                : body.detail === 'brief'
                  ? { name, tags: [], server, description: '', parameters: [] }
                  : { name, tags: [], server, description: '', definition: null }),
              score,
            };
          });
    traceFacts(res, { results: results.length });
    // The answer's id, which POST /v1/feedback may quote to judge exactly this search.
    const searchId = deps.recentSearches?.record(
      { tenant: ref.tenant, caller: requestCaller(res), query: body.query, shown: [{ catalog, names: results.map((tool) => tool.name) }] },
      { correlate: false },
    );
    res.json({
      results,
      ...(searchId ? { search_id: searchId } : {}),
      took_ms: Math.round((performance.now() - started) * 100) / 100,
      ...(answered
        ? {
            ...(answered.degraded ? { degraded: answered.degraded } : {}),
            ...(answered.language ? { query_language: answered.language } : {}),
            ...(answered.rerank ? { rerank: answered.rerank.outcome } : {}),
            ...(answered.embedding ? { embedding: answered.embedding } : {}),
          }
        : { degraded: 'store_error' }),
    });
  });
  return router;
}

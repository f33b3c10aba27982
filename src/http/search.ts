import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { Router } from 'express';
import { z } from 'zod';
import { searchCatalog } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import { catalogParams, toolJson } from './catalogs.js';
import { parseInput } from './errors.js';
import { requestCaller } from './middleware.js';
import { recordSearch, type Metrics } from '../metrics.js';

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
    const result = await searchCatalog(
      deps,
      { tenant: String(res.locals.tenant), name: catalog },
      { query: body.query, topK: body.top_k, mode: body.mode, tags: body.tags },
    );
    recordSearch(metrics, 'catalog_search', result.timings, result.degraded, result.language);
    // The answer's id, which POST /v1/feedback may quote to judge exactly this search.
    const searchId = deps.recentSearches?.record(
      {
        tenant: String(res.locals.tenant),
        caller: requestCaller(res),
        query: body.query,
        shown: [{ catalog, names: result.tools.map((ranked) => ranked.tool.name) }],
      },
      { correlate: false },
    );
    res.json({
      results: result.tools.map((ranked) => ({
        ...toolJson(ranked.tool, body.detail),
        score: ranked.score,
        ...(body.explain ? { explain: ranked.explain } : {}),
      })),
      ...(searchId ? { search_id: searchId } : {}),
      took_ms: Math.round((performance.now() - started) * 100) / 100,
      ...(result.degraded ? { degraded: result.degraded } : {}),
      ...(result.language ? { query_language: result.language } : {}),
      ...(result.rerank ? { rerank: result.rerank.outcome } : {}),
      ...(result.embedding ? { embedding: result.embedding } : {}),
    });
  });
  return router;
}

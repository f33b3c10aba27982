import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import * as catalogService from '../catalog/catalog-service.js';
import type { EmbedQueue } from '../jobs/embed-queue.js';
import { searchCatalog, type CatalogSearchResult } from '../search/catalog-search.js';
import type { RankDeps, SearchMode } from '../search/hybrid-search.js';
import { meanMetrics, scoreQuery, type QueryMetrics } from './metrics.js';

const queryLine = z.object({
  id: z.string(),
  query: z.string(),
  relevant: z.array(z.string()),
  relevant_groups: z.array(z.array(z.string())).optional(),
});
export type EvalQuery = z.infer<typeof queryLine>;

/** One JSON value per non-blank line; a bad line is reported with its file and line number. */
export function readJsonl(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      try {
        return JSON.parse(line);
      } catch (error) {
        throw new Error(`${path}:${index + 1}: ${(error as Error).message}`);
      }
    });
}

export function loadQueries(path: string): EvalQuery[] {
  return readJsonl(path).map((row, index) => {
    const parsed = queryLine.safeParse(row);
    if (!parsed.success) throw new Error(`${path}:${index + 1}: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  });
}

/**
 * Queries ranked at once: the model runs on two threads by default (EMBED_THREADS), and one query
 * at a time leaves one idle. No search changes another's answer, so the figures are those of one
 * query at a time; results are read in the queries' order.
 */
const QUERIES_AT_ONCE = 2;

/** `run` over `items`, at most `width` at once, the results in the items' order. */
async function inOrder<T, R>(items: readonly T[], width: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await run(items[at]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

export interface EvalReport {
  dataset: string;
  tools: number;
  modes: Record<string, ReturnType<typeof meanMetrics>>;
  /** Top-50 names per query for the first mode. */
  rankings: { id: string; ranked: string[] }[];
}

/**
 * Ingests `<dataset>/catalog.jsonl` through the catalog service (the REST API's code) into a
 * scratch catalog, waits until every tool is embedded, then ranks every query with the search
 * endpoint's function, per mode. The scratch catalog is deleted afterwards.
 */
export async function runEval(
  deps: { catalog: catalogService.CatalogDeps; search: RankDeps; queue: EmbedQueue | null },
  options: {
    dataset: string;
    queries?: string;
    modes: SearchMode[];
    onProgress?: (message: string) => void;
    rewriteQuery?: (query: string) => string;
    /** Each query's whole answer (with every tool's explain), e.g. to fit the confidence model. */
    onResult?: (query: EvalQuery, mode: SearchMode, result: CatalogSearchResult) => void;
  },
): Promise<EvalReport> {
  const tools = readJsonl(join(options.dataset, 'catalog.jsonl'));
  const rewrite = options.rewriteQuery ?? ((query: string) => query);
  const queries = loadQueries(options.queries ?? join(options.dataset, 'queries.dev.jsonl')).map((query) => ({ ...query, query: rewrite(query.query) }));
  const ref = { tenant: 'eval', name: `eval-${randomBytes(4).toString('hex')}` };
  await catalogService.replaceCatalog(deps.catalog, ref, tools);
  try {
    options.onProgress?.(`ingested ${tools.length} tools; embedding`);
    await deps.queue?.whenIdle();
    const report: EvalReport = { dataset: options.dataset, tools: tools.length, modes: {}, rankings: [] };
    for (const [modeIndex, mode] of options.modes.entries()) {
      const perQuery: QueryMetrics[] = [];
      const results = await inOrder(queries, QUERIES_AT_ONCE, (query) => searchCatalog(deps.search, ref, { query: query.query, topK: 50, mode }));
      for (const [at, query] of queries.entries()) {
        const result = results[at]!;
        options.onResult?.(query, mode, result);
        const ranked = result.tools.map((tool) => tool.id);
        perQuery.push(scoreQuery(ranked, { relevant: query.relevant, relevantGroups: query.relevant_groups }));
        if (modeIndex === 0) report.rankings.push({ id: query.id, ranked });
      }
      report.modes[mode] = meanMetrics(perQuery);
      options.onProgress?.(`${mode} done`);
    }
    return report;
  } finally {
    await catalogService.deleteCatalog(deps.catalog, ref);
  }
}

import { cutQuery } from '../lib/query-length.js';
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { DEFAULT_TOP_K, selectTools, storeDeadlineMs, type SelectorDeps } from '../search/selector.js';
import { selectFromCatalog } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import { readToolListBodyInSlices, requireUtf8 } from './tool-list-body.js';
import { parseInput } from './errors.js';
import { requestAccess } from './middleware.js';
import { traceFacts } from './trace-requests.js';
import type { Logger } from '../logger.js';
import { recordSearch, type Metrics } from '../metrics.js';
import type { Selection } from '../search/selector.js';
import type { TokenCounter } from '../catalog/tokens.js';

/** The answer's confidence: its best ranked tool's (0 when the ranking found none; padding is not evidence). */
function answerConfidence(selection: Selection): number {
  let best = 0;
  for (const value of selection.confidence.values()) best = Math.max(best, value);
  return best;
}

function recordSelection(metrics: Metrics | undefined, selection: Selection): void {
  if (!metrics) return;
  metrics.selectorNames.observe(selection.names.length);
  metrics.selectorConfidence.observe(answerConfidence(selection));
  if (selection.fallback) metrics.selectorFallbacks.inc({ reason: selection.fallback });
  if (selection.fallback === 'blank_pattern') metrics.selectorBlankPatterns.inc();
  // The contract's answer has no place for the query's language: the metric tells it.
  if (selection.language)
    metrics.searchLanguages.inc({ endpoint: 'selector', language: selection.language.tag, understood: String(selection.language.understood) });
  for (const stage of ['parse', 'query_embedding', 'ranking'] as const) {
    metrics.stageDuration.observe({ endpoint: 'selector', stage }, selection.timings[`${stage}_ms`] / 1000);
  }
}

/** Per tool list: the definitions' tokens by name and their sum. */
interface ListTokens {
  offered: number;
  byName: Map<string, number>;
}

/**
 * A remembered list's tools are the same array on every turn, so their counts are looked up and
 * summed once, not per turn (258 cache lookups a turn were ~3% of the main thread under
 * `npm run bench -- --mix`).
 */
const listTokens = new WeakMap<Selection['tools'], ListTokens>();

/** Definition tokens (as the gateway sent them) of the request's tools and of the names answered. */
async function selectionTokens(counter: TokenCounter, selection: Selection): Promise<{ offered: number; selected: number }> {
  let list = listTokens.get(selection.tools);
  if (!list) {
    const counts = await counter.counts(selection.tools);
    list = { offered: 0, byName: new Map() };
    selection.tools.forEach(({ tool }, index) => {
      list!.offered += counts[index]!.as_sent;
      list!.byName.set(tool.name, counts[index]!.as_sent);
    });
    listTokens.set(selection.tools, list);
  }
  let selected = 0;
  for (const name of new Set(selection.names)) selected += list.byName.get(name) ?? 0;
  return { offered: list.offered, selected };
}

/** Timings for a log line, to 0.01 ms. */
export const roundedTimings = (timings: Record<string, number>) =>
  Object.fromEntries(Object.entries(timings).map(([key, value]) => [key, Math.round(value * 100) / 100]));

function recordTokens(metrics: Metrics | undefined, tenant: string, tokens: { offered: number; selected: number }): void {
  metrics?.toolTokens.inc({ endpoint: 'selector', tenant, kind: 'offered' }, tokens.offered);
  metrics?.toolTokens.inc({ endpoint: 'selector', tenant, kind: 'selected' }, tokens.selected);
}

/** Most tools a gateway sends in one request; 1,000 full schemas fit well under BODY_LIMIT. */
export const MAX_SELECTOR_TOOLS = 10_000;
export const MAX_TOP_K = 1000;

const topK = z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').max(MAX_TOP_K);

/**
 * Both gateway generations in one schema: 0.4.0-0.5.2 send {pattern, top_k, always_keep?,
 * tools: [{name, description?, definition?}]}; 0.5.3+ send {query, max_tools, always_keep?,
 * tools: [{name, description?, parameters?}], compression_model_name?, source?}. Unknown fields
 * are ignored so a newer gateway does not break an older toolsift.
 */
export const selectorRequest = z
  .object({
    // Cut, not refused: the selector never fails closed (lib/query-length.ts).
    pattern: z.string().transform(cutQuery).optional(),
    query: z.string().transform(cutQuery).optional(),
    top_k: topK.optional(),
    max_tools: topK.optional(),
    always_keep: z.array(z.string()).max(MAX_SELECTOR_TOOLS).nullish(),
    tools: z.array(z.unknown(), { error: 'tools must be an array' }).max(MAX_SELECTOR_TOOLS).optional(),
    /** A stored catalog of the caller's tenant instead of `tools`, for gateways that do not resend every tool each turn. */
    catalog: z
      .string({ error: 'catalog must be a string' })
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'catalog names are 1-64 characters of A-Z a-z 0-9 . _ -')
      .optional(),
    compression_model_name: z.string().optional(),
    source: z.string().optional(),
  })
  .refine((body) => body.pattern !== undefined || body.query !== undefined, {
    message: 'pattern (gateway <= 0.5.2) or query (gateway >= 0.5.3) is required',
    path: ['pattern'],
  })
  .refine((body) => (body.tools === undefined) !== (body.catalog === undefined), {
    message: 'send exactly one of tools (the candidates inline) and catalog (a stored catalog)',
    path: ['tools'],
  });
export type SelectorRequest = z.infer<typeof selectorRequest>;

/** One body both gateway generations read: `selected_names`, and `success` + `data.relevant_tools`. */
export interface SelectorResponse {
  selected_names: string[];
  success: true;
  data: { relevant_tools: string[] };
}

/** Gateways <= 0.5.2 post to the first; >= 0.5.3 to <base>/api/compress/tool-discovery/. */
export const SELECTOR_PATHS = ['/v1/tool-discovery/search', '/api/compress/tool-discovery'];

export function selectorRoutes(deps: SelectorDeps, search: RankDeps = deps): Router {
  const router = Router();
  const handler: RequestHandler = async (req, res) => {
    requireUtf8(req.get('content-type'));
    const { json, toolsKey, cached } = Buffer.isBuffer(req.body)
      ? await readToolListBodyInSlices(req.body, deps.toolListCache, deps.toolListBytes)
      : { json: req.body ?? {} };
    const body = parseInput(selectorRequest, json, 'body');
    const pattern = body.pattern ?? body.query ?? '';
    const topK = body.top_k ?? body.max_tools ?? DEFAULT_TOP_K;
    if (body.catalog !== undefined) {
      // A stored catalog: ranked like its search endpoint, never answered empty while it has tools.
      const started = performance.now();
      // Never fails closed on a catalog this process has searched: past the store deadline, or with
      // the database down, the catalog as last seen here answers (BM25 in process).
      const selected = await selectFromCatalog(
        search,
        { tenant: res.locals.tenant as string, name: body.catalog },
        {
          pattern,
          topK,
          alwaysKeep: body.always_keep ?? [],
          storeDeadlineMs: storeDeadlineMs(deps),
          embedBudgetMs: deps.budgetMs,
          access: requestAccess(res, `POST ${req.path}`),
        },
      );
      deps.metrics?.selectorNames.observe(selected.names.length);
      deps.metrics?.selectorConfidence.observe(selected.confidence);
      if (selected.fallback) deps.metrics?.selectorFallbacks.inc({ reason: selected.fallback });
      if (selected.tokens) recordTokens(deps.metrics, res.locals.tenant as string, selected.tokens);
      recordSearch(deps.metrics, 'selector_catalog', selected.timings, undefined, selected.language);
      traceFacts(res, { results: selected.names.length, catalog: body.catalog });
      res.json({ selected_names: selected.names, success: true, data: { relevant_tools: selected.names } } satisfies SelectorResponse);
      (res.locals.log as Logger)[selected.fallback ? 'warn' : 'info'](
        {
          tenant: res.locals.tenant,
          route: 'selector',
          catalog: body.catalog,
          namesOut: selected.names.length,
          ranked: selected.ranked,
          confidence: Math.round(selected.confidence * 1000) / 1000,
          tokens: selected.tokens,
          ...(selected.fallback ? { fallback: selected.fallback } : {}),
          ...(selected.language ? { language: selected.language } : {}),
          timings: { ...roundedTimings(selected.timings), total_ms: Math.round((performance.now() - started) * 100) / 100 },
        },
        'tool selection',
      );
      return;
    }
    const selection = await selectTools(deps, {
      pattern,
      topK,
      alwaysKeep: body.always_keep ?? [],
      tools: body.tools!,
      toolsKey,
      cached,
    });
    recordSelection(deps.metrics, selection);
    traceFacts(res, { results: selection.names.length });
    const response: SelectorResponse = {
      selected_names: selection.names,
      success: true,
      data: { relevant_tools: selection.names },
    };
    res.json(response);
    // One line per request, once its new tools are stored (after the answer): the store step is part
    // of the split. Registered on the write before anything else waits for it (shutdown's
    // `background.settled()` comes later), so the line is written before the service stops.
    const log = res.locals.log as Logger;
    // After the answer nothing may reject unhandled (Node ends the process on it): a failure of the
    // token count or the log line is a warning.
    void selection.stored
      .then(async () => {
        deps.metrics?.stageDuration.observe({ endpoint: 'selector', stage: 'store' }, selection.timings.store_ms / 1000);
        // Counted after the answer; a new tool's counts were made when it was stored.
        const tokens = await selectionTokens(deps.tokens, selection);
        recordTokens(deps.metrics, res.locals.tenant as string, tokens);
        log.info(
          {
            tenant: res.locals.tenant,
            route: 'selector',
            toolsIn: selection.toolsIn,
            namesOut: selection.names.length,
            newDocuments: selection.newDocuments,
            fallback: selection.fallback ?? null,
            confidence: Math.round(answerConfidence(selection) * 1000) / 1000,
            evidence: selection.evidence,
            ...(selection.language ? { language: selection.language } : {}),
            tokens,
            timings: roundedTimings(selection.timings),
          },
          'tool selection',
        );
      })
      .catch((error: unknown) =>
        log.warn({ err: error, tenant: res.locals.tenant, route: 'selector' }, 'tool selection: token count or log line after the answer failed'),
      );
  };
  // Gateways >= 0.5.3 post to <base>/api/compress/tool-discovery/: pointing their base URL here works too.
  for (const path of SELECTOR_PATHS) router.post(path, handler);
  return router;
}

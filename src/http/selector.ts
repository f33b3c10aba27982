import { createHash } from 'node:crypto';
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { DEFAULT_TOP_K, selectTools, type SelectorDeps } from '../search/selector.js';
import { parseInput } from './errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Selection } from '../search/selector.js';

function recordSelection(metrics: Metrics | undefined, selection: Selection): void {
  if (!metrics) return;
  metrics.selectorNames.observe(selection.names.length);
  if (selection.fallback) metrics.selectorFallbacks.inc({ reason: selection.fallback });
  if (selection.fallback === 'blank_pattern') metrics.selectorBlankPatterns.inc();
  for (const stage of ['parse', 'store', 'query_embedding', 'ranking'] as const) {
    metrics.stageDuration.observe({ endpoint: 'selector', stage }, selection.timings[`${stage}_ms`] / 1000);
  }
}

/** Most tools a gateway sends in one request; 1,000 full schemas fit well under BODY_LIMIT. */
export const MAX_SELECTOR_TOOLS = 10_000;
export const MAX_TOP_K = 1000;

const topK = z.number({ invalid_type_error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').max(MAX_TOP_K);

/**
 * Both gateway generations in one schema: 0.4.0-0.5.2 send {pattern, top_k, always_keep?,
 * tools: [{name, description?, definition?}]}; 0.5.3+ send {query, max_tools, always_keep?,
 * tools: [{name, description?, parameters?}], compression_model_name?, source?}. Unknown fields
 * are ignored so a newer gateway does not break an older toolsift.
 */
export const selectorRequest = z
  .object({
    pattern: z.string().max(10_000).optional(),
    query: z.string().max(10_000).optional(),
    top_k: topK.optional(),
    max_tools: topK.optional(),
    always_keep: z.array(z.string()).max(MAX_SELECTOR_TOOLS).nullish(),
    tools: z.array(z.unknown(), { required_error: 'tools is required', invalid_type_error: 'tools must be an array' }).max(MAX_SELECTOR_TOOLS),
    compression_model_name: z.string().optional(),
    source: z.string().optional(),
  })
  .refine((body) => body.pattern !== undefined || body.query !== undefined, {
    message: 'pattern (gateway <= 0.5.2) or query (gateway >= 0.5.3) is required',
    path: ['pattern'],
  });
export type SelectorRequest = z.infer<typeof selectorRequest>;

/** One body both gateway generations read: `selected_names`, and `success` + `data.relevant_tools`. */
export interface SelectorResponse {
  selected_names: string[];
  success: true;
  data: { relevant_tools: string[] };
}

export type RawBodyRequest = Request & { rawBody?: Buffer };

const TOOLS_FIELD = Buffer.from('"tools":');

/**
 * Identifies the tool list by the request's own bytes, without serializing 250 tools again: a
 * digest of everything from the first `"tools":` to the end. The real top-level array lies inside
 * that span (a quote inside a JSON string is always escaped, so an earlier match can only be a
 * nested key), so equal digests mean equal tools. Gateways put the pattern or query before the
 * tools, so turns that resend the same tools share the digest.
 */
export function toolsKey(raw: Buffer | undefined): string | undefined {
  if (!raw) return undefined;
  const at = raw.indexOf(TOOLS_FIELD);
  return at === -1 ? undefined : createHash('sha256').update(raw.subarray(at)).digest('base64');
}

export function selectorRoutes(deps: SelectorDeps): Router {
  const router = Router();
  const handler: RequestHandler = async (req, res) => {
    const body = parseInput(selectorRequest, req.body, 'body');
    const selection = await selectTools(deps, {
      pattern: body.pattern ?? body.query ?? '',
      topK: body.top_k ?? body.max_tools ?? DEFAULT_TOP_K,
      alwaysKeep: body.always_keep ?? [],
      tools: body.tools,
      toolsKey: toolsKey((req as RawBodyRequest).rawBody),
    });
    recordSelection(deps.metrics, selection);
    (res.locals.log as Logger).info(
      {
        tenant: res.locals.tenant,
        route: 'selector',
        toolsIn: selection.toolsIn,
        namesOut: selection.names.length,
        newDocuments: selection.newDocuments,
        fallback: selection.fallback ?? null,
        evidence: selection.evidence,
        timings: Object.fromEntries(Object.entries(selection.timings).map(([key, value]) => [key, Math.round(value * 100) / 100])),
      },
      'tool selection',
    );
    const response: SelectorResponse = {
      selected_names: selection.names,
      success: true,
      data: { relevant_tools: selection.names },
    };
    res.json(response);
  };
  router.post('/v1/tool-discovery/search', handler);
  // Gateways >= 0.5.3 post to <base>/api/compress/tool-discovery/: pointing their base URL here works too.
  router.post('/api/compress/tool-discovery', handler);
  return router;
}

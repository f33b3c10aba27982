import { Router } from 'express';
import { z } from 'zod';
import { wireDefinition, type WireShape } from '../catalog/tokens.js';
import { recordSearch, type Metrics } from '../metrics.js';
import { searchForTools, type FoundTool, type ToolSearchDeps, type ToolSearchResult } from '../search/tool-search.js';
import { parseInput } from './errors.js';
import { MAX_SELECTOR_TOOLS, roundedTimings } from './selector.js';
import { readToolListBodyInSlices, requireUtf8 } from './tool-list-body.js';

export const toolSearchRequest = z
  .object({
    query: z.string().trim().min(1, 'query must not be empty').max(10_000),
    tools: z.array(z.unknown()).min(1).max(MAX_SELECTOR_TOOLS).optional(),
    catalog: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'catalog names are 1-64 characters of A-Z a-z 0-9 . _ -')
      .optional(),
    max_results: z.number().int().min(1).max(100).default(5),
    tags: z.array(z.string().min(1).max(64)).max(64).optional(),
    budget_tokens: z.number().int().min(1).max(10_000_000).optional(),
    min_confidence: z.number().min(0).max(1).optional(),
    format: z.enum(['names', 'anthropic', 'openai', 'openrouter']).default('names'),
    /** openai: the tool_search_call's call_id, echoed in the output item. */
    call_id: z.string().min(1).max(256).optional(),
    /** openrouter: the key the names go under. */
    result_key: z.string().min(1).max(64).default('tool_names'),
  })
  .strict();
export type ToolSearchRequest = z.infer<typeof toolSearchRequest>;

/**
 * A body whose `tools` are a list already remembered by their bytes (http/tool-list-body.ts): `[]`
 * stands in for them, and the rest is checked as ever. Such a list passed the same checks when
 * first sent (a gateway's or tool-search's, both at most MAX_SELECTOR_TOOLS, never empty).
 */
const rememberedListRequest = toolSearchRequest.extend({ tools: z.tuple([]) });

const SHAPE: Record<ToolSearchRequest['format'], WireShape> = { names: 'as_sent', anthropic: 'anthropic', openai: 'openai', openrouter: 'as_sent' };

/**
 * Each provider's answer to its model's tool-search call, from the one ranked list.
 * - anthropic: the `content` of the `tool_result` that answers the search tool's `tool_use`, a list
 *   of `tool_reference` blocks (`ToolReferenceBlockParam` in @anthropic-ai/sdk
 *   resources/messages; Anthropic's "tool search tool" docs, custom client-side search). Only
 *   names from the request or catalog: Anthropic rejects a reference to a tool not in `tools`.
 * - openai: a Responses `tool_search_output` input item with client execution
 *   (`ResponseToolSearchOutputItemParam` in openai resources/responses), carrying the selected
 *   tools' full definitions as `FunctionTool`s with `defer_loading: true`.
 * - openrouter: `{<result_key>: [names]}`, what a caller-owned deferred search tool returns.
 */
export function formatAnswer(body: ToolSearchRequest, result: ToolSearchResult): unknown {
  const names = result.results.map((found) => found.name);
  switch (body.format) {
    case 'anthropic':
      return anthropicAnswer(names);
    case 'openai':
      return openaiAnswer(result.results, body.call_id);
    case 'openrouter':
      return { [body.result_key]: names };
    default:
      return {
        results: result.results.map((found) => ({
          name: found.name,
          score: found.score,
          confidence: found.confidence,
          estimated_tokens: found.estimatedTokens,
        })),
        confidence: result.confidence,
        unmatched_terms: result.unmatchedTerms,
        tokens: result.tokens,
        ...(result.degraded ? { degraded: result.degraded } : {}),
      };
  }
}

export interface AnthropicToolSearchAnswer {
  content: Array<{ type: 'tool_reference'; tool_name: string }>;
}

export function anthropicAnswer(names: string[]): AnthropicToolSearchAnswer {
  return { content: names.map((name) => ({ type: 'tool_reference', tool_name: name })) };
}

export interface OpenAiToolSearchOutput {
  type: 'tool_search_output';
  execution: 'client';
  status: 'completed';
  call_id?: string;
  tools: Array<{ type: 'function'; name: string; description: string; parameters: Record<string, unknown>; strict: boolean; defer_loading: boolean }>;
}

export function openaiAnswer(results: FoundTool[], callId?: string): OpenAiToolSearchOutput {
  return {
    type: 'tool_search_output',
    execution: 'client',
    status: 'completed',
    ...(callId ? { call_id: callId } : {}),
    // Every result carries its definition here: an answer from memory keeps only tools whose definitions it has.
    tools: results
      .flatMap((found) => (found.tool ? [found.tool] : []))
      .map((tool) => {
        const wire = wireDefinition(tool, 'openai') as { name: string; description: string; parameters: Record<string, unknown> };
        return { type: 'function', name: wire.name, description: wire.description, parameters: wire.parameters, strict: false, defer_loading: true };
      }),
  };
}

export const TOOL_SEARCH_PATH = '/v1/tool-search';

/** `POST /v1/tool-search`: rank candidates (inline or a stored catalog) and answer in a provider's format. */
export function toolSearchRoutes(deps: ToolSearchDeps, metrics?: Metrics): Router {
  const router = Router();
  router.post(TOOL_SEARCH_PATH, async (req, res) => {
    requireUtf8(req.get('content-type'));
    // Hooks resend the same deferred tools every call: a list seen before is not parsed or indexed again.
    const { json, toolsKey, cached } = Buffer.isBuffer(req.body)
      ? await readToolListBodyInSlices(req.body, deps.selector.toolListCache)
      : { json: req.body ?? {} };
    const body = cached ? parseInput(rememberedListRequest, json, 'body') : parseInput(toolSearchRequest, json, 'body');
    const tenant = String(res.locals.tenant);
    const result = await searchForTools(deps, {
      query: body.query,
      tenant,
      tools: body.tools,
      ...(toolsKey === undefined ? {} : { toolsKey }),
      ...(cached ? { cached } : {}),
      catalog: body.catalog,
      maxResults: body.max_results,
      tags: body.tags,
      budgetTokens: body.budget_tokens,
      minConfidence: body.min_confidence,
      shape: SHAPE[body.format],
      definitions: body.format === 'openai',
    });
    recordSearch(metrics, 'tool_search', result.timings, result.degraded);
    metrics?.toolTokens.inc({ endpoint: 'tool_search', tenant, kind: 'offered' }, result.tokens.offered);
    metrics?.toolTokens.inc({ endpoint: 'tool_search', tenant, kind: 'selected' }, result.tokens.selected);
    res.locals.log?.info?.(
      {
        query_terms: body.query.length,
        candidates: cached?.toolsIn ?? body.tools?.length ?? null,
        catalog: body.catalog ?? null,
        results: result.results.length,
        confidence: result.confidence,
        format: body.format,
        tokens: result.tokens,
        ...(result.degraded ? { degraded: result.degraded } : {}),
        timings: roundedTimings(result.timings),
      },
      'tool search',
    );
    res.json(formatAnswer(body, result));
  });
  return router;
}

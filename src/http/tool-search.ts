import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { Router } from 'express';
import { z } from 'zod';
import { wireDefinition, type WireShape } from '../catalog/tokens.js';
import { AppError } from '../errors.js';
import { recordSearch, type Metrics } from '../metrics.js';
import { searchForTools, type FoundTool, type ToolSearchDeps, type ToolSearchResult } from '../search/tool-search.js';
import { parseInput } from './errors.js';
import { requestAccess } from './middleware.js';
import { MAX_SELECTOR_TOOLS, roundedTimings } from './selector.js';
import { readToolListBodyInSlices, requireUtf8 } from './tool-list-body.js';
import { traceFacts } from './trace-requests.js';

const FORMATS = ['names', 'anthropic', 'openai', 'openai_additional_tools', 'gemini', 'openrouter'] as const;
/** Formats whose answer carries the tools' definitions (the rest carry names). */
const WITH_DEFINITIONS = new Set<ToolSearchFormat>(['openai', 'openai_additional_tools', 'gemini']);
export type ToolSearchFormat = (typeof FORMATS)[number];

export const toolSearchRequest = z
  .object({
    query: z.string().trim().min(1, 'query must not be empty').max(QUERY_CHARS_MAX),
    tools: z.array(z.unknown()).min(1).max(MAX_SELECTOR_TOOLS).optional(),
    catalog: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'catalog names are 1-64 characters of A-Z a-z 0-9 . _ -')
      .optional(),
    max_results: z.number().int().min(1).max(100).default(5),
    tags: z.array(z.string().min(1).max(64)).max(64).optional(),
    budget_tokens: z.number().int().min(1).max(10_000_000).optional(),
    min_confidence: z.number().min(0).max(1).optional(),
    format: z.enum(FORMATS).default('names'),
    /** openai, gemini: the search call's id, echoed in the answer (gemini requires it). */
    call_id: z.string().min(1).max(256).optional(),
    /** openrouter: the key the names go under. */
    result_key: z.string().min(1).max(64).default('tool_names'),
    /** openai, openai_additional_tools: each tool's server becomes an OpenAI namespace of that name. */
    namespaces: z.boolean().default(false),
    /** With `namespaces`: the description of each server's namespace, as the request to OpenAI declares it. */
    namespace_descriptions: z
      .record(z.string().min(1).max(128), z.string().min(1).max(1024))
      .refine((descriptions) => Object.keys(descriptions).length <= 256, 'at most 256 namespace descriptions')
      .optional(),
  })
  .strict();
export type ToolSearchRequest = z.infer<typeof toolSearchRequest>;

/**
 * A body whose `tools` are a list already remembered by their bytes (http/tool-list-body.ts): `[]`
 * stands in for them, and the rest is checked as ever. Such a list passed the same checks when
 * first sent (a gateway's or tool-search's, both at most MAX_SELECTOR_TOOLS, never empty).
 */
const rememberedListRequest = toolSearchRequest.extend({ tools: z.tuple([]) });

/** How each format's definitions are counted: as its provider receives them (Gemini's functions are in OpenAI's shape). */
const SHAPE: Record<ToolSearchFormat, WireShape> = {
  names: 'as_sent',
  anthropic: 'anthropic',
  openai: 'openai',
  openai_additional_tools: 'openai',
  gemini: 'openai',
  openrouter: 'as_sent',
};

/**
 * Each provider's answer to its model's tool-search call, from the one ranked list (docs/tool-search.md
 * has each with its source).
 * - anthropic: the `content` of the `tool_result` that answers the search tool's `tool_use`, a list
 *   of `tool_reference` blocks (`ToolReferenceBlockParam` in @anthropic-ai/sdk
 *   resources/messages; Anthropic's "tool search tool" docs, custom client-side search). Only
 *   names from the request or catalog: Anthropic rejects a reference to a tool not in `tools`.
 * - openai: a Responses `tool_search_output` input item with client execution
 *   (`ResponseToolSearchOutputItemParam` in openai resources/responses), carrying the selected
 *   tools' full definitions as `FunctionTool`s with `defer_loading: true`; with `namespaces`, each
 *   server's tools inside one `namespace` (`ToolSearchOutputNamespaceTool`).
 * - openai_additional_tools: an `additional_tools` input item (`ResponseInputItem.AdditionalTools`):
 *   the tools made callable from that point of the conversation, namespaced alike.
 * - gemini: an Interactions `tool_search_result` step answering a client-executed
 *   `tool_search_call` (`Interactions.ToolSearchResultStep` in @google/genai): the functions.
 * - openrouter: `{<result_key>: [names]}`, what the caller's search tool returns under
 *   `openrouter:tool_search`'s custom strategy (`deferred_tools.search.type: "custom"`).
 */
export function formatAnswer(body: ToolSearchRequest, result: ToolSearchResult): unknown {
  const names = result.results.map((found) => found.name);
  const namespaces = body.namespaces ? (body.namespace_descriptions ?? {}) : undefined;
  switch (body.format) {
    case 'anthropic':
      return anthropicAnswer(names);
    case 'openai':
      return openaiAnswer(result.results, body.call_id, namespaces);
    case 'openai_additional_tools':
      return additionalToolsAnswer(result.results, namespaces);
    case 'gemini':
      // Checked with the request (formatProblem).
      return geminiAnswer(result.results, body.call_id!);
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
        ...(result.language ? { query_language: result.language } : {}),
      };
  }
}

/** Fields that belong to some formats only: what the schema cannot say of one field alone. */
function formatProblem(body: ToolSearchRequest): string | undefined {
  if (body.format === 'gemini' && body.call_id === undefined) return 'format "gemini" needs call_id: the id of the tool_search_call it answers';
  if ((body.namespaces || body.namespace_descriptions) && body.format !== 'openai' && body.format !== 'openai_additional_tools') {
    return 'namespaces and namespace_descriptions belong to the openai and openai_additional_tools formats';
  }
  if (body.namespace_descriptions && !body.namespaces) return 'namespace_descriptions needs namespaces: true';
  return undefined;
}

export interface AnthropicToolSearchAnswer {
  content: Array<{ type: 'tool_reference'; tool_name: string }>;
}

export function anthropicAnswer(names: string[]): AnthropicToolSearchAnswer {
  return { content: names.map((name) => ({ type: 'tool_reference', tool_name: name })) };
}

export interface OpenAiFunction {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: boolean;
  defer_loading?: boolean;
}

export interface OpenAiNamespace {
  type: 'namespace';
  name: string;
  description: string;
  tools: OpenAiFunction[];
}

export interface OpenAiToolSearchOutput {
  type: 'tool_search_output';
  execution: 'client';
  status: 'completed';
  call_id?: string;
  tools: Array<OpenAiFunction | OpenAiNamespace>;
}

/** A namespace's description when the request gives none for its server. */
export const namespaceDescription = (server: string) => `Tools of the ${server} server.`;

/** A tool's name, description and parameters as OpenAI's Responses API (and Gemini's) take a function. */
function functionOf(tool: NonNullable<FoundTool['tool']>): Pick<OpenAiFunction, 'name' | 'description' | 'parameters'> {
  const { name, description, parameters } = wireDefinition(tool, 'openai') as Pick<OpenAiFunction, 'name' | 'description' | 'parameters'>;
  return { name, description, parameters };
}

/**
 * The found tools as Responses tools, in ranked order. With `namespaces` (server -> description),
 * a server's tools go into one namespace named after it, placed where its best tool ranks; a tool
 * of no server stays a function of its own. Every result carries its definition here: an answer
 * from memory keeps only tools whose definitions it has.
 */
function openaiTools(results: FoundTool[], deferred: boolean, namespaces?: Record<string, string>): Array<OpenAiFunction | OpenAiNamespace> {
  const tools: Array<OpenAiFunction | OpenAiNamespace> = [];
  const byServer = new Map<string, OpenAiNamespace>();
  for (const { tool } of results) {
    if (!tool) continue;
    const fn: OpenAiFunction = { type: 'function', ...functionOf(tool), strict: false, ...(deferred ? { defer_loading: true } : {}) };
    if (!namespaces || tool.server === null) {
      tools.push(fn);
      continue;
    }
    let namespace = byServer.get(tool.server);
    if (!namespace) {
      namespace = { type: 'namespace', name: tool.server, description: namespaces[tool.server] ?? namespaceDescription(tool.server), tools: [] };
      byServer.set(tool.server, namespace);
      tools.push(namespace);
    }
    namespace.tools.push(fn);
  }
  return tools;
}

export function openaiAnswer(results: FoundTool[], callId?: string, namespaces?: Record<string, string>): OpenAiToolSearchOutput {
  return {
    type: 'tool_search_output',
    execution: 'client',
    status: 'completed',
    ...(callId ? { call_id: callId } : {}),
    tools: openaiTools(results, true, namespaces),
  };
}

export interface OpenAiAdditionalTools {
  type: 'additional_tools';
  role: 'developer';
  tools: Array<OpenAiFunction | OpenAiNamespace>;
}

/** Tools loaded from this point of the conversation, not deferred: the model may call them at once. */
export function additionalToolsAnswer(results: FoundTool[], namespaces?: Record<string, string>): OpenAiAdditionalTools {
  return { type: 'additional_tools', role: 'developer', tools: openaiTools(results, false, namespaces) };
}

export interface GeminiToolSearchResult {
  type: 'tool_search_result';
  call_id: string;
  result: Array<{ type: 'function'; name: string; description: string; parameters: Record<string, unknown> }>;
}

export function geminiAnswer(results: FoundTool[], callId: string): GeminiToolSearchResult {
  return {
    type: 'tool_search_result',
    call_id: callId,
    // Every result carries its definition here: an answer from memory keeps only tools whose definitions it has.
    result: results.flatMap(({ tool }) => (tool ? [{ type: 'function' as const, ...functionOf(tool) }] : [])),
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
      ? await readToolListBodyInSlices(req.body, deps.selector.toolListCache, deps.selector.toolListBytes)
      : { json: req.body ?? {} };
    const body = cached ? parseInput(rememberedListRequest, json, 'body') : parseInput(toolSearchRequest, json, 'body');
    const problem = formatProblem(body);
    if (problem) throw new AppError('validation_failed', `invalid body: ${problem}`);
    const tenant = String(res.locals.tenant);
    const result = await searchForTools(deps, {
      query: body.query,
      tenant,
      tools: body.tools,
      ...(toolsKey === undefined ? {} : { toolsKey }),
      ...(cached ? { cached } : {}),
      catalog: body.catalog,
      access: requestAccess(res, `POST ${TOOL_SEARCH_PATH}`),
      maxResults: body.max_results,
      tags: body.tags,
      budgetTokens: body.budget_tokens,
      minConfidence: body.min_confidence,
      shape: SHAPE[body.format],
      definitions: WITH_DEFINITIONS.has(body.format),
    });
    recordSearch(metrics, 'tool_search', result.timings, result.degraded, result.language);
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
    traceFacts(res, { results: result.results.length, ...(body.catalog ? { catalog: body.catalog } : {}) });
    res.json(formatAnswer(body, result));
  });
  return router;
}

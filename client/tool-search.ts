/**
 * Framework helpers over `POST /v1/tool-search`: each hands a framework's tool-search hook
 * toolsift's ranking, in the shape that hook wants. They import no framework package: the shapes
 * are plain objects, checked against the frameworks' own types in toolsift's tests.
 */
import { createToolsiftClient, type ToolsiftClientOptions } from './index.js';

export interface SearchOptions {
  /** Rank a stored catalog of your tenant instead of the candidates the framework passes. */
  catalog?: string;
  maxResults?: number;
  budgetTokens?: number;
  tags?: string[];
}

async function toolSearch(client: ReturnType<typeof createToolsiftClient>, body: Record<string, unknown>): Promise<unknown> {
  const { data, error, response } = await client.POST('/v1/tool-search', { body: body as never });
  if (error || !data) throw new Error(`toolsift tool-search answered ${response.status}: ${JSON.stringify(error)}`);
  return data;
}

function requestBody(query: string, candidates: unknown[] | undefined, options: SearchOptions, format: string, extra: Record<string, unknown> = {}) {
  return {
    query,
    ...(options.catalog ? { catalog: options.catalog } : { tools: candidates }),
    ...(options.maxResults ? { max_results: options.maxResults } : {}),
    ...(options.budgetTokens ? { budget_tokens: options.budgetTokens } : {}),
    ...(options.tags ? { tags: options.tags } : {}),
    format,
    ...extra,
  };
}

/**
 * Vercel AI SDK: the `search` callback of `toolSearch({ search })` (ai >= 7): the query and the
 * deferred tools' names and descriptions in, ranked names out.
 */
export function aiSdkSearch(client: ToolsiftClientOptions, options: SearchOptions = {}) {
  const api = createToolsiftClient(client);
  return async ({ query, tools }: { query: string; tools: Array<{ name: string; description?: string }> }): Promise<string[]> => {
    const answer = (await toolSearch(api, requestBody(query, tools.map(({ name, description }) => ({ name, description: description ?? '' })), options, 'names'))) as {
      results: Array<{ name: string }>;
    };
    return answer.results.map((result) => result.name);
  };
}

/**
 * Anthropic Messages, client-side tool search: turns the model's `tool_use` of your search tool
 * into the `tool_result` whose content is `tool_reference` blocks for the tools to load. `tools`
 * are the deferred tools of the request (only their names can be referenced).
 */
export async function anthropicToolResult(
  client: ToolsiftClientOptions,
  toolUse: { id: string; input: unknown },
  tools: unknown[],
  options: SearchOptions = {},
): Promise<{ type: 'tool_result'; tool_use_id: string; content: Array<{ type: 'tool_reference'; tool_name: string }> }> {
  const query = typeof (toolUse.input as { query?: unknown })?.query === 'string' ? (toolUse.input as { query: string }).query : JSON.stringify(toolUse.input);
  const answer = (await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'anthropic'))) as { content: Array<{ type: 'tool_reference'; tool_name: string }> };
  return { type: 'tool_result', tool_use_id: toolUse.id, content: answer.content };
}

/**
 * OpenAI Responses / Agents SDK, client-executed tool search: the `tool_search_output` item (with
 * the selected tools' full definitions, `defer_loading: true`) answering a `tool_search_call`.
 */
export async function openaiToolSearchOutput(client: ToolsiftClientOptions, query: string, tools: unknown[], options: SearchOptions & { callId?: string } = {}) {
  return (await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'openai', options.callId ? { call_id: options.callId } : {}))) as {
    type: 'tool_search_output';
    execution: 'client';
    status: 'completed';
    call_id?: string;
    tools: Array<{ type: 'function'; name: string; description: string; parameters: Record<string, unknown>; strict: boolean; defer_loading: boolean }>;
  };
}

/** Plain ranked names, for LangChain middleware, LangGraph bigtool's retrieve function or your own loop. */
export async function rankToolNames(client: ToolsiftClientOptions, query: string, tools: unknown[] | undefined, options: SearchOptions = {}): Promise<string[]> {
  const answer = (await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'names'))) as { results: Array<{ name: string }> };
  return answer.results.map((result) => result.name);
}

/** A JSON Schema for the search tool's arguments: the model writes what it needs in `query`. */
export const toolSearchParameters = {
  type: 'object',
  properties: { query: { type: 'string', description: 'What the tool should do, in a few words.' } },
  required: ['query'],
  additionalProperties: false,
} as const;

/** The parts of an Agents SDK tool the helper reads (a structural type: no framework import). */
interface AgentsTool {
  type: string;
  name?: string;
  description?: string;
  parameters?: unknown;
  deferLoading?: boolean;
}

/**
 * OpenAI Agents SDK (@openai/agents >= 0.20): the `execute` callback of
 * `toolSearchTool({ execution: 'client', parameters: toolSearchParameters, execute })`. It ranks the
 * agent's deferred function tools (`deferLoading: true`) for the model's query with toolsift and
 * returns the tool objects to load; the runner answers the model with their definitions.
 */
export function agentsToolSearch(client: ToolsiftClientOptions, options: SearchOptions = {}) {
  const api = createToolsiftClient(client);
  return async <T extends AgentsTool>({ availableTools, toolCall }: { availableTools: readonly T[]; toolCall: { arguments?: unknown } }): Promise<T[]> => {
    let args = toolCall.arguments;
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        // A bare string is the query itself.
      }
    }
    const query = typeof args === 'string' ? args : typeof (args as { query?: unknown })?.query === 'string' ? (args as { query: string }).query : JSON.stringify(args ?? '');
    const deferred = availableTools.filter((tool) => tool.type === 'function' && tool.deferLoading === true && typeof tool.name === 'string');
    if (deferred.length === 0) return [];
    const candidates = deferred.map((tool) => ({ type: 'function', name: tool.name!, description: tool.description ?? '', parameters: tool.parameters ?? { type: 'object', properties: {} } }));
    const answer = (await toolSearch(api, requestBody(query, candidates, options, 'names'))) as { results: Array<{ name: string }> };
    const byName = new Map(deferred.map((tool) => [tool.name!, tool]));
    return answer.results.flatMap((result) => byName.get(result.name) ?? []);
  };
}

/**
 * LangChain.js middleware (`createMiddleware({ wrapModelCall })`) or your own loop: the tools of
 * `tools` (anything with a `name` and a `description`, e.g. `request.tools`) that toolsift ranks
 * for `query`, best first, as the same objects; at most `maxResults` (default 5).
 */
export async function narrowTools<T extends { name?: string; description?: string }>(client: ToolsiftClientOptions, query: string, tools: readonly T[], options: SearchOptions = {}): Promise<T[]> {
  const named = tools.filter((tool) => typeof tool.name === 'string' && tool.name.length > 0);
  if (named.length === 0) return [];
  const names = await rankToolNames(client, query, named.map((tool) => ({ name: tool.name!, description: tool.description ?? '' })), options);
  const byName = new Map(named.map((tool) => [tool.name!, tool]));
  return names.flatMap((name) => byName.get(name) ?? []);
}

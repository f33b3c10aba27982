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
  /** How long to wait for toolsift's answer before it counts as unavailable (default 5,000 ms). */
  timeoutMs?: number;
  /**
   * When toolsift is unavailable (no connection, no answer within `timeoutMs`, a 5xx, 408 or 429):
   * `'keywords'` (the default) answers from the candidates in hand, ranked by the words of the query
   * in their names (counted twice) and descriptions, as the Vercel AI SDK's own tool search does, so
   * the agent goes on without toolsift's ranking; `'none'` throws. Other answers (a 400 for a bad
   * request, a 401 for a wrong key) always throw: they need fixing, not hiding.
   */
  fallback?: 'keywords' | 'none';
  /** Told each time an answer came from the fallback (default: one console.warn line). */
  onFallback?: (error: Error) => void;
  /**
   * Opt-in learning from use, for a `catalog` search: the tracker (`useTracker`) hears each query and
   * the names toolsift ranked for it; tell it what the model then called (`tracker.called(name)`)
   * and it sends that to `POST /v1/feedback`, in the background.
   */
  learn?: UseTracker;
}

export const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_RESULTS = 5;

/** toolsift did not answer (or answered that it cannot now): a fallback may stand in. */
export class ToolsiftUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ToolsiftUnavailable';
  }
}

const UNAVAILABLE_STATUS = (status: number) => status >= 500 || status === 408 || status === 429;

async function toolSearch(client: ReturnType<typeof createToolsiftClient>, body: Record<string, unknown>, options: SearchOptions): Promise<unknown> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let answered;
  try {
    answered = await client.POST('/v1/tool-search', { body: body as never, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const timedOut = (error as Error)?.name === 'TimeoutError';
    throw new ToolsiftUnavailable(timedOut ? `toolsift tool-search did not answer within ${timeoutMs} ms` : `toolsift tool-search unreachable: ${(error as Error)?.message ?? error}`, { cause: error });
  }
  const { data, error, response } = answered;
  if (error || !data) {
    const message = `toolsift tool-search answered ${response.status}: ${JSON.stringify(error)}`;
    throw UNAVAILABLE_STATUS(response.status) ? new ToolsiftUnavailable(message) : new Error(message);
  }
  if (options.learn && options.catalog) options.learn.searched(String(body.query), rankedNames(data));
  return data;
}

/** The tool names of a tool-search answer in any format (names, anthropic, openai). */
function rankedNames(answer: unknown): string[] {
  const { results, content, tools } = answer as { results?: Array<{ name?: unknown }>; content?: Array<{ tool_name?: unknown }>; tools?: Array<{ name?: unknown }> };
  const names = (results ?? tools ?? []).map((entry) => entry.name).concat((content ?? []).map((entry) => entry.tool_name));
  return names.filter((name): name is string => typeof name === 'string');
}

/** What a search helper tells about its searches, and the agent about its calls (`useTracker`). */
export interface UseTracker {
  searched(query: string, names: readonly string[]): void;
  /** The model called `name`: if a recent search ranked it, toolsift hears that it served that query. Never throws, never waits. */
  called(name: string): void;
}

/**
 * Learning from use for a catalog (opt-in): pass the tracker as a helper's `learn` option and call
 * `called(name)` from your loop's tool-call hook (e.g. the AI SDK's `onStepFinish`). A call of a tool
 * that one of the last searches (within `windowMs`, default 10 minutes) ranked is sent to
 * `POST /v1/feedback` with that search's query and what it ranked, once per search and tool, in the background: a
 * failure goes to `onError` (default: ignored), never to the agent.
 */
export function useTracker(client: ToolsiftClientOptions, options: { catalog: string; windowMs?: number; timeoutMs?: number; onError?: (error: Error) => void }): UseTracker {
  const api = createToolsiftClient(client);
  const windowMs = options.windowMs ?? 10 * 60_000;
  let recent: Array<{ query: string; shown: string[]; names: Set<string>; at: number; sent: Set<string> }> = [];
  return {
    searched(query, names) {
      recent = [{ query, shown: [...names], names: new Set(names), at: Date.now(), sent: new Set<string>() }, ...recent].slice(0, 8);
    },
    called(name) {
      const search = recent.find((entry) => Date.now() - entry.at <= windowMs && entry.names.has(name));
      if (!search || search.sent.has(name)) return;
      search.sent.add(name);
      void api
        .POST('/v1/feedback', {
          // What the model was shown with it: learning may then put it above an alike tool it was chosen over.
          body: { catalog: options.catalog, query: search.query, used: [name], shown: search.shown },
          signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        })
        .then(({ error, response }) => {
          if (error) throw new Error(`toolsift feedback answered ${response.status}: ${JSON.stringify(error)}`);
        })
        .catch((error: Error) => options.onError?.(error));
    },
  };
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

/** The tool object of a candidate in any of the shapes the helpers take (OpenAI Chat nests it under `function`). */
function toolOf(candidate: unknown): { name?: unknown; description?: unknown; parameters?: unknown; inputSchema?: unknown; input_schema?: unknown } | undefined {
  const outer = candidate as { name?: unknown; function?: unknown } | null | undefined;
  const tool = typeof outer?.name === 'string' ? outer : outer?.function;
  return tool && typeof tool === 'object' ? tool : undefined;
}

/** A candidate's name and description, when it has a name. */
function described(candidate: unknown): { name: string; description: string } | undefined {
  const tool = toolOf(candidate);
  return typeof tool?.name === 'string' && tool.name.length > 0 ? { name: tool.name, description: typeof tool.description === 'string' ? tool.description : '' } : undefined;
}

const words = (text: string) => text.replace(/([a-z\d])([A-Z])/g, '$1 $2').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * The fallback's ranking when toolsift is unavailable: each distinct word of the query counts 2 in
 * a tool's name and 1 in its description (the Vercel AI SDK's built-in tool search); tools matching
 * nothing are left out; ties keep the candidates' order. Indexes into `candidates`, best first.
 */
export function keywordMatch(query: string, candidates: readonly unknown[], maxResults = DEFAULT_MAX_RESULTS): number[] {
  const terms = [...new Set(words(query))];
  return candidates
    .map((candidate, index) => {
      const tool = described(candidate);
      if (!tool) return { index, score: 0 };
      const name = new Set(words(tool.name));
      const description = new Set(words(tool.description));
      return { index, score: terms.reduce((score, term) => score + (name.has(term) ? 2 : 0) + (description.has(term) ? 1 : 0), 0) };
    })
    .filter((match) => match.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, maxResults)
    .map((match) => match.index);
}

/**
 * toolsift's answer, or, when it is unavailable and candidates are in hand, `fallback`'s answer
 * from the keyword match's picks (indexes into `candidates`). Without candidates (a `catalog`
 * search whose tools only toolsift holds) or with `fallback: 'none'` the error is thrown.
 */
async function answerOrFallback<T>(
  options: SearchOptions,
  query: string,
  candidates: readonly unknown[] | undefined,
  ask: () => Promise<T>,
  fallback: (picked: number[]) => T,
): Promise<T> {
  try {
    return await ask();
  } catch (error) {
    if (!(error instanceof ToolsiftUnavailable) || options.fallback === 'none' || !candidates?.length) throw error;
    (options.onFallback ?? ((cause: Error) => console.warn(`${cause.message}; answered from a keyword match of the tools in hand`)))(error);
    return fallback(keywordMatch(query, candidates, options.maxResults ?? DEFAULT_MAX_RESULTS));
  }
}

/**
 * Vercel AI SDK: the `search` callback of `toolSearch({ search })` (ai >= 7): the query and the
 * deferred tools' names and descriptions in, ranked names out.
 */
export function aiSdkSearch(client: ToolsiftClientOptions, options: SearchOptions = {}) {
  const api = createToolsiftClient(client);
  return async ({ query, tools }: { query: string; tools: Array<{ name: string; description?: string }> }): Promise<string[]> =>
    answerOrFallback(
      options,
      query,
      tools,
      async () => {
        const answer = (await toolSearch(api, requestBody(query, tools.map(({ name, description }) => ({ name, description: description ?? '' })), options, 'names'), options)) as {
          results: Array<{ name: string }>;
        };
        return answer.results.map((result) => result.name);
      },
      (picked) => picked.map((index) => tools[index]!.name),
    );
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
  const content = await answerOrFallback(
    options,
    query,
    tools,
    async () => ((await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'anthropic'), options)) as { content: Array<{ type: 'tool_reference'; tool_name: string }> }).content,
    (picked) => picked.map((index) => ({ type: 'tool_reference' as const, tool_name: described(tools[index])!.name })),
  );
  return { type: 'tool_result', tool_use_id: toolUse.id, content };
}

/**
 * OpenAI Responses / Agents SDK, client-executed tool search: the `tool_search_output` item (with
 * the selected tools' full definitions, `defer_loading: true`) answering a `tool_search_call`.
 */
export async function openaiToolSearchOutput(client: ToolsiftClientOptions, query: string, tools: unknown[], options: SearchOptions & { callId?: string } = {}): Promise<ToolSearchOutputItem> {
  return answerOrFallback(
    options,
    query,
    tools,
    async () => (await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'openai', options.callId ? { call_id: options.callId } : {}), options)) as ToolSearchOutputItem,
    (picked) => ({ type: 'tool_search_output', execution: 'client', status: 'completed', ...(options.callId ? { call_id: options.callId } : {}), tools: picked.map((index) => functionTool(tools[index])) }),
  );
}

interface ToolSearchOutputItem {
  type: 'tool_search_output';
  execution: 'client';
  status: 'completed';
  call_id?: string;
  tools: Array<{ type: 'function'; name: string; description: string; parameters: Record<string, unknown>; strict: boolean; defer_loading: boolean }>;
}

/** A candidate as the Responses function tool the fallback loads: its parameters from whichever shape it came in. */
function functionTool(candidate: unknown): ToolSearchOutputItem['tools'][number] {
  const tool = toolOf(candidate)!;
  const schema = tool.parameters ?? tool.inputSchema ?? tool.input_schema;
  const { name, description } = described(candidate)!;
  return { type: 'function', name, description, parameters: (schema && typeof schema === 'object' ? schema : { type: 'object', properties: {} }) as Record<string, unknown>, strict: false, defer_loading: true };
}

/** Plain ranked names, for LangChain middleware, LangGraph bigtool's retrieve function or your own loop. */
export async function rankToolNames(client: ToolsiftClientOptions, query: string, tools: unknown[] | undefined, options: SearchOptions = {}): Promise<string[]> {
  return answerOrFallback(
    options,
    query,
    tools,
    async () => ((await toolSearch(createToolsiftClient(client), requestBody(query, tools, options, 'names'), options)) as { results: Array<{ name: string }> }).results.map((result) => result.name),
    (picked) => picked.map((index) => described(tools![index])!.name),
  );
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
    return answerOrFallback(
      options,
      query,
      candidates,
      async () => {
        const answer = (await toolSearch(api, requestBody(query, candidates, options, 'names'), options)) as { results: Array<{ name: string }> };
        const byName = new Map(deferred.map((tool) => [tool.name!, tool]));
        return answer.results.flatMap((result) => byName.get(result.name) ?? []);
      },
      (picked) => picked.map((index) => deferred[index]!),
    );
  };
}

/**
 * LangChain.js middleware (`createMiddleware({ wrapModelCall })`) or your own loop: the tools of
 * `tools` (anything with a `name` and a `description`, e.g. `request.tools`) that toolsift ranks
 * for `query`, best first, as the same objects; at most `maxResults` (default 5). When the ranking
 * (or the fallback's keyword match) names none of them, `tools` unchanged: this turn's model has
 * no other way to reach a tool, and narrowing to nothing would leave it none.
 */
export async function narrowTools<T extends { name?: string; description?: string }>(client: ToolsiftClientOptions, query: string, tools: readonly T[], options: SearchOptions = {}): Promise<T[]> {
  const named = tools.filter((tool) => typeof tool.name === 'string' && tool.name.length > 0);
  if (named.length === 0) return [...tools];
  const names = await rankToolNames(client, query, named.map((tool) => ({ name: tool.name!, description: tool.description ?? '' })), options);
  const byName = new Map(named.map((tool) => [tool.name!, tool]));
  const narrowed = names.flatMap((name) => byName.get(name) ?? []);
  return narrowed.length > 0 ? narrowed : [...tools];
}

/**
 * toolsift as an MCP server: four meta-tools for progressive disclosure (search, details, list,
 * call), a catalog index resource, a tool-definition resource template and two prompts; for a key
 * given `manage`, at /mcp, the management tools, resource and prompt (manage.ts). The tool list
 * depends only on the endpoint and the key's scope, never on the catalogs' contents (2026-07-28
 * forbids a list that varies per connection); discovered tools are reached through `call_tool`, not
 * injected. A fresh McpServer serves each HTTP request (stateless), built from the request's tenant,
 * key and catalog scope.
 */
import { traceContext, type TraceContext } from '../lib/trace-context.js';
import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { McpServer, ProtocolError, ProtocolErrorCode, ResourceNotFoundError, ResourceTemplate, type Variables } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { listCatalogs } from '../catalog/catalog-service.js';
import { textProblem } from '../lib/safe-text.js';
import { RESERVED_TOOL_NAMES } from '../trust/reserved-names.js';
import type { Logger } from '../logger.js';
import { recordSearch, type Metrics } from '../metrics.js';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../store/database.js';
import { runCode, runStructured, runText } from './code-mode.js';
import { installedHandler, registerDrafts } from './drafts.js';
import { deregisterUpstream, managementStatus, offersManagement, offersUpstreamChanges, registerUpstream, statusText } from './manage.js';
import type { SandboxPool } from '../sandbox/sandbox-pool.js';
import {
  CATALOG,
  DEGRADED,
  endWith,
  errorClass,
  EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME,
  GEN_AI_PROMPT_NAME,
  GEN_AI_TOOL_NAME,
  MCP_METHOD_NAME,
  NO_TRACING,
  OUTCOME,
  RESOURCE,
  RESULTS,
  TENANT,
  TOOL,
  UPSTREAM,
  type GatewaySpan,
  type SpanAttributes,
} from '../tracing/tracing.js';
import {
  BadCursor,
  callTool,
  catalogIndex,
  errorResult,
  listToolNames,
  resolveTool,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_LIMIT_MAX,
  searchTools,
  toolDetails,
  type DiscoveryDeps,
  type DiscoveryScope,
  type TimeSplit,
} from './discovery.js';

export interface McpDeps extends DiscoveryDeps {
  logger: Logger;
  metrics?: Metrics;
  version: string;
  /** Set when CODE_MODE=on: run_code runs programs here. */
  sandbox?: SandboxPool | null;
  /** MCP_DRAFTS=on: the draft methods and tools of mcp/drafts.ts. */
  drafts?: boolean;
}

export const META_TOOLS = RESERVED_TOOL_NAMES;

const INSTRUCTIONS = `toolsift finds tools among many MCP servers' tools without loading them all.
Workflow: 1) search_tools with what you want to do, in plain words (it ranks by meaning and keywords);
2) get_tool_details on the one or few that fit, to read their input schema;
3) call_tool with that name and arguments matching the schema.
list_tools browses names when you know roughly what exists. Names returned by search_tools and list_tools are the ones to pass on unchanged.`;

/** Added to the instructions for a key given `manage` (at /mcp). */
export const MANAGE_INSTRUCTIONS = `Management (this key may manage upstreams): the resource toolsift://upstreams/status and the prompt upstream_status show every upstream MCP server's sync state, tool counts, tools waiting for approval, last error class and the names of the credentials it needs.`;
const CHANGE_INSTRUCTIONS = ` register_upstream adds (or changes) a remote MCP server in a catalog and syncs it now; deregister_upstream removes one with its tools. Tools new or changed on an upstream wait for a person's approval over the REST API.`;

/** Added to the instructions where run_code is offered. */
export const CODE_MODE_INSTRUCTIONS = `Code mode: when a task takes several tool calls (many files, a loop over a list, one tool's output into another), write one program for run_code instead of calling tools one by one: only its return value and console output come back to you.
In a program, a tool is an async function: await tools.<name>(args), or tools.<catalog>.<name>(args) where names carry a catalog, or tools["odd-name"](args); await callTool(name, args) works for any name. A call resolves to the tool's structured result, or its text; a failed call throws a ToolError.
Find tools with search_tools (signatures: true shows how to call each), read their TypeScript declarations with get_tool_details (detail: "typescript"), then run_code with TypeScript or JavaScript whose top level may await and return. No network, files, timers or imports: only tools, callTool and console.`;

/**
 * A meta-tool's text field: what the store can keep (safe-text.ts). Checked here, not over the
 * whole message as the REST API does, so a NUL or a lone surrogate is an isError result naming the
 * field, and a proxied call's arguments reach the upstream as sent.
 */
const safeText = () =>
  z.string().superRefine((value, context) => {
    const problem = textProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

const searchInput = z.object({
  query: safeText().trim().min(1).max(QUERY_CHARS_MAX).describe('What you want to do, in plain words, e.g. "read a file from disk"'),
  limit: z.number().int().min(1).max(SEARCH_LIMIT_MAX).optional().describe(`How many tools (default ${SEARCH_LIMIT_DEFAULT}, at most ${SEARCH_LIMIT_MAX})`),
  tags: z.array(safeText().min(1).max(64)).max(16).optional().describe('Only tools carrying one of these tags'),
  server: safeText().min(1).max(128).optional().describe('Only tools of this MCP server'),
  signatures: z.boolean().optional().describe('Also how a run_code program calls each tool: a one-line TypeScript signature'),
});
const briefTool = z.object({
  name: z.string(),
  catalog: z.string(),
  server: z.string().nullable(),
  description: z.string(),
  parameters: z.array(z.string()),
  score: z.number(),
  signature: z.string().optional(),
});
const searchOutput = z.object({ results: z.array(briefTool), hint: z.string().optional() });

const detailsInput = z.object({
  names: z.array(safeText().min(1).max(300)).min(1).max(20).describe('Tool names from search_tools or list_tools'),
  detail: z
    .enum(['brief', 'full', 'typescript'])
    .optional()
    .describe('full (default): the input schema as pushed; brief: first sentence and parameter names; typescript: a declaration for run_code programs'),
});
const detailsOutput = z.object({
  tools: z.array(
    z.object({
      name: z.string(),
      found: z.boolean(),
      error: z.string().optional(),
      catalog: z.string().optional(),
      server: z.string().nullable().optional(),
      description: z.string().optional(),
      parameters: z.array(z.string()).optional(),
      inputSchema: z.record(z.string(), z.unknown()).nullable().optional(),
      declaration: z.string().optional(),
      credentials: z
        .object({ headers: z.array(z.string()), env: z.array(z.string()) })
        .optional()
        .describe("For a key that may manage: the names (never values) of the credentials the tool's upstream is given"),
    }),
  ),
});

const runInput = z.object({
  code: safeText()
    .min(1)
    .describe(
      'A TypeScript or JavaScript program: the body of an async function (await and return at its top level). Tools are async functions: await tools.<name>(args).',
    ),
});
const runOutput = z.object({
  result: z.unknown().optional().describe("The program's return value (null when it returns nothing)"),
  result_truncated: z.string().optional().describe("The return value's JSON cut at the output limit, when it was longer"),
  logs: z.array(z.string()).describe('console output, cut at the output limit'),
  logs_dropped: z.number().optional(),
  calls: z.number().describe('Tool calls the program made'),
  ms: z.number(),
});

const upstreamStatusShape = z.object({
  catalog: z.string(),
  name: z.string(),
  transport: z.enum(['http', 'stdio']),
  url: z.string().nullable(),
  state: z.enum(['synced', 'failing', 'not_synced']),
  last_sync_at: z.string().nullable(),
  trust: z.enum(['pin', 'auto']),
  result_scan: z.enum(['flag', 'block', 'off']).nullable(),
  tool_count: z.number(),
  pending: z.number(),
  pending_tools: z.array(z.object({ name: z.string(), change: z.enum(['new', 'changed']), findings: z.array(z.string()) })),
  conflicts: z.number(),
  last_error: z.object({ class: z.string(), message: z.string() }).nullable(),
  credentials: z.object({ headers: z.array(z.string()), env: z.array(z.string()) }),
});

/** register_upstream's arguments: typed loosely here, checked by the REST route's own rules (upstream/registration.ts) so a refusal reads the same. */
const registerInput = z.object({
  catalog: z.string().describe('The catalog its tools go into (created when absent)'),
  name: z.string().describe("The upstream's name: its tools carry it as their server"),
  url: z
    .string()
    .describe('The remote MCP server (Streamable HTTP or SSE), http:// or https://; internal addresses are refused unless the operator opened them'),
  headers: z.record(z.string(), z.string()).optional().describe('Headers sent to it, name -> value (credentials: never shown back)'),
  refresh_seconds: z.number().optional().describe('How often its tools are listed again, 10-86400 (default 300)'),
  trust: z.enum(['pin', 'auto']).optional().describe('pin (default): new and changed tools wait for approval; auto: those the scanner passes are approved'),
  result_scan: z
    .enum(['flag', 'block', 'off'])
    .optional()
    .describe("How this upstream's results are read for instructions to the model: flag, block or off (default: the service's RESULT_SCAN)"),
});
const deregisterInput = z.object({ catalog: z.string().describe('Its catalog'), name: z.string().describe("The upstream's name") });

const listInput = z.object({
  cursor: safeText().max(2_000).optional().describe('next_cursor of the previous page'),
  server: safeText().min(1).max(128).optional().describe('Only tools of this MCP server'),
});
const listOutput = z.object({ names: z.array(z.string()), next_cursor: z.string().optional() });

const callInput = z.object({
  name: safeText().min(1).max(300).describe('A tool name from search_tools or list_tools'),
  arguments: z.record(z.string(), z.unknown()).optional().describe("The tool's arguments, matching its input schema"),
});

function text(value: unknown): { type: 'text'; text: string } {
  return { type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) };
}

/** Search results as compact lines (~60 tokens each), for clients that read the text block only. */
function searchText(answer: {
  results: Array<{ name: string; server: string | null; description: string; parameters: string[]; score: number }>;
  hint?: string;
}): string {
  const lines = answer.results.map(
    (tool, index) => `${index + 1}. ${tool.name}${tool.server ? ` [${tool.server}]` : ''} (${tool.parameters.join(', ')}): ${tool.description}`,
  );
  return [...lines, ...(answer.hint ? [`hint: ${answer.hint}`] : [])].join('\n') || 'no tools';
}

/** Whether run_code is offered in this scope: CODE_MODE=on, and at /mcp/{catalog} the catalog allows it. */
export function offersCodeMode(deps: McpDeps, scope: DiscoveryScope): boolean {
  // A search-only key is not offered programs whose only purpose is calling tools.
  return Boolean(deps.sandbox) && (scope.catalog === undefined || scope.summary?.codeMode !== false) && scope.access?.policy.call !== false;
}

// Built once: a server is made per request (stateless Streamable HTTP), and building a zod schema costs more than the rest of it.
const taskArgs = z.object({ task: z.string().min(1).max(2_000) });
const registerOutput = z.object({ upstream: upstreamStatusShape });
const deregisterOutput = z.object({ removed: z.object({ catalog: z.string(), name: z.string() }) });
/** tools/list's params passed on whole, for the handler McpServer installed to check. */
const listedParams = z.looseObject({});
/** A request answered without throwing is a span without error.type (a resource not found throws). */
const noError = () => undefined;

export function createToolsiftMcpServer(deps: McpDeps, scope: DiscoveryScope): McpServer {
  const codeMode = offersCodeMode(deps, scope);
  const manages = offersManagement(deps, scope);
  const changes = offersUpstreamChanges(deps, scope);
  const instructions = [
    INSTRUCTIONS,
    ...(codeMode ? [CODE_MODE_INSTRUCTIONS] : []),
    ...(manages ? [MANAGE_INSTRUCTIONS + (changes ? CHANGE_INSTRUCTIONS : '')] : []),
  ].join('\n\n');
  const server = new McpServer({ name: 'toolsift', version: deps.version }, { instructions, capabilities: { logging: {} } });
  /** The scope as a meta-tool, resource or prompt sees it: the key's decisions say where they were made. */
  const at = (via: string): DiscoveryScope => (scope.access ? { ...scope, access: scope.access.at('mcp', via) } : scope);
  /** `within` running in the meta-tool call's trace: its span's context (observed), or without tracing the caller's. */
  const traced = (within: DiscoveryScope, trace: TraceContext | undefined): DiscoveryScope => (trace ? { ...within, trace } : within);
  const tracing = deps.tracing ?? NO_TRACING;
  /**
   * The SERVER span of one MCP request: a child of the trace context its own `_meta` names (the MCP
   * keys), else of the HTTP request's. A request that names its own parent is linked to the HTTP
   * request's span: the agent's trace and the one its HTTP client made are joined, not split.
   */
  const serverSpan = (name: string, ctx: unknown, attributes: SpanAttributes): GatewaySpan => {
    const own = traceContext((ctx as { mcpReq?: { _meta?: Record<string, unknown> } } | undefined)?.mcpReq?._meta);
    // Without tracing there is no request span to link to, and nothing is built for one.
    const request = tracing.enabled && own && scope.trace?.traceparent !== own.traceparent ? scope.trace : undefined;
    return tracing.start(name, {
      kind: 'server',
      parent: own ?? scope.trace,
      attributes: { [TENANT]: scope.tenant, [CATALOG]: scope.catalog, ...attributes },
      ...(request ? { links: [request] } : {}),
    });
  };
  /**
   * `answer` (a resource's read or a prompt's callback, given the request's context last, as the SDK
   * calls both) run within the request's SERVER span; without tracing, `answer` as it is.
   */
  const inSpan =
    <A extends unknown[], R>(name: string, attributes: SpanAttributes, answer: (...args: A) => R | Promise<R>) =>
    (...args: A): R | Promise<R> =>
      tracing.enabled
        ? endWith(
            serverSpan(name, args.at(-1), attributes),
            Promise.resolve().then(() => answer(...args)),
            noError,
          )
        : answer(...args);
  const resourceRead = <A extends unknown[], R>(resource: string, read: (...args: A) => Promise<R>) =>
    inSpan('resources/read', { [MCP_METHOD_NAME]: 'resources/read', [RESOURCE]: resource }, read);
  const promptGet = <A extends unknown[], R>(prompt: string, give: (...args: A) => R | Promise<R>) =>
    inSpan(`prompts/get ${prompt}`, { [MCP_METHOD_NAME]: 'prompts/get', [GEN_AI_PROMPT_NAME]: prompt }, give);

  /** A prompt taking one `task` argument: the user message its text gives for that task. */
  const taskPrompt = (name: string, about: { title: string; description: string }, text: (task: string) => string) =>
    server.registerPrompt(
      name,
      { ...about, argsSchema: taskArgs },
      promptGet(name, ({ task }: z.infer<typeof taskArgs>) => ({
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text: text(task) } }],
      })),
    );

  /**
   * Runs one meta-tool call with its log line, metrics and SERVER span (a child of the call's trace
   * context, which `run` gets as the context its own calls continue); an unexpected error becomes an
   * isError result. `call`: the request's context (its `_meta`), and the catalog tool it names.
   */
  const observed = async <T extends { content: unknown[]; isError?: boolean }>(
    tool: string,
    call: { ctx?: unknown; target?: string },
    run: (trace: TraceContext | undefined) => Promise<T & { count?: number; upstream?: string; split?: TimeSplit; degraded?: string }>,
  ) => {
    const started = performance.now();
    let outcome = 'ok';
    const span = serverSpan(`tools/call ${tool}`, call.ctx, {
      [MCP_METHOD_NAME]: 'tools/call',
      [GEN_AI_OPERATION_NAME]: EXECUTE_TOOL,
      [GEN_AI_TOOL_NAME]: tool,
      [TOOL]: call.target,
    });
    let failure: string | undefined;
    try {
      const result = await run(span.context);
      if (result.isError) outcome = 'tool_error';
      const { count, upstream, split = {}, degraded, ...answer } = result;
      span.set({ [RESULTS]: count, [UPSTREAM]: upstream, [DEGRADED]: degraded });
      if (result.isError) failure = 'tool_error';
      const rounded = (ms: number) => Math.round(ms * 100) / 100;
      deps.logger.info(
        {
          method: 'tools/call',
          tool,
          tenant: scope.tenant,
          catalog: scope.catalog ?? null,
          results: count ?? null,
          upstream: upstream ?? null,
          ms: rounded(performance.now() - started),
          ...Object.fromEntries(Object.entries(split).map(([stage, ms]) => [stage, rounded(ms)])),
          ...(degraded ? { degraded } : {}),
          outcome,
        },
        'mcp call',
      );
      if (upstream) deps.metrics?.mcpUpstreamCalls.observe({ upstream, outcome }, (split.upstream_ms ?? performance.now() - started) / 1000);
      return answer as T;
    } catch (error) {
      outcome = 'error';
      failure = errorClass(error);
      deps.logger.warn({ err: error, method: 'tools/call', tool, tenant: scope.tenant, catalog: scope.catalog ?? null }, 'mcp call failed');
      const message = isDatabaseUnavailable(error)
        ? DATABASE_UNAVAILABLE_MESSAGE
        : error instanceof BadCursor || (error as { code?: string }).code
          ? (error as Error).message
          : 'internal error while answering; see the server log';
      return errorResult(message) as unknown as T;
    } finally {
      deps.metrics?.mcpRequests.inc({ method: 'tools/call', tool, outcome });
      span.set({ [OUTCOME]: outcome });
      span.end(failure);
    }
  };

  server.registerTool(
    'search_tools',
    {
      title: 'Search tools',
      description:
        'Find the tools that fit a task among every tool toolsift holds. Returns names, servers, a one-sentence description and parameter names; read details before calling.',
      inputSchema: searchInput,
      outputSchema: searchOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (input, ctx) =>
      observed('search_tools', { ctx }, async () => {
        const { split, degraded, language, ...answer } = await searchTools(deps, at('search_tools'), input);
        recordSearch(deps.metrics, 'mcp_search_tools', split, degraded, language);
        return { content: [text(searchText(answer))], structuredContent: answer, count: answer.results.length, split, ...(degraded ? { degraded } : {}) };
      }),
  );

  server.registerTool(
    'get_tool_details',
    {
      title: 'Get tool details',
      description:
        "Read one or more tools' descriptions and input schemas (detail full, the default) or a brief summary. Unknown names are reported per name. The definition exactly as pushed is the resource toolsift://catalogs/{catalog}/tools/{name}.",
      inputSchema: detailsInput,
      outputSchema: detailsOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (input, ctx) =>
      observed('get_tool_details', { ctx }, async () => {
        const tools = await toolDetails(deps, at('get_tool_details'), input.names, input.detail ?? 'full');
        return { content: [text({ tools })], structuredContent: { tools }, count: tools.filter((tool) => tool.found).length };
      }),
  );

  server.registerTool(
    'list_tools',
    {
      title: 'List tool names',
      description: "List tool names in name order, a page at a time (pass next_cursor back for more). Optionally only one server's tools.",
      inputSchema: listInput,
      outputSchema: listOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (input, ctx) =>
      observed('list_tools', { ctx }, async () => {
        const page = await listToolNames(deps, at('list_tools'), input);
        return {
          content: [text(page.names.join('\n') + (page.next_cursor ? `\nnext_cursor: ${page.next_cursor}` : ''))],
          structuredContent: page,
          count: page.names.length,
        };
      }),
  );

  server.registerTool(
    'call_tool',
    {
      title: 'Call a tool',
      description:
        "Run a tool on the MCP server it came from, with arguments matching its input schema (see get_tool_details). The server's result is returned unchanged.",
      inputSchema: callInput,
      annotations: { openWorldHint: true },
    },
    (input, ctx) =>
      observed('call_tool', { ctx, target: input.name }, async (trace) => {
        const result = await callTool(
          deps,
          traced(at('call_tool'), trace),
          input.name,
          input.arguments ?? {},
          (ctx as { mcpReq?: { signal?: AbortSignal } } | undefined)?.mcpReq?.signal,
        );
        return result as { content: Array<{ type: 'text'; text: string }>; isError?: boolean; upstream?: string };
      }),
  );

  if (codeMode && deps.sandbox) {
    const sandbox = deps.sandbox;
    const limits = sandbox.limits;
    server.registerTool(
      'run_code',
      {
        title: 'Run a program that calls tools',
        description:
          'Run one TypeScript or JavaScript program in a sandbox; only its return value and console output come back, not the results of the tools it calls. ' +
          'Use it when a task takes several calls: loops, many files, one tool feeding another. ' +
          'The program is the body of an async function: await tools.<name>(args) (tools.<catalog>.<name> where names carry a catalog; tools["odd-name"]) or callTool(name, args) call tools, ' +
          "resolving to the tool's structured result or its text; a failed call throws ToolError. Return a value to answer. " +
          'No network, files, timers or imports. ' +
          `Limits: ${Math.round(limits.wallMs / 1000)} s, ${limits.maxCalls} tool calls, ${Math.round(limits.memoryBytes / 1024 / 1024)} MiB, output cut at ${Math.round(limits.outputBytes / 1024)} KiB. ` +
          'get_tool_details with detail "typescript" gives a tool\'s declaration.',
        inputSchema: runInput,
        outputSchema: runOutput,
        annotations: { openWorldHint: true },
      },
      (input, ctx) =>
        observed('run_code', { ctx }, async (trace) => {
          const { outcome, ms } = await runCode(
            {
              ...deps,
              sandbox,
              onProgramCall: (upstream, outcome, callMs) => {
                if (upstream) deps.metrics?.mcpUpstreamCalls.observe({ upstream, outcome }, callMs / 1000);
              },
            },
            traced(at('run_code'), trace),
            input.code,
            (ctx as { mcpReq?: { signal?: AbortSignal } } | undefined)?.mcpReq?.signal,
          );
          deps.metrics?.codeRuns.observe({ outcome: outcome.ok ? 'ok' : outcome.error!.kind }, ms / 1000);
          const split = { sandbox_start_ms: outcome.startMs, program_cpu_ms: outcome.cpuMs };
          if (!outcome.ok) return { content: [text(runText(outcome))], isError: true, count: outcome.calls, split };
          return { content: [text(runText(outcome))], structuredContent: runStructured(outcome, ms), count: outcome.calls, split };
        }),
    );
  }

  if (changes) {
    server.registerTool(
      'register_upstream',
      {
        title: 'Register an upstream MCP server',
        description:
          'Add (or change) a remote MCP server as a source of tools in a catalog and sync it now, under the same rules as the REST API: the address policy, pinning and the definition scanner. ' +
          "Answers the upstream's status: its tools, those waiting for approval, its last error. Header values are credentials and are never shown back.",
        inputSchema: registerInput,
        outputSchema: registerOutput,
        annotations: { openWorldHint: true, destructiveHint: false, idempotentHint: true },
      },
      (input, ctx) =>
        observed('register_upstream', { ctx }, async () => {
          const upstream = await registerUpstream(deps, at('register_upstream'), input);
          return { content: [text(statusText([upstream]))], structuredContent: { upstream } };
        }),
    );
    server.registerTool(
      'deregister_upstream',
      {
        title: 'Remove an upstream MCP server',
        description: 'Remove an upstream MCP server from a catalog, with every tool it synced there.',
        inputSchema: deregisterInput,
        outputSchema: deregisterOutput,
        annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      (input, ctx) =>
        observed('deregister_upstream', { ctx }, async () => {
          const removed = await deregisterUpstream(deps, at('deregister_upstream'), input);
          return { content: [text(`removed upstream ${removed.catalog}/${removed.name} and its tools`)], structuredContent: { removed } };
        }),
    );
  }

  const catalogsOf = async (): Promise<string[]> =>
    scope.catalog ? [scope.catalog] : (await listCatalogs(deps.catalog, scope.tenant, scope.access)).map((catalog) => catalog.name);
  const inScope = async (catalog: string) => (await catalogsOf()).includes(catalog);
  /** A URI template variable as text: a malformed escape is the client's error (-32602), not an internal one. */
  const variable = (uri: URL, value: string | string[] | undefined) => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(String(value));
    } catch {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `malformed percent-escape in ${uri.href}`);
    }
    const problem = textProblem(decoded);
    if (problem) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${uri.href}: ${problem}`);
    return decoded;
  };
  /** The catalog a resource URI names, in the caller's scope, or resource-not-found (-32602 with the URI, as the spec says). */
  const scopedCatalog = async (uri: URL, value: string | string[] | undefined) => {
    const catalog = variable(uri, value);
    if (!(await inScope(catalog))) throw new ResourceNotFoundError(uri.href, `unknown catalog "${catalog}"`);
    return catalog;
  };

  server.registerResource(
    'catalog-index',
    new ResourceTemplate('toolsift://catalogs/{catalog}/index', {
      list: async () => ({
        resources: (await catalogsOf()).map((catalog) => ({ uri: `toolsift://catalogs/${catalog}/index`, name: `${catalog} index`, mimeType: 'text/plain' })),
      }),
    }),
    { title: 'Catalog index', description: 'Every tool of a catalog, one line each: name and first sentence.', mimeType: 'text/plain' },
    resourceRead('catalog-index', async (uri: URL, variables: Variables) => {
      const catalog = await scopedCatalog(uri, variables.catalog);
      deps.metrics?.mcpRequests.inc({ method: 'resources/read', tool: 'catalog-index', outcome: 'ok' });
      return {
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: await catalogIndex(deps, scope.tenant, catalog, at('resource catalog-index').access) }],
      };
    }),
  );

  server.registerResource(
    'tool-definition',
    new ResourceTemplate('toolsift://catalogs/{catalog}/tools/{name}', { list: undefined }),
    { title: 'Tool definition', description: "A tool's full definition as it was pushed or synced.", mimeType: 'application/json' },
    resourceRead('tool-definition', async (uri: URL, variables: Variables) => {
      const name = variable(uri, variables.name);
      const catalog = await scopedCatalog(uri, variables.catalog);
      const resolved = await resolveTool(deps, { tenant: scope.tenant, catalog, access: at('resource tool-definition').access }, name, 'details');
      if (!resolved.ok) throw new ResourceNotFoundError(uri.href, resolved.error);
      deps.metrics?.mcpRequests.inc({ method: 'resources/read', tool: 'tool-definition', outcome: 'ok' });
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(resolved.tool.definition) }] };
    }),
  );

  if (manages) {
    server.registerResource(
      'upstream-status',
      'toolsift://upstreams/status',
      {
        title: 'Upstream status',
        description:
          "Every upstream MCP server of the tenant this key sees: sync state, tools served, tools waiting for approval, last error class, the credentials' names.",
        mimeType: 'application/json',
      },
      resourceRead('upstream-status', async (uri: URL) => {
        const upstreams = await managementStatus(deps, at('resource upstream-status'));
        deps.metrics?.mcpRequests.inc({ method: 'resources/read', tool: 'upstream-status', outcome: 'ok' });
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ upstreams }) }] };
      }),
    );
    server.registerPrompt(
      'upstream_status',
      {
        title: 'Upstream status',
        description: 'Review the upstream MCP servers: which fail and why, which tools wait for approval, which credentials each needs.',
      },
      promptGet('upstream_status', async () => {
        const upstreams = await managementStatus(deps, at('prompt upstream_status'));
        return {
          messages: [
            {
              role: 'user',
              content: {
                type: 'text',
                text: `The upstream MCP servers toolsift syncs tools from:\n${statusText(upstreams)}\n\nSay which fail and what their error class suggests (unauthorized: a credential to renew; connection_failed: the server is down or unreachable; refused_address: an internal address the operator has not opened), which tools wait for approval (a person approves them over the REST API after reading the diff), and which credentials each needs.`,
              },
            },
          ],
        };
      }),
    );
  }

  server.registerPrompt(
    'discover',
    { title: 'Discover tools', description: 'How to find and use tools through toolsift.' },
    promptGet('discover', () => ({ messages: [{ role: 'user' as const, content: { type: 'text' as const, text: INSTRUCTIONS } }] })),
  );

  if (codeMode)
    taskPrompt(
      'code_mode',
      {
        title: 'Do a task with one program',
        description: 'Find the tools a task needs, read their TypeScript declarations, then run one program with run_code.',
      },
      (task) =>
        `Task: ${task}\n\n${CODE_MODE_INSTRUCTIONS}\n\nSteps: search_tools with signatures: true for each kind of tool the task needs; get_tool_details with detail "typescript" on the ones you will call; then one run_code whose program does the whole task and returns only the answer (not the raw tool results). If the program fails, read the error's line and fix that line.`,
    );

  if (deps.drafts) {
    type CallResult = { content: Array<{ type: 'text'; text: string }>; isError?: boolean; upstream?: string };
    registerDrafts(server, deps, scope, {
      observe: observed,
      callCatalogTool: (name, args, signal, ctx) =>
        observed('call_tool', { ctx, target: name }, async (trace) => (await callTool(deps, traced(scope, trace), name, args, signal)) as CallResult),
    });
  }

  taskPrompt(
    'find_tool',
    { title: 'Find a tool for a task', description: 'Search for the tool that does a task, check its schema, then call it.' },
    (task) =>
      `Task: ${task}\n\nUse toolsift: call search_tools with a short description of the task, pick the best result, read it with get_tool_details, then run it with call_tool. If search_tools returns a hint that nothing matches well, say so instead of guessing.`,
  );

  // tools/list within its SERVER span: the handler McpServer installed (or the drafts' over it) run as
  // it is, its answer's tool count noted. Installed only when tracing: otherwise the SDK's path alone.
  if (tracing.enabled) {
    const listTools = installedHandler(server, 'tools/list');
    server.server.setRequestHandler('tools/list', { params: listedParams }, async (params, ctx) => {
      const span = serverSpan('tools/list', ctx, { [MCP_METHOD_NAME]: 'tools/list' });
      const listing = listTools({ jsonrpc: '2.0', id: ctx.mcpReq.id, method: 'tools/list', params }, ctx).then((listed) => {
        span.set({ [RESULTS]: (listed as { tools?: unknown[] }).tools?.length });
        return listed;
      });
      return (await endWith(span, listing, noError)) as never;
    });
  }

  return server;
}

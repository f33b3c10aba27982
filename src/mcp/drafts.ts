/**
 * Draft MCP proposals, prototyped on /mcp behind MCP_DRAFTS=on (docs/mcp.md). They follow drafts
 * that change before they are final; nothing here is part of the protocol yet.
 * - SEP-2636, its revision of 2026-04-23 ("Progressive Tool Disclosure"): `tools/catalog` lists
 *   compact entries (name, summary, tags, schemaHash, annotations) of the scope's tools, a page at a
 *   time, and with `query` answers by the same search as search_tools; `tools/describe` gives full
 *   Tool definitions by name. Capability `tools.progressiveDisclosure`.
 * - SEP-2564: `filter.namePatterns` (globs) on tools/list (the meta-tools) and on tools/catalog
 *   (the catalogs' tools). Capability `tools.filtering`.
 * - tools/call by a catalog tool's address, the name tools/catalog and tools/describe give: both
 *   drafts take it to be callable as it is. It runs as call_tool does (argument check, audit, the
 *   upstream that listed it).
 * - `x_amz_bedrock_agentcore_search`: the shape of Amazon Bedrock AgentCore Gateway's search tool
 *   (`{query}` in, `{tools: [Tool]}` out), answered by search_tools' search.
 */
import { QUERY_CHARS_MAX } from '../lib/query-length.js';
import { createHash } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { firstSentence } from '../catalog/describe.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { matchesAny } from '../lib/glob.js';
import { textProblem } from '../lib/safe-text.js';
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../store/database.js';
import { BadCursor, listScopeTools, outputSchemaOf, resolveTool, SEARCH_LIMIT_MAX, searchTools, type KnownTool } from './discovery.js';
import type { McpDeps } from './server.js';
import type { DiscoveryScope } from './discovery.js';

export const AGENTCORE_SEARCH_TOOL = 'x_amz_bedrock_agentcore_search';

/** Results of tools/catalog with a query unless `limit` says otherwise (a toolsift extension), and of the AgentCore search. */
const QUERY_RESULTS = 10;
/** Names one tools/describe takes: SEP-2636's later revision asks servers to accept at least 50. */
export const DESCRIBE_MAX = 50;
/** SEP-2564's recommended bounds on patterns: per field, and each one's length. */
const PATTERNS_MAX = 100;
const PATTERN_LENGTH_MAX = 256;
/** SEP-2636: a catalog entry's summary SHOULD stay under 200 characters. */
const SUMMARY_MAX = 200;

/**
 * A meta-tool call with its log line, metrics and span (server.ts `observed`; `ctx`: the request's,
 * whose `_meta` may name the trace), an unexpected error an isError result.
 */
export type Observe = <T extends { content: unknown[]; isError?: boolean }>(
  tool: string,
  call: { ctx?: unknown },
  run: () => Promise<T & { count?: number; upstream?: string }>,
) => Promise<T>;

/** A draft method's handler, as the SDK's `setRequestHandler` with schemas calls it. */
type Handler<P, R> = (params: P, ctx: { mcpReq: { signal?: AbortSignal } }) => Promise<R>;

const text = () =>
  z.string().superRefine((value, context) => {
    const problem = textProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

/** SEP-2564's `filter`: fields a server does not know are ignored, so the object stays loose. */
const filterParam = z
  .looseObject({
    namePatterns: z
      .array(text().max(PATTERN_LENGTH_MAX, `a pattern is at most ${PATTERN_LENGTH_MAX} characters`))
      .max(PATTERNS_MAX, `at most ${PATTERNS_MAX} patterns`)
      .optional(),
  })
  .optional();

const listParams = z.looseObject({ cursor: z.string().optional(), filter: filterParam });
const catalogParams = z.looseObject({
  cursor: text().max(4_000).optional(),
  query: text().trim().min(1).max(QUERY_CHARS_MAX).optional(),
  limit: z.number().int().min(1).max(SEARCH_LIMIT_MAX).optional(),
  filter: filterParam,
});
const describeParams = z.looseObject({ names: z.array(text().min(1).max(300)).min(1, 'names must not be empty') });
const callParams = z.looseObject({ name: text().min(1).max(300), arguments: z.record(z.string(), z.unknown()).optional() });

/** A full Tool as tools/list would give it (MCP's Tool type): what tools/describe answers and schemaHash covers. */
export interface DescribedTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** SEP-2636's ToolCatalogEntry. */
export interface CatalogEntry {
  name: string;
  title?: string;
  summary: string;
  tags?: string[];
  schemaHash: string;
  annotations?: Record<string, unknown>;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function describedTool(address: string, tool: KnownTool): DescribedTool {
  const definition = isRecord(tool.definition) ? tool.definition : {};
  const outputSchema = outputSchemaOf(tool.definition);
  return {
    name: address,
    ...(typeof definition.title === 'string' ? { title: definition.title } : {}),
    description: tool.description,
    // MCP's Tool requires an object schema; a stored one that leaves out `type` is one.
    inputSchema: { type: 'object', ...(tool.inputSchema ?? { properties: {} }) },
    ...(isRecord(outputSchema) ? { outputSchema } : {}),
    ...(isRecord(definition.annotations) ? { annotations: definition.annotations } : {}),
  };
}

/** SEP-2636 §5: lowercase hex SHA-256 of the Tool's canonical JSON (keys sorted, no whitespace: RFC 8785 for these values). */
export function schemaHash(tool: DescribedTool): string {
  return createHash('sha256').update(canonicalJson(tool)).digest('hex');
}

export function catalogEntry(address: string, known: KnownTool): CatalogEntry {
  const tool = describedTool(address, known);
  const summary = firstSentence(known.description);
  return {
    name: address,
    ...(tool.title ? { title: tool.title } : {}),
    summary: summary.length > SUMMARY_MAX ? `${summary.slice(0, SUMMARY_MAX - 3)}...` : summary,
    ...(known.tags.length ? { tags: known.tags } : {}),
    schemaHash: schemaHash(tool),
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}

/**
 * A cursor of tools/catalog: the listing's own, with the filter it was made under (SEP-2564: a
 * cursor used with another filter is refused).
 */
function encodeCursor(listing: string, patterns: string[] | undefined): string {
  return Buffer.from(JSON.stringify([listing, filterDigest(patterns)]), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string, patterns: string[] | undefined): string {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  if (!Array.isArray(decoded) || typeof decoded[0] !== 'string' || typeof decoded[1] !== 'string') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'invalid cursor: pass nextCursor from the previous tools/catalog answer unchanged');
  }
  if (decoded[1] !== filterDigest(patterns))
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Filter parameters must not change between paginated requests');
  return decoded[0];
}

const filterDigest = (patterns: string[] | undefined) =>
  createHash('sha256')
    .update(JSON.stringify(patterns ?? []))
    .digest('base64url')
    .slice(0, 16);

/** The SDK's request-handler accessor (Protocol#_getRequestHandler, protected): the handler McpServer installed, to extend it. */
type StoredHandler = (request: { jsonrpc: '2.0'; id: string | number; method: string; params: Record<string, unknown> }, ctx: unknown) => Promise<unknown>;
export function installedHandler(server: McpServer, method: string): StoredHandler {
  const handler = (server.server as unknown as { _getRequestHandler(method: string): StoredHandler | undefined })._getRequestHandler(method);
  if (!handler) throw new Error(`mcp drafts: no ${method} handler to extend`);
  return handler;
}

/**
 * Adds the drafts to a server whose tools are registered (server.ts). `observe` runs a tool call
 * as the meta-tools' are run (log line, metrics); `callCatalogTool` is call_tool's path.
 */
export function registerDrafts(
  server: McpServer,
  deps: McpDeps,
  scope: DiscoveryScope,
  hooks: { observe: Observe; callCatalogTool: (name: string, args: Record<string, unknown>, signal?: AbortSignal, ctx?: unknown) => Promise<unknown> },
): void {
  /** Runs a draft method with its log line and metric; a failure is a JSON-RPC error saying what a client can act on. */
  const answered =
    <P, R>(method: string, run: Handler<P, R>): Handler<P, R> =>
    async (params, ctx) => {
      const started = performance.now();
      let outcome = 'ok';
      try {
        return await run(params, ctx);
      } catch (error) {
        outcome = 'error';
        if (error instanceof ProtocolError) throw error;
        if (error instanceof BadCursor) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
        if (isDatabaseUnavailable(error)) throw new ProtocolError(ProtocolErrorCode.InternalError, DATABASE_UNAVAILABLE_MESSAGE);
        if ((error as { code?: unknown }).code === 'not_found') throw new ProtocolError(ProtocolErrorCode.InvalidParams, (error as Error).message);
        deps.logger.warn({ err: error, method, tenant: scope.tenant, catalog: scope.catalog ?? null }, 'mcp draft failed');
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'internal error while answering; see the server log');
      } finally {
        deps.metrics?.mcpRequests.inc({ method, tool: '', outcome });
        deps.logger.info(
          { method, tenant: scope.tenant, catalog: scope.catalog ?? null, ms: Math.round((performance.now() - started) * 100) / 100, outcome },
          'mcp draft',
        );
      }
    };

  server.registerTool(
    AGENTCORE_SEARCH_TOOL,
    {
      title: 'Search tools (AgentCore-style)',
      description:
        "Find the tools that fit a task, in plain words. Returns their full definitions (name, description, inputSchema); call one with tools/call and its name, or with call_tool. The shape of Amazon Bedrock AgentCore Gateway's search tool.",
      inputSchema: z.object({ query: text().trim().min(1).max(QUERY_CHARS_MAX).describe('What you want to do, in plain words') }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (input, ctx) =>
      hooks.observe(AGENTCORE_SEARCH_TOOL, { ctx }, async () => {
        const found = await searchTools(deps, scope, { query: input.query, limit: QUERY_RESULTS, definitions: true });
        // A tool not known here while the store does not answer has no definition to give.
        const tools = found.results.flatMap((result) => (result.tool ? [describedTool(result.name, result.tool)] : []));
        return { content: [{ type: 'text' as const, text: JSON.stringify({ tools }) }], structuredContent: { tools }, count: tools.length };
      }),
  );

  server.server.registerCapabilities({
    tools: { progressiveDisclosure: true, filtering: { supported: ['namePatterns'] } } as Record<string, unknown>,
  });

  // SEP-2564 on tools/list: the meta-tools McpServer lists, those a pattern names.
  const listAll = installedHandler(server, 'tools/list');
  server.server.setRequestHandler(
    'tools/list',
    { params: listParams },
    answered('tools/list', async ({ filter, ...params }, ctx) => {
      const listed = (await listAll({ jsonrpc: '2.0', id: 0, method: 'tools/list', params }, ctx)) as { tools: { name: string }[] };
      return { ...listed, tools: listed.tools.filter((tool) => matchesAny(filter?.namePatterns, tool.name)) };
    }),
  );

  server.server.setRequestHandler(
    'tools/catalog',
    { params: catalogParams },
    answered('tools/catalog', async ({ cursor, query, limit, filter }) => {
      const patterns = filter?.namePatterns?.length ? filter.namePatterns : undefined;
      const keep = patterns ? (address: string) => matchesAny(patterns, address) : undefined;
      if (query !== undefined) {
        // The same search as search_tools; one answer, the best first (no cursor).
        const found = await searchTools(deps, scope, {
          query,
          limit: limit ?? QUERY_RESULTS,
          definitions: true,
          ...(keep ? { within: { key: JSON.stringify(patterns), keep } } : {}),
        });
        return { tools: found.results.flatMap((result) => (result.tool ? [catalogEntry(result.name, result.tool)] : [])) };
      }
      const page = await listScopeTools(deps, scope, {
        cursor: cursor === undefined ? undefined : decodeCursor(cursor, patterns),
        keep: keep && ((tool) => keep(tool.address)),
      });
      // Entries need the rows: the catalogs' indexes alone (the store not answering) do not make them.
      if (page.tools.some((tool) => !tool.row)) throw new ProtocolError(ProtocolErrorCode.InternalError, DATABASE_UNAVAILABLE_MESSAGE);
      return {
        tools: page.tools.map((tool) => catalogEntry(tool.address, tool.row!)),
        ...(page.next_cursor ? { nextCursor: encodeCursor(page.next_cursor, patterns) } : {}),
      };
    }),
  );

  server.server.setRequestHandler(
    'tools/describe',
    { params: describeParams },
    answered('tools/describe', async ({ names }) => {
      if (names.length > DESCRIBE_MAX) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `at most ${DESCRIBE_MAX} names in one tools/describe`, { maxNames: DESCRIBE_MAX });
      }
      const resolved = await Promise.all(names.map((name) => resolveTool(deps, scope, name, 'details')));
      const tools: DescribedTool[] = [];
      const unknownNames: string[] = [];
      resolved.forEach((found, index) => (found.ok ? tools.push(describedTool(names[index]!, found.tool)) : unknownNames.push(names[index]!)));
      // SEP-2636 asked -32002 first; the SDK answers -32602 for it, as the SEP's later revision and SEP-2164 do.
      if (unknownNames.length > 0) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Unknown tool names', { unknownNames });
      // In the order asked, as the draft requires.
      return { tools };
    }),
  );

  // A name tools/list does not give (a catalog tool's address) runs as call_tool would run it.
  const callListed = installedHandler(server, 'tools/call');
  let ownNames: Promise<Set<string>> | undefined;
  server.server.setRequestHandler('tools/call', { params: callParams }, async (params, ctx) => {
    ownNames ??= listAll({ jsonrpc: '2.0', id: 0, method: 'tools/list', params: {} }, ctx).then(
      (listed) => new Set((listed as { tools: { name: string }[] }).tools.map((tool) => tool.name)),
    );
    if ((await ownNames).has(params.name)) return (await callListed({ jsonrpc: '2.0', id: ctx.mcpReq.id, method: 'tools/call', params }, ctx)) as never;
    return (await hooks.callCatalogTool(params.name, params.arguments ?? {}, ctx.mcpReq.signal, ctx)) as never;
  });
}

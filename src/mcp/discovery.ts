/**
 * What the MCP meta-tools do, without the protocol: search a tenant's catalogs with the same
 * ranking as `POST /v1/catalogs/{catalog}/search`, describe tools, list names, and route a call to
 * the upstream MCP server a tool came from. `src/mcp/server.ts` wraps these as MCP tools,
 * resources and prompts.
 *
 * Addressing: at `/mcp/{catalog}` a tool is its name. At `/mcp`, which spans every catalog of the
 * tenant, results carry `catalog/name` (catalog names cannot contain '/'); a bare name is accepted
 * too when exactly one catalog has it.
 */
import * as catalogs from '../catalog/catalog-service.js';
import { LruCache } from '../lru-cache.js';
import { confidences } from '../search/confidence.js';
import { firstSentence, parameterNames } from '../catalog/describe.js';
import { searchCatalog } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import type { CatalogSummary, CatalogToolRow } from '../store/catalog-store.js';
import { getToolWithUpstream, type UpstreamRow } from '../store/upstream-store.js';
import type { UpstreamCallResult, UpstreamCaller } from '../upstream/upstream-caller.js';

export interface DiscoveryDeps {
  catalog: catalogs.CatalogDeps;
  search: RankDeps;
  upstreams: UpstreamCaller | null;
  /** Tools already resolved, with their upstream's row (toolRowCache); shared by every request of the process. */
  toolRows: ToolRowCache;
}

/** Who is asking, and over which catalogs: all of the tenant's (`/mcp`) or one (`/mcp/{catalog}`). */
export interface DiscoveryScope {
  tenant: string;
  catalog?: string;
  /** `catalog`'s row, when the caller read it for this request (the endpoint checks it exists): not read again. */
  summary?: CatalogSummary;
}

export interface BriefTool {
  /** The address to pass to get_tool_details and call_tool at this endpoint. */
  name: string;
  catalog: string;
  server: string | null;
  description: string;
  parameters: string[];
  score: number;
}

export interface SearchAnswer {
  results: BriefTool[];
  /** Set when nothing matched well, so an agent does not take loose matches for an answer. */
  hint?: string;
}

export const SEARCH_LIMIT_DEFAULT = 5;
export const SEARCH_LIMIT_MAX = 50;
export const LIST_PAGE_SIZE = 200;
/**
 * A hybrid result counts as a real match when BM25 found the query's words in it, or the model's
 * cosine is at least this (USE Lite puts unrelated short texts around 0.1-0.3).
 */
const WEAK_COSINE = 0.35;

async function scopeCatalogs(deps: DiscoveryDeps, scope: DiscoveryScope): Promise<CatalogSummary[]> {
  if (scope.catalog) return [scope.summary?.name === scope.catalog ? scope.summary : await catalogs.getCatalog(deps.catalog, { tenant: scope.tenant, name: scope.catalog })];
  return catalogs.listCatalogs(deps.catalog, scope.tenant);
}

const address = (scope: DiscoveryScope, catalog: string, name: string) => (scope.catalog ? name : `${catalog}/${name}`);

/** Where a meta-tool call's time went, ms per stage, for its log line (not part of the answer). */
export type TimeSplit = Record<string, number>;

export async function searchTools(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  input: { query: string; limit?: number; tags?: string[]; server?: string },
): Promise<SearchAnswer & { split: TimeSplit; degraded?: string }> {
  // The ranking's stages, summed over the catalogs searched (which run side by side).
  const split: TimeSplit = { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0 };
  const limit = Math.min(input.limit ?? SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX);
  const inScope = await scopeCatalogs(deps, scope);
  if (inScope.length === 0) return { results: [], hint: 'This tenant has no catalogs yet: push tools with PUT /v1/catalogs/{catalog}.', split };
  // A server filter cuts after ranking, so ask for more to still fill `limit`.
  const depth = input.server ? Math.min(limit * 5, 100) : limit;
  // Not the full hybrid ranking in some catalog searched (the embedder, or vectors still being written): for metrics and the log.
  let degraded: string | undefined;
  const ranked = await Promise.all(
    inScope.map(async (catalog) => {
      const result = await searchCatalog(deps.search, { tenant: scope.tenant, name: catalog.name }, { query: input.query, topK: depth, mode: 'hybrid', tags: input.tags }, catalog);
      for (const [stage, ms] of Object.entries(result.timings)) split[stage] = (split[stage] ?? 0) + ms;
      degraded ??= result.degraded;
      const sure = confidences(result.tools.map((tool, i) => ({ ...tool.explain, rank: i + 1 })), result.bests);
      return result.tools.map((tool, i) => ({ catalog: catalog.name, tool, confidence: sure[i] ?? 0 }));
    }),
  );
  // Catalogs are ranked apart (each its own BM25 statistics and dense weight), so their fused
  // scores do not compare; the calibrated confidence, an estimated probability of relevance, does.
  const merged = ranked
    .flat()
    .filter(({ tool }) => !input.server || tool.tool.server === input.server)
    .sort((a, b) => (inScope.length === 1 ? 0 : b.confidence - a.confidence || b.tool.score - a.tool.score))
    .slice(0, limit);
  const results = merged.map(({ catalog, tool }) => ({
    name: address(scope, catalog, tool.tool.name),
    catalog,
    server: tool.tool.server,
    description: firstSentence(tool.tool.description),
    parameters: parameterNames(tool.tool.inputSchema),
    score: Math.round(tool.score * 1e6) / 1e6,
  }));
  const strong = merged.some(({ tool }) => tool.explain.bm25 !== null || tool.explain.exact_name || (tool.explain.vector?.score ?? 0) >= WEAK_COSINE);
  const observed = { split, ...(degraded ? { degraded } : {}) };
  if (results.length === 0) return { results, hint: `No tool matches "${input.query}"${input.server ? ` on server "${input.server}"` : ''}. Try other words, or list_tools to browse.`, ...observed };
  if (!strong) return { results, hint: 'No tool shares the query\'s words and none is close in meaning: these are loose matches, probably not what you need.', ...observed };
  return { results, ...observed };
}

/** A tool found by its address at this endpoint (with its upstream's row), or why not. */
type Resolved = { ok: true; catalog: string; tool: ToolWithUpstream } | { ok: false; error: string };
type ToolWithUpstream = CatalogToolRow & { upstream: UpstreamRow | null };

/**
 * A catalog's tools with their upstream's row, by catalog id, revision, upstream revision and name
 * (null: no such tool in that revision). Every request reads its catalogs' rows anyway, so a key is
 * current as soon as a write on any replica commits: a hit saves call_tool and get_tool_details
 * their one statement. Bounded by entries and by the rows' JSON size.
 */
export type ToolRowCache = LruCache<string, ToolWithUpstream | null>;

const TOOL_ROWS_MAX = 10_000;
const TOOL_ROW_BYTES_MAX = 32 * 1024 * 1024;

export const toolRowCache = (): ToolRowCache =>
  new LruCache(TOOL_ROWS_MAX, { max: TOOL_ROW_BYTES_MAX, weigh: (row) => (row === null ? 64 : 2 * JSON.stringify(row).length) });

export async function resolveTool(deps: DiscoveryDeps, scope: DiscoveryScope, name: string): Promise<Resolved> {
  const inScope = await scopeCatalogs(deps, scope);
  const slash = name.indexOf('/');
  if (!scope.catalog && slash > 0) {
    const prefixed = inScope.find((catalog) => catalog.name === name.slice(0, slash));
    if (prefixed) {
      const found = await findTool(deps, scope.tenant, prefixed, name.slice(slash + 1));
      if (found) return { ok: true, catalog: prefixed.name, tool: found };
    }
  }
  const hits = (
    await Promise.all(
      inScope.map(async (catalog) => {
        const found = await findTool(deps, scope.tenant, catalog, name);
        return found ? [{ catalog: catalog.name, tool: found }] : [];
      }),
    )
  ).flat();
  if (hits.length === 1) return { ok: true, ...hits[0]! };
  if (hits.length > 1) return { ok: false, error: `"${name}" is in several catalogs (${hits.map((hit) => hit.catalog).join(', ')}): use catalog/name` };
  return { ok: false, error: `unknown tool "${name}"${scope.catalog ? ` in catalog "${scope.catalog}"` : ''}: search_tools finds tools, list_tools lists names` };
}

/**
 * At most one query: the catalog's row was read by the caller's scope. The upstream's row comes
 * with the tool, so call_tool forwards after one statement, not two, and none on a cache hit.
 */
async function findTool(deps: DiscoveryDeps, tenant: string, catalog: CatalogSummary, name: string): Promise<ToolWithUpstream | undefined> {
  const key = `${catalog.id}\0${catalog.revision}\0${catalog.upstreamRevision}\0${name}`;
  const cached = deps.toolRows.get(key);
  if (cached !== undefined) return cached ?? undefined;
  const found = await getToolWithUpstream(deps.catalog.db, tenant, catalog.name, name);
  deps.toolRows.set(key, found ?? null);
  return found;
}

export type ToolDetail =
  | { name: string; found: true; catalog: string; server: string | null; description: string; parameters?: string[]; inputSchema?: Record<string, unknown> | null }
  | { name: string; found: false; error: string };

export async function toolDetails(deps: DiscoveryDeps, scope: DiscoveryScope, names: string[], detail: 'brief' | 'full'): Promise<ToolDetail[]> {
  return Promise.all(
    names.map(async (name): Promise<ToolDetail> => {
      const resolved = await resolveTool(deps, scope, name);
      if (!resolved.ok) return { name, found: false, error: resolved.error };
      const { tool, catalog } = resolved;
      return detail === 'brief'
        ? { name, found: true, catalog, server: tool.server, description: firstSentence(tool.description), parameters: parameterNames(tool.inputSchema) }
        : { name, found: true, catalog, server: tool.server, description: tool.description, inputSchema: tool.inputSchema };
    }),
  );
}

/** Names in name order; the cursor is opaque to clients (base64url of where the last page ended). */
export async function listToolNames(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  input: { cursor?: string; server?: string },
): Promise<{ names: string[]; next_cursor?: string }> {
  const inScope = (await scopeCatalogs(deps, scope)).map((catalog) => catalog.name).sort();
  const position = input.cursor ? decodeListCursor(input.cursor) : { catalog: inScope[0] ?? '', after: undefined };
  const names: string[] = [];
  for (const catalog of inScope.filter((name) => name >= position.catalog)) {
    let after = catalog === position.catalog ? position.after : undefined;
    for (;;) {
      const page = await catalogs.listTools(deps.catalog, { tenant: scope.tenant, name: catalog }, { limit: LIST_PAGE_SIZE, after });
      for (const tool of page.tools) {
        if (input.server && tool.server !== input.server) continue;
        names.push(address(scope, catalog, tool.name));
        if (names.length === LIST_PAGE_SIZE) return { names, next_cursor: encodeListCursor(catalog, tool.name) };
      }
      if (!page.nextAfter) break;
      after = page.nextAfter;
    }
  }
  return { names };
}

function encodeListCursor(catalog: string, after: string): string {
  return Buffer.from(JSON.stringify([catalog, after]), 'utf8').toString('base64url');
}

export class BadCursor extends Error {}

function decodeListCursor(cursor: string): { catalog: string; after: string } {
  try {
    const [catalog, after] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof catalog === 'string' && typeof after === 'string') return { catalog, after };
  } catch {
    // reported below
  }
  throw new BadCursor('invalid cursor: pass next_cursor from the previous list_tools answer unchanged');
}

/** Forwards a call to the tool's upstream; every failure is a tool result with isError, never a throw. */
export async function callTool(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<UpstreamCallResult & { upstream?: string; split?: TimeSplit }> {
  const started = performance.now();
  const resolved = await resolveTool(deps, scope, name);
  const lookupMs = performance.now() - started;
  if (!resolved.ok) return errorResult(resolved.error);
  const { tool, catalog } = resolved;
  const noUpstream = () =>
    errorResult(
      `"${name}" has no upstream MCP server registered in catalog "${catalog}"${tool.server ? ` (its server is "${tool.server}")` : ''}: ` +
        'toolsift knows its definition but cannot run it. Register the server with PUT /v1/catalogs/{catalog}/upstreams/{name}, or call the tool where it lives.',
    );
  if (!tool.server || !deps.upstreams) return noUpstream();
  if (!tool.upstream) return noUpstream();
  const called = performance.now();
  const result = await deps.upstreams.callTool({ tenant: scope.tenant, catalog, server: tool.server, tool: tool.name, arguments: args, signal, upstream: tool.upstream });
  if (result.isError && result.unknownUpstream) return noUpstream();
  const { unknownUpstream: _unknown, ...answer } = result;
  return { ...answer, upstream: tool.server, split: { lookup_ms: lookupMs, upstream_ms: performance.now() - called } };
}

export function errorResult(message: string): UpstreamCallResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** One line a tool, name and first sentence cut at 120 characters: the catalog index resource. */
export async function catalogIndex(deps: DiscoveryDeps, tenant: string, catalog: string): Promise<string> {
  const lines: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await catalogs.listTools(deps.catalog, { tenant, name: catalog }, { limit: 1000, after });
    for (const tool of page.tools) {
      const sentence = firstSentence(tool.description);
      lines.push(`${tool.name}: ${sentence.length > 120 ? `${sentence.slice(0, 117)}...` : sentence}`);
    }
    if (!page.nextAfter) return lines.join('\n');
    after = page.nextAfter;
  }
}

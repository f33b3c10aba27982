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
import { traceId, type TraceContext } from '../lib/trace-context.js';
import { argumentShape, type AuditLog } from '../audit.js';
import * as catalogs from '../catalog/catalog-service.js';
import { checkArguments, type ArgumentChecks } from '../catalog/tool-arguments.js';
import { LruCache } from '../lib/lru-cache.js';
import { firstSentence, parameterNames } from '../catalog/describe.js';
import { toolDeclaration, toolSignature } from '../catalog/tool-types.js';
import { firstNames, rankCatalog, storeOrMemory, type CatalogRanking } from '../search/catalog-search.js';
import type { RankDeps } from '../search/hybrid-search.js';
import type { CatalogSummary, CatalogToolRow } from '../store/catalog-store.js';
import { getToolWithUpstream, upstreamToolNames, type UpstreamRow } from '../store/upstream-store.js';
import type { UpstreamCallResult, UpstreamCaller } from '../upstream/upstream-caller.js';
import type { UpstreamManagement } from '../upstream/status.js';
import { upstreamState, type UpstreamCredentials } from '../upstream/upstreams.js';
import { ANONYMOUS_CALLER, recordFeedback, STRENGTH } from '../search/feedback.js';
import type { Logger } from '../logger.js';
import { openAccess, type Access } from '../trust/policy.js';
import { describeFindings, screenResult, type ResultScanSettings } from './result-scan.js';
import { endWith, NO_TRACING, upstreamCallAttributes, upstreamCallError, type Tracing } from '../tracing/tracing.js';

export interface DiscoveryDeps {
  catalog: catalogs.CatalogDeps;
  search: RankDeps;
  upstreams: UpstreamCaller | null;
  /** Tools already resolved, with their upstream's row (toolRowCache); shared by every request of the process. */
  toolRows: ToolRowCache;
  /** Each tenant's catalogs as last listed here (catalogListCache): what `/mcp` spans while the store does not answer. */
  catalogLists: CatalogListCache;
  /** Upstreams' rows as read with a tool (upstreamRowCache): where call_tool sends any of their tools while the store does not answer. */
  upstreamRows: UpstreamRowCache;
  /** Compiled input-schema checks by tool hash (catalog/tool-arguments.ts): a call's arguments are checked before they are sent. */
  argumentChecks: ArgumentChecks;
  /** Where each proxied call is recorded (src/audit.ts); absent in some tests. */
  audit?: AuditLog;
  /** Where a use that could not be learned from is logged. */
  logger?: Logger;
  /** The upstream service for management (mcp/manage.ts) and credential names; absent: neither. */
  management?: UpstreamManagement | null;
  /** What a proxied call's result is screened for before the agent reads it (mcp/result-scan.ts); absent: not screened. */
  resultScan?: ResultScanSettings;
  /** Where each upstream call's CLIENT span goes (tracing/tracing.ts); absent: none, and the caller's trace context is forwarded as it came. */
  tracing?: Tracing;
}

/** Who is asking, and over which catalogs: all of the tenant's (`/mcp`) or one (`/mcp/{catalog}`). */
export interface DiscoveryScope {
  tenant: string;
  catalog?: string;
  /** `catalog`'s row, when the caller read it for this request (the endpoint checks it exists): not read again. */
  summary?: CatalogSummary;
  /** Who calls (a digest of the API key): a call is matched with this caller's searches (learnFromUse). */
  caller?: string;
  /** Calls come from a run_code program: only catalogs with code mode on are in scope. */
  fromProgram?: boolean;
  /** The presenting key's policy (trust/policy.ts): its catalogs, the tools it sees, whether it may call. Absent: everything. */
  access?: Access;
  /** Takes one more request from the key's rate limit (http/rate-limit.ts): each tool call of a run_code program is one. Absent: no limit. */
  chargeKey?: () => Promise<{ ok: boolean; message: string }>;
  /**
   * The caller's W3C trace context (lib/trace-context.ts), or with tracing on the span the call runs
   * in: the parent of its upstream calls' spans, forwarded with them, its trace id in their audit lines.
   */
  trace?: TraceContext;
}

export interface BriefTool {
  /** The address to pass to get_tool_details and call_tool at this endpoint. */
  name: string;
  catalog: string;
  server: string | null;
  description: string;
  parameters: string[];
  score: number;
  /** How a run_code program calls it (asked with `signatures`). */
  signature?: string;
  /** Its definition (asked with `definitions`): absent for a tool not known here while the store does not answer. */
  tool?: KnownTool;
}

/** What a tool's row says of it: the text and schemas its full definition is made of. */
export type KnownTool = Pick<CatalogToolRow, 'description' | 'inputSchema' | 'tags' | 'definition'>;

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

/*
 * While the store does not answer (search/catalog-search.ts's `storeOrMemory`: unavailable, or its
 * breaker open after such a failure), the meta-tools work from what this process holds: the
 * catalogs' rows and each tenant's list as last read here, the catalogs' indexes for search_tools,
 * the tools already resolved (toolRows) for get_tool_details and call_tool, the tools searches
 * answered with (search/seen-tools.ts) for descriptions and get_tool_details, and the upstreams'
 * rows read with a tool (upstreamRows), so call_tool reaches any tool the catalog's index names on
 * such an upstream; list_tools pages through the indexes' names. What it does not hold is the
 * store's error, as before.
 */

export type CatalogListCache = LruCache<string, CatalogSummary[]>;

const CATALOG_LISTS_MAX = 4096;
const CATALOG_LIST_BYTES_MAX = 16 * 1024 * 1024;

export const catalogListCache = (): CatalogListCache =>
  new LruCache(CATALOG_LISTS_MAX, { max: CATALOG_LIST_BYTES_MAX, weigh: (rows) => 64 + 2 * JSON.stringify(rows).length });

/** The catalog's row (404 when there is none), or the row as last read here while the store does not answer. */
export async function readScopeCatalog(deps: DiscoveryDeps, tenant: string, name: string): Promise<CatalogSummary> {
  const ref = { tenant, name };
  return storeOrMemory(
    deps.search,
    ref,
    async () => {
      const row = await catalogs.getCatalog(deps.catalog, ref);
      deps.search.catalogIndexes?.seen(tenant, row);
      return row;
    },
    async () => deps.search.catalogIndexes?.lastRow(tenant, name),
  );
}

async function scopeCatalogs(deps: DiscoveryDeps, scope: DiscoveryScope): Promise<CatalogSummary[]> {
  const listed = await scopeCatalogsListed(deps, scope);
  const { access } = scope;
  return listed.filter((catalog) => (!scope.fromProgram || catalog.codeMode !== false) && (!access || access.seesCatalog(catalog.name)));
}

/** Whether the scope's key sees the tool (every tool, without a policy). */
const seesTool = (scope: DiscoveryScope, catalog: string, tool: { name: string; server: string | null }) =>
  !scope.access?.limitsTools || scope.access.seesTool({ catalog, name: tool.name, server: tool.server });

async function scopeCatalogsListed(deps: DiscoveryDeps, scope: DiscoveryScope): Promise<CatalogSummary[]> {
  if (scope.catalog) return [scope.summary?.name === scope.catalog ? scope.summary : await readScopeCatalog(deps, scope.tenant, scope.catalog)];
  // The breaker's probe reads a row of no catalog: any answer is the store answering.
  return storeOrMemory(
    deps.search,
    { tenant: scope.tenant, name: '' },
    async () => {
      const listed = await catalogs.listCatalogs(deps.catalog, scope.tenant);
      deps.catalogLists.set(scope.tenant, listed);
      return listed;
    },
    async () => deps.catalogLists.get(scope.tenant),
  );
}

const address = (scope: DiscoveryScope, catalog: string, name: string) => (scope.catalog ? name : `${catalog}/${name}`);

/** Where a meta-tool call's time went, ms per stage, for its log line (not part of the answer). */
export type TimeSplit = Record<string, number>;

/** One catalog's ranked tools as search_tools shows them, with what merging and the hint read. */
interface RankedTool {
  catalog: string;
  name: string;
  server: string | null;
  description: string;
  parameters: string[];
  score: number;
  /** Calibrated (ranking/confidence.ts): comparable across catalogs, unlike the fused score. */
  confidence: number;
  /** BM25 found the query's words in it, it was named exactly, or the model finds it close. */
  strong: boolean;
  /** What a signature is written from (null: not known here, the store not answering). */
  schemas: { input: unknown; output: unknown } | null;
  /** Its row's text and schemas (undefined: not known here, the store not answering). */
  known?: KnownTool;
  /** Its content hash, when known: the same tool in several catalogs is one result. */
  hash?: string;
  /** Whether call_tool can run it (an upstream synced it); undefined: not known here. */
  callable?: boolean;
}

/**
 * The same tool (same content) found in several catalogs, as one result: the best placed, or a
 * callable twin in its place (a pushed copy's call_tool could only fail). Order otherwise kept.
 */
export function collapseSameTools<T extends { hash?: string; callable?: boolean }>(tools: readonly T[]): T[] {
  const at = new Map<string, number>();
  const kept: T[] = [];
  for (const tool of tools) {
    const place = tool.hash ? at.get(tool.hash) : undefined;
    if (place === undefined) {
      if (tool.hash) at.set(tool.hash, kept.length);
      kept.push(tool);
    } else if (tool.callable && !kept[place]!.callable) kept[place] = tool;
  }
  return kept;
}

/** A tool definition's outputSchema (MCP tools may declare one), else undefined. */
export function outputSchemaOf(definition: unknown): unknown {
  if (!definition || typeof definition !== 'object') return undefined;
  const schema = (definition as { outputSchema?: unknown }).outputSchema;
  return schema && typeof schema === 'object' && !Array.isArray(schema) ? schema : undefined;
}

interface CatalogAnswer {
  tools: RankedTool[];
  split: TimeSplit;
  /** Not the full hybrid ranking (the embedder, vectors still being written, the store): for metrics, the log and the hint. */
  degraded?: string;
  /** A query in another language than English (ranking/language.ts): for metrics and the hint. */
  language?: { tag: string; understood: boolean };
}

export async function searchTools(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  input: {
    query: string;
    limit?: number;
    tags?: string[];
    server?: string;
    signatures?: boolean;
    definitions?: boolean;
    /** Only tools whose address here `keep` accepts (SEP-2564's namePatterns); `key` tells one filter from another. */
    within?: { key: string; keep: (address: string) => boolean };
  },
): Promise<SearchAnswer & { split: TimeSplit; degraded?: string; language?: { tag: string; understood: boolean } }> {
  // The ranking's stages, summed over the catalogs searched (which run side by side).
  const split: TimeSplit = { query_embedding_ms: 0, retrieval_ms: 0, fusion_ms: 0 };
  const limit = Math.min(input.limit ?? SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX);
  const inScope = await scopeCatalogs(deps, scope);
  if (inScope.length === 0) return { results: [], hint: 'This tenant has no catalogs yet: push tools with PUT /v1/catalogs/{catalog}.', split };
  // A server or address filter narrows what the ranking sees, as a key's own limits do: the tools
  // outside it leave before the cut, however deep they would have pushed the others.
  let access = scope.access;
  const { server, within } = input;
  if (server !== undefined) access = (access ?? openAccess(scope.tenant)).narrowed(`server:${server}`, (tool) => tool.server === server);
  if (within) access = (access ?? openAccess(scope.tenant)).narrowed(`address:${within.key}`, (tool) => within.keep(address(scope, tool.catalog, tool.name)));
  const ranked = await Promise.all(
    inScope.map(async (catalog) => {
      const ranking = await rankCatalog(
        deps.search,
        { tenant: scope.tenant, name: catalog.name },
        { query: input.query, topK: limit, mode: 'hybrid', tags: input.tags, ...(access ? { access } : {}) },
        // At /mcp a catalog this process never read adds nothing while the store is down; the others answer.
        { read: catalog, orNothing: !scope.catalog },
      );
      return catalogAnswer(deps, catalog, ranking);
    }),
  );
  let degraded: string | undefined;
  for (const ranking of ranked) {
    for (const [stage, ms] of Object.entries(ranking.split)) split[stage] = (split[stage] ?? 0) + ms;
    // The store's failure first: it is the one the hint tells.
    if (ranking.degraded === 'store_error' || !degraded) degraded = ranking.degraded ?? degraded;
  }
  // Catalogs are ranked apart (each its own BM25 statistics and dense weight), so their fused
  // scores do not compare; the calibrated confidence, an estimated probability of relevance, does.
  const merged = collapseSameTools(
    ranked.flatMap((ranking) => ranking.tools).sort((a, b) => (inScope.length === 1 ? 0 : b.confidence - a.confidence || b.score - a.score)),
  ).slice(0, limit);
  rememberSearch(deps, scope, input.query, merged);
  const results = merged.map((tool) => {
    const name = address(scope, tool.catalog, tool.name);
    return {
      name,
      catalog: tool.catalog,
      server: tool.server,
      description: tool.description,
      parameters: tool.parameters,
      score: Math.round(tool.score * 1e6) / 1e6,
      ...(input.signatures && tool.schemas
        ? { signature: toolSignature({ address: name, description: tool.description, inputSchema: tool.schemas.input, outputSchema: tool.schemas.output }) }
        : {}),
      ...(input.definitions && tool.known ? { tool: tool.known } : {}),
    };
  });
  // Every catalog reads the same query with the same model: any one of them tells its language.
  const language = ranked.find((ranking) => ranking.language)?.language;
  const observed = { split, ...(degraded ? { degraded } : {}), ...(language ? { language } : {}) };
  if (degraded === 'store_error') {
    return {
      results,
      hint:
        "toolsift's store is not answering: these are ranked from this server's memory of the catalog, with descriptions only of tools found or looked up here before. " +
        'get_tool_details works for tools found or looked up here before, call_tool for tools of upstreams called or looked up here before; try again shortly for the rest.',
      ...observed,
    };
  }
  if (language && !language.understood)
    return {
      results,
      hint:
        `The query seems to be in another language than English (${language.tag}), which this server's embedding model does not read: ` +
        (results.length === 0
          ? 'no tool shares a word with it. Search again in English.'
          : 'these tools were matched by the words they share with the query (names, numbers) and may well be wrong. Search again in English.'),
      ...observed,
    };
  if (results.length === 0)
    return {
      results,
      hint: `No tool matches "${input.query}"${input.server ? ` on server "${input.server}"` : ''}. Try other words, or list_tools to browse.`,
      ...observed,
    };
  if (!merged.some((tool) => tool.strong))
    return {
      results,
      hint: "No tool shares the query's words and none is close in meaning: these are loose matches, probably not what you need.",
      ...observed,
    };
  return { results, ...observed };
}

/**
 * One catalog's ranked tools as search_tools shows them. From the store, the rows it read; from
 * memory (the catalog as last seen here), descriptions and parameters of tools resolved here before
 * (toolRows) or found by a search here before (search/seen-tools.ts): the index holds terms, not text.
 */
function catalogAnswer(deps: DiscoveryDeps, catalog: CatalogSummary, ranking: CatalogRanking): CatalogAnswer {
  if (ranking.from === 'store') {
    const { result } = ranking;
    return {
      tools: ranking.tools.map(({ row, score, confidence }, i) => {
        const { explain } = result.tools[i]!;
        return {
          catalog: catalog.name,
          name: row.name,
          server: row.server,
          description: firstSentence(row.description),
          parameters: parameterNames(row.inputSchema),
          score,
          confidence,
          strong: explain.bm25 !== null || explain.exact_name || (explain.vector?.score ?? 0) >= WEAK_COSINE,
          schemas: { input: row.inputSchema, output: outputSchemaOf(row.definition) },
          hash: row.hash,
          callable: row.upstream !== null,
          known: row,
        };
      }),
      split: result.timings,
      ...(result.degraded ? { degraded: result.degraded } : {}),
      ...(result.language ? { language: result.language } : {}),
    };
  }
  const { index, ranked } = ranking;
  return {
    tools: ranking.tools.map(({ name, score, confidence }) => {
      const known = deps.toolRows.get(toolRowKey(catalog, name)) ?? deps.search.seenTools?.get(catalog.id, name);
      return {
        catalog: catalog.name,
        name,
        server: known?.server ?? index?.servers.serverOf.get(name) ?? null,
        description: known ? firstSentence(known.description) : '',
        parameters: known ? parameterNames(known.inputSchema) : [],
        score,
        confidence,
        strong: true,
        schemas: known ? { input: known.inputSchema, output: outputSchemaOf(known.definition) } : null,
        ...(known ? { known, ...(known.hash ? { hash: known.hash } : {}), callable: known.upstream !== null } : {}),
      };
    }),
    split: Object.fromEntries(Object.entries(ranked.timings).filter((entry): entry is [string, number] => entry[1] !== undefined)),
    degraded: 'store_error',
    ...(ranked.language ? { language: ranked.language } : {}),
  };
}

/** A tool found by its address at this endpoint (with its upstream's row), or why not. */
type Resolved = { ok: true; catalog: string; summary: CatalogSummary; tool: ToolWithUpstream } | { ok: false; error: string };
/** A tool's row with the row of the upstream that synced it (null: pushed over REST). */
type ToolWithUpstream = Omit<CatalogToolRow, 'upstream'> & { upstream: UpstreamRow | null };

/**
 * A catalog's tools with their upstream's row, by catalog id, revision, upstream revision and name
 * (null: no such tool in that revision). Every request reads its catalogs' rows anyway, so a key is
 * current as soon as a write on any replica commits: a hit saves call_tool and get_tool_details
 * their one statement. Bounded by entries and by the rows' JSON size.
 */
export type ToolRowCache = LruCache<string, ToolWithUpstream | null>;

const TOOL_ROWS_MAX = 10_000;
const TOOL_ROW_BYTES_MAX = 32 * 1024 * 1024;

const toolRowKey = (catalog: CatalogSummary, name: string) => `${catalog.id}\0${catalog.revision}\0${catalog.upstreamRevision}\0${name}`;

export const toolRowCache = (): ToolRowCache =>
  new LruCache(TOOL_ROWS_MAX, { max: TOOL_ROW_BYTES_MAX, weigh: (row) => (row === null ? 64 : 2 * JSON.stringify(row).length) });

/**
 * An upstream's row by catalog id, upstream revision and name, with the names of the tools it
 * synced into the catalog (as of `revision`): while the store does not answer, call_tool reaches a
 * tool the catalog's index names only when that upstream listed it (a pushed tool may claim any server).
 */
export type UpstreamRowCache = LruCache<string, { row: UpstreamRow; revision: number; names: ReadonlySet<string> }>;

const UPSTREAM_ROWS_MAX = 4096;

export const upstreamRowCache = (): UpstreamRowCache =>
  new LruCache(UPSTREAM_ROWS_MAX, {
    max: UPSTREAM_ROW_BYTES_MAX,
    weigh: (entry) => 512 + [...entry.names].reduce((bytes, name) => bytes + 2 * name.length + 16, 0),
  });

const UPSTREAM_ROW_BYTES_MAX = 16 * 1024 * 1024;

const upstreamRowKey = (catalog: CatalogSummary, server: string) => `${catalog.id}\0${catalog.upstreamRevision}\0${server}`;

/** What a tool is resolved for: its text (get_tool_details), or its upstream (call_tool). */
type Purpose = 'details' | 'call';

export async function resolveTool(deps: DiscoveryDeps, scope: DiscoveryScope, name: string, purpose: Purpose): Promise<Resolved> {
  const inScope = await scopeCatalogs(deps, scope);
  const slash = name.indexOf('/');
  if (!scope.catalog && slash > 0) {
    const prefixed = inScope.find((catalog) => catalog.name === name.slice(0, slash));
    if (prefixed) {
      const found = await findVisibleTool(deps, scope, prefixed, name.slice(slash + 1), purpose);
      if (found) return { ok: true, catalog: prefixed.name, summary: prefixed, tool: found };
    }
  }
  const hits = (
    await Promise.all(
      inScope.map(async (catalog) => {
        const found = await findVisibleTool(deps, scope, catalog, name, purpose);
        return found ? [{ catalog: catalog.name, summary: catalog, tool: found }] : [];
      }),
    )
  ).flat();
  if (hits.length === 1) return { ok: true, ...hits[0]! };
  if (hits.length > 1) return { ok: false, error: `"${name}" is in several catalogs (${hits.map((hit) => hit.catalog).join(', ')}): use catalog/name` };
  return {
    ok: false,
    error: `unknown tool "${name}"${scope.catalog ? ` in catalog "${scope.catalog}"` : ''}: search_tools finds tools, list_tools lists names${
      scope.fromProgram ? ' (a program reaches only catalogs with code mode on)' : ''
    }`,
  };
}

/** `findTool`, a tool the scope's key does not see being absent (its refusal recorded). */
async function findVisibleTool(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  catalog: CatalogSummary,
  name: string,
  purpose: Purpose,
): Promise<ToolWithUpstream | undefined> {
  const found = await findTool(deps, scope.tenant, catalog, name, purpose);
  if (!found || seesTool(scope, catalog.name, found)) return found;
  scope.access!.hidden('see_tool', { catalog: catalog.name, tool: name });
  return undefined;
}

/**
 * At most one query: the catalog's row was read by the caller's scope. The upstream's row comes
 * with the tool, so call_tool forwards after one statement, not two, and none on a cache hit.
 * While the store does not answer, what this process holds (`rememberedTool`), else the store's error.
 */
async function findTool(deps: DiscoveryDeps, tenant: string, catalog: CatalogSummary, name: string, purpose: Purpose): Promise<ToolWithUpstream | undefined> {
  const key = toolRowKey(catalog, name);
  const cached = deps.toolRows.get(key);
  if (cached !== undefined) return cached ?? undefined;
  const { tool } = await storeOrMemory(
    deps.search,
    { tenant, name: catalog.name },
    async () => {
      const found = await getToolWithUpstream(deps.catalog.db, tenant, catalog.name, name);
      deps.toolRows.set(key, found ?? null);
      if (found?.upstream) {
        const key = upstreamRowKey(catalog, found.upstream.name);
        if (deps.upstreamRows.get(key)?.revision !== catalog.revision) {
          const names = new Set(await upstreamToolNames(deps.catalog.db, catalog.id, found.upstream.name));
          deps.upstreamRows.set(key, { row: found.upstream, revision: catalog.revision, names });
        }
      }
      return { tool: found };
    },
    async () => rememberedTool(deps, tenant, catalog, name, purpose),
  );
  return tool;
}

/**
 * A tool as this process last saw it, for `purpose`, while the store does not answer; undefined
 * (the store's error) when it does not hold enough. get_tool_details needs the tool's row as a
 * search here answered with it. call_tool needs its upstream, from that row or the catalog's index,
 * and that upstream's row as read here with any of its tools, whose names must include this one (a
 * pushed tool is answered as ever: no upstream to run it).
 */
function rememberedTool(deps: DiscoveryDeps, tenant: string, catalog: CatalogSummary, name: string, purpose: Purpose): { tool: ToolWithUpstream } | undefined {
  const seen = deps.search.seenTools?.get(catalog.id, name);
  if (purpose === 'details') return seen ? { tool: { ...seen, upstream: null } } : undefined;
  if (seen && seen.upstream === null) return { tool: { ...seen, upstream: null } };
  const index = deps.search.catalogIndexes?.lastSeen(tenant, catalog.name)?.index;
  const server = seen ? seen.upstream : index?.bm25.indexOf(name) === undefined ? undefined : index.servers.serverOf.get(name);
  if (!server) return seen || index?.bm25.indexOf(name) !== undefined ? { tool: { ...(seen ?? placeholderRow(name, null)), upstream: null } } : undefined;
  const upstream = deps.upstreamRows.get(upstreamRowKey(catalog, server));
  // Only a tool the upstream itself synced goes to it: a pushed tool may name any server.
  if (!upstream?.names.has(name)) return undefined;
  return { tool: { ...(seen ?? placeholderRow(name, server)), upstream: upstream.row } };
}

/** A tool known only by its name and server (from the catalog's index): enough to route a call. */
const placeholderRow = (name: string, server: string | null): Omit<CatalogToolRow, 'upstream'> => ({
  name,
  hash: '',
  description: '',
  inputSchema: null,
  tags: [],
  server,
  definition: null,
  tokens: { anthropic: null, openai: null, as_sent: null },
});

export type ToolDetail =
  | {
      name: string;
      found: true;
      catalog: string;
      server: string | null;
      description: string;
      parameters?: string[];
      inputSchema?: Record<string, unknown> | null;
      /** detail "typescript": the tool as a declaration a run_code program is written against. */
      declaration?: string;
      /** For a key that may manage: the names of the credentials the tool's upstream is given. */
      credentials?: UpstreamCredentials;
    }
  | { name: string; found: false; error: string };

export async function toolDetails(deps: DiscoveryDeps, scope: DiscoveryScope, names: string[], detail: 'brief' | 'full' | 'typescript'): Promise<ToolDetail[]> {
  return Promise.all(
    names.map(async (name): Promise<ToolDetail> => {
      const resolved = await resolveTool(deps, scope, name, 'details');
      if (!resolved.ok) return { name, found: false, error: resolved.error };
      const { tool, catalog } = resolved;
      learnFromUse(deps, scope, catalog, tool.name, STRENGTH.details);
      const credentials = credentialsOf(deps, scope, catalog, tool.upstream);
      const found = { name, found: true as const, catalog, server: tool.server, ...(credentials ? { credentials } : {}) };
      if (detail === 'typescript') {
        const declaration = toolDeclaration({
          address: address(scope, catalog, tool.name),
          description: tool.description,
          inputSchema: tool.inputSchema,
          outputSchema: outputSchemaOf(tool.definition),
        });
        return { ...found, description: firstSentence(tool.description), declaration };
      }
      return detail === 'brief'
        ? { ...found, description: firstSentence(tool.description), parameters: parameterNames(tool.inputSchema) }
        : { ...found, description: tool.description, inputSchema: tool.inputSchema };
    }),
  );
}

/** For a key given `manage`, the names of the credentials a synced tool's upstream is given (a pushed tool has none to name). */
function credentialsOf(deps: DiscoveryDeps, scope: DiscoveryScope, catalog: string, upstream: UpstreamRow | null): UpstreamCredentials | undefined {
  if (!upstream || !deps.management || scope.access?.policy.manage !== true) return undefined;
  return deps.management.credentialNames({ tenant: scope.tenant, catalog, ...upstreamState(upstream) });
}

/** Names in name order; the cursor is opaque to clients (base64url of where the last page ended). */
export async function listToolNames(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  input: { cursor?: string; server?: string },
): Promise<{ names: string[]; next_cursor?: string }> {
  const page = await listScopeTools(deps, scope, { cursor: input.cursor, keep: input.server ? (tool) => tool.server === input.server : undefined });
  return { names: page.tools.map((tool) => tool.address), ...(page.next_cursor ? { next_cursor: page.next_cursor } : {}) };
}

/** A tool as a listing gives it: its address here, and its row (absent when only the catalog's index as last seen here answered). */
export interface ListedTool {
  address: string;
  catalog: string;
  name: string;
  server: string | null;
  row?: CatalogToolRow;
}

/**
 * The scope's tools in catalog and name order, a page at a time (`LIST_PAGE_SIZE`), those `keep`
 * accepts; the cursor is opaque to clients (base64url of where the last page ended). While the
 * store does not answer, pages of the catalogs' indexes as last seen here, without rows.
 */
export async function listScopeTools(
  deps: DiscoveryDeps,
  scope: DiscoveryScope,
  input: { cursor?: string; keep?: (tool: ListedTool) => boolean },
): Promise<{ tools: ListedTool[]; next_cursor?: string }> {
  const inScope = (await scopeCatalogs(deps, scope)).map((catalog) => catalog.name).sort();
  const position = input.cursor ? decodeListCursor(input.cursor) : { catalog: inScope[0] ?? '', after: undefined };
  const tools: ListedTool[] = [];
  for (const catalog of inScope.filter((name) => name >= position.catalog)) {
    let after = catalog === position.catalog ? position.after : undefined;
    for (;;) {
      const ref = { tenant: scope.tenant, name: catalog };
      const page = await storeOrMemory<{ tools: Array<CatalogToolRow | { name: string; server: string | null }>; nextAfter?: string }>(
        deps.search,
        ref,
        () => catalogs.listTools(deps.catalog, ref, { limit: LIST_PAGE_SIZE, after }),
        async () => rememberedPage(deps, ref, { limit: LIST_PAGE_SIZE, after }),
      );
      for (const tool of page.tools) {
        const listed: ListedTool = {
          address: address(scope, catalog, tool.name),
          catalog,
          name: tool.name,
          server: tool.server,
          ...('hash' in tool ? { row: tool } : {}),
        };
        if ((input.keep && !input.keep(listed)) || !seesTool(scope, catalog, tool)) continue;
        tools.push(listed);
        if (tools.length === LIST_PAGE_SIZE) return { tools, next_cursor: encodeListCursor(catalog, tool.name) };
      }
      if (!page.nextAfter) break;
      after = page.nextAfter;
    }
  }
  return { tools };
}

/**
 * A page of a catalog's names as its index last seen here holds them (perhaps a revision behind the
 * store's), in the store's order, while the store does not answer; undefined (the store's error)
 * when this process holds no index of it: a list must not leave out a catalog.
 */
function rememberedPage(
  deps: DiscoveryDeps,
  ref: { tenant: string; name: string },
  page: { limit: number; after?: string },
): { tools: { name: string; server: string | null }[]; nextAfter?: string } | undefined {
  const index = deps.search.catalogIndexes?.lastSeen(ref.tenant, ref.name)?.index;
  if (!index) return undefined;
  const names = firstNames(index.bm25, page.limit + 1, page.after);
  const tools = names.slice(0, page.limit).map((name) => ({ name, server: index.servers.serverOf.get(name) ?? null }));
  return names.length > page.limit ? { tools, nextAfter: tools[tools.length - 1]!.name } : { tools };
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
  // A key that may not call is refused before anything is looked up: the answer says nothing of the tool.
  const refusal = scope.access?.callRefusal({ tool: name });
  if (refusal) return errorResult(refusal);
  const resolved = await resolveTool(deps, scope, name, 'call');
  const lookupMs = performance.now() - started;
  if (!resolved.ok) return errorResult(resolved.error);
  const { tool, catalog, summary } = resolved;
  const readOnly = scope.access?.readOnlyRefusal({ catalog, tool: tool.name }, tool.definition);
  if (readOnly) return errorResult(readOnly);
  learnFromUse(deps, scope, catalog, tool.name, STRENGTH.called);
  const noUpstream = () =>
    errorResult(
      `"${name}" has no upstream MCP server registered in catalog "${catalog}"${tool.server ? ` (its server is "${tool.server}")` : ''}: ` +
        'toolsift knows its definition but cannot run it (a call goes only to the upstream that listed the tool; a pushed tool is never forwarded). ' +
        'Register the server with PUT /v1/catalogs/{catalog}/upstreams/{name}, or call the tool where it lives.',
    );
  if (!tool.upstream || !deps.upstreams) return noUpstream();
  const upstream = tool.upstream.name;
  const audited = (outcome: string, reason?: string) =>
    deps.audit?.record({
      event: 'call',
      tenant: scope.tenant,
      catalog,
      upstream,
      tool: tool.name,
      hash: tool.hash,
      outcome,
      ms: performance.now() - started,
      args: argumentShape(args),
      ...(scope.access ? { key: scope.access.policy.id } : {}),
      ...(scope.fromProgram ? { via: 'run_code' } : {}),
      ...(scope.trace ? { trace_id: traceId(scope.trace) } : {}),
      ...(reason ? { reason } : {}),
    });
  // Nothing is sent for arguments the tool's schema refuses: the agent hears which field and why.
  const verdict = checkArguments(deps.argumentChecks, tool.hash, tool.inputSchema, args);
  if (!verdict.ok) {
    audited('refused', 'arguments do not match the input schema');
    return { ...errorResult(`"${name}": ${verdict.message}; nothing was sent to the upstream (get_tool_details shows the input schema)`), upstream };
  }
  const called = performance.now();
  // A CLIENT span of the caller's trace; its context is the traceparent the upstream receives.
  const span = (deps.tracing ?? NO_TRACING).start(`tools/call ${tool.name}`, {
    kind: 'client',
    parent: scope.trace,
    attributes: upstreamCallAttributes({ tenant: scope.tenant, catalog, upstream, tool: tool.name }),
  });
  const call = deps.upstreams.callTool({
    tenant: scope.tenant,
    catalog,
    server: upstream,
    tool: tool.name,
    arguments: args,
    signal,
    upstream: tool.upstream,
    ...(span.context ? { trace: span.context } : {}),
  });
  const result = await endWith(span, call, upstreamCallError);
  if (result.isError && result.unknownUpstream) return noUpstream();
  const { unknownUpstream: _unknown, failure, ...answer } = result;
  const upstreamMs = performance.now() - called;
  // Text in the result addressed to the model is flagged, or the result withheld, before the agent reads it.
  // The upstream's own setting, where it has one, over the catalog's, over the service's.
  const mode = tool.upstream.resultScan ?? summary.resultScan;
  const scan = deps.resultScan && (mode ? { ...deps.resultScan, mode } : deps.resultScan);
  const screened = failure || !scan ? undefined : await screenResult(scan, answer, { tool: tool.name, upstream });
  const found = screened?.findings.length ? `result: ${describeFindings(screened.findings)}` : undefined;
  if (screened?.action === 'withheld') audited('withheld', found ?? `result: over RESULT_SCAN_MAX_CHARS, not all read`);
  else audited(failure ? 'failed' : answer.isError ? 'tool_error' : screened?.action === 'flagged' ? 'flagged' : 'ok', failure ?? found);
  return { ...(screened?.result ?? answer), upstream, split: { lookup_ms: lookupMs, upstream_ms: upstreamMs } };
}

/** A search's answer, remembered for the calls that follow it (search/feedback.ts RecentSearches). */
function rememberSearch(deps: DiscoveryDeps, scope: DiscoveryScope, query: string, shown: readonly { catalog: string; name: string }[]): void {
  if (!deps.search.recentSearches || !deps.search.learned || shown.length === 0) return;
  const byCatalog = new Map<string, string[]>();
  for (const tool of shown) byCatalog.set(tool.catalog, [...(byCatalog.get(tool.catalog) ?? []), tool.name]);
  deps.search.recentSearches.record(
    {
      tenant: scope.tenant,
      caller: scope.caller ?? ANONYMOUS_CALLER,
      query,
      shown: [...byCatalog].map(([catalog, names]) => ({ catalog, names })),
    },
    { correlate: true },
  );
}

/**
 * The MCP correlation (issue 72): a call (strong) or a look at the details (weak) of a tool that a
 * search_tools answer of the same tenant and caller showed within CORRELATION_WINDOW_MS is that
 * search's feedback, recorded once per search and tool (a call after a look adds the difference).
 * Written in the background: the call never waits for it, nor fails for it.
 */
function learnFromUse(deps: DiscoveryDeps, scope: DiscoveryScope, catalog: string, tool: string, strength: number): void {
  if (!deps.search.learned) return;
  const caller = scope.caller ?? ANONYMOUS_CALLER;
  const use = deps.search.recentSearches?.use(scope.tenant, caller, catalog, tool, strength);
  if (!use) return;
  const shown = use.search.shown.find((entry) => entry.catalog === catalog)?.names ?? [];
  void recordFeedback(deps.search, { tenant: scope.tenant, name: catalog }, { query: use.search.query, used: [tool], caller, strength: use.add, shown }).catch(
    (error) => deps.logger?.warn({ err: error, tenant: scope.tenant, catalog, tool }, 'mcp: a use after a search was not recorded'),
  );
}

export function errorResult(message: string): UpstreamCallResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** One line a tool, name and first sentence cut at 120 characters: the catalog index resource. */
export async function catalogIndex(deps: DiscoveryDeps, tenant: string, catalog: string, access?: Access): Promise<string> {
  const lines: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await catalogs.listTools(deps.catalog, { tenant, name: catalog }, { limit: 1000, after }, access);
    for (const tool of page.tools) {
      const sentence = firstSentence(tool.description);
      lines.push(`${tool.name}: ${sentence.length > 120 ? `${sentence.slice(0, 117)}...` : sentence}`);
    }
    if (!page.nextAfter) return lines.join('\n');
    after = page.nextAfter;
  }
}

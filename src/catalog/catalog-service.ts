import { requireResultScan, type ResultScanMode } from '../trust/result-scan-floor.js';
import { currentRecipe } from '../embed/embed-documents.js';
import { AppError, notFound } from '../errors.js';
import { Slots } from '../lib/slots.js';
import * as catalogStore from '../store/catalog-store.js';
import { catalogHashesWithoutVector } from '../store/embedding-store.js';
import type { Db } from '../store/database.js';
import { STORE_SLICE, storeDocuments, type CountedDocument, type ToolDocument } from '../store/tool-store.js';
import { documentIndexRow, type CatalogIndexRow } from '../store/search-store.js';
import { listUpstreams, type UpstreamRow } from '../store/upstream-store.js';
import { mapYielding } from '../lib/time-slice.js';
import { RESERVED_TOOL_NAMES } from '../trust/reserved-names.js';
import { isFlagged, scanTool, type Finding } from '../trust/scan-tool.js';
import { visibleDeep } from '../trust/visible-text.js';
import type { Access } from '../trust/policy.js';
import { contentHash } from './content-hash.js';
import type { CatalogEmbeddingStatus } from './embedding-status.js';
import { documentTerms, TERMS_VERSION } from '../ranking/search-text.js';
import { countDefinitions, countHere, type TextCounter } from './tokens.js';
import { normalizeTools, toolWarnings, type ToolWarning } from './tool-formats.js';
import type { Tool, WireShape } from '../lib/tool.js';

/** What the catalog operations need; built once in deps.ts. */
export interface CatalogDeps {
  db: Db;
  /** Documents per write transaction (STORE_SLICE of the store in use). */
  writeSlice?: number;
  /** Slices a large write stores at once (STORE_CONCURRENCY of the store in use). */
  writeConcurrency?: number;
  /** Called with hashes that may lack an embedding for the active model (the embedding queue). */
  onDocumentsWritten?: (hashes: string[]) => Promise<string[]>;
  /** Told of each catalog write that made a new revision (after it committed); must not throw. */
  onCatalogChanged?: (catalog: { id: number; revision: number }, written?: WrittenChanges) => void;
  /** The active embedding model and the queue's failures; absent when nothing is embedded. */
  embedding?: {
    model: string;
    failedHashes(): Promise<Set<string>>;
    /** Counts progress with a bounded cost (catalog/embedding-status.ts), shared with the searches. */
    status: CatalogEmbeddingStatus;
  };
  /** Where definition tokens are counted (the service's counting thread); absent = on this thread. */
  tokenCounter?: TextCounter;
  /** What a push does with a tool the definition scanner rates high (SCAN_POLICY); absent = refuse. */
  scanPolicy?: ScanPolicy;
  /** RESULT_SCAN_MIN: the least a catalog's own `result_scan` may ask for; absent: any. */
  resultScanMin?: ResultScanMode;
  /** What one tenant may store (TENANT_MAX_TOOLS, TENANT_MAX_CATALOGS, TENANT_MAX_BYTES); absent: no bound. */
  tenantLimits?: catalogStore.TenantLimits;
}

export type ScanPolicy = 'refuse' | 'warn' | 'off';

export interface CatalogRef {
  tenant: string;
  name: string;
}

export const MAX_TOOLS_PER_REQUEST = 10_000;

/** A canonical tool with its content hash and BM25 terms: what ranking needs. */
export function termsDocument(tool: Tool, hash: string = contentHash(tool)): ToolDocument {
  const { termFreqs, length } = documentTerms(tool);
  return { hash, tool, termFreqs, length, termsVersion: TERMS_VERSION };
}

/** Documents with their definitions' estimated tokens (catalog/tokens.ts), counted by `counter`: what the store keeps. */
export async function countedDocuments(counter: TextCounter, documents: readonly ToolDocument[]): Promise<CountedDocument[]> {
  const tokens = await countDefinitions(
    counter,
    documents.map((document) => document.tool),
  );
  return documents.map((document, index) => ({ ...document, tokens: tokens[index]! }));
}

/** The tools' documents: their terms here, in slices, while the counting thread counts their tokens. */
async function toDocuments(deps: CatalogDeps, tools: Tool[]): Promise<CountedDocument[]> {
  const [documents, tokens] = await Promise.all([mapYielding(tools, (tool) => termsDocument(tool)), countDefinitions(deps.tokenCounter ?? countHere, tools)]);
  return documents.map((document, index) => ({ ...document, tokens: tokens[index]! }));
}

/** Normalizes every tool or rejects the whole request, naming each bad tool by index. */
export function parseToolList(raws: unknown[]): Tool[] {
  if (raws.length > MAX_TOOLS_PER_REQUEST) {
    throw new AppError('validation_failed', `too many tools: ${raws.length} (at most ${MAX_TOOLS_PER_REQUEST} per request)`);
  }
  const { tools, problems } = normalizeTools(raws);
  if (problems.length > 0) {
    const first = problems[0]!;
    throw new AppError(
      'invalid_tool',
      `tools[${first.index}]${first.name ? ` ("${first.name}")` : ''}: ${first.message}` +
        (problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : ''),
      problems,
    );
  }
  return tools;
}

export interface CatalogWriteResult {
  catalog: catalogStore.CatalogSummary;
  newDocuments: number;
  jobIds: string[];
  /** Keys a tool carries that its shape does not define (accepted, but maybe not what was meant). */
  warnings: ToolWarning[];
  /** What the definition scanner found in the written tools (pushes only). */
  findings: ToolFindings[];
}

/** A pushed tool's scanner findings, by its index in the request. */
export interface ToolFindings {
  index: number;
  name: string;
  findings: Finding[];
}

/** The fields of a tool the scanner reads: its text, schemas and annotations as the source gave them. */
export function scannedTool(tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition'>) {
  const definition = (typeof tool.definition === 'object' && tool.definition !== null ? tool.definition : {}) as Record<string, unknown>;
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    outputSchema: definition.outputSchema,
    annotations: definition.annotations,
    ...(typeof definition.title === 'string' ? { title: definition.title } : {}),
  };
}

/**
 * Pushed tools as they may be stored: scanned (SCAN_POLICY), then with every invisible and control
 * character taken out of their text, so what agents receive never carries them. `refuse` turns a
 * high finding into a 400 naming each such tool and finding, before anything is written. A name is
 * compared with the request's other names (confusables) and the meta-tools' names.
 */
export async function screenPushedTools(policy: ScanPolicy, raws: unknown[]): Promise<{ tools: Tool[]; findings: ToolFindings[] }> {
  const tools = parseToolList(raws);
  if (policy === 'off') return { tools, findings: [] };
  const context = { otherNames: tools.map((tool) => tool.name), reservedNames: RESERVED_TOOL_NAMES };
  const scanned = await mapYielding(tools, (tool) => scanTool(scannedTool(tool), context));
  const findings = scanned.flatMap((found, index) => (found.length > 0 ? [{ index, name: tools[index]!.name, findings: found }] : []));
  const unsafe = findings.filter((tool) => isFlagged(tool.findings));
  if (policy === 'refuse' && unsafe.length > 0) {
    const first = unsafe[0]!;
    const finding = first.findings.find((item) => item.severity === 'high')!;
    throw new AppError(
      'unsafe_tool',
      `tools[${first.index}] ("${visibleDeep(first.name)}"): ${finding.code} at ${finding.path}: ${finding.excerpt}` +
        (unsafe.length > 1 ? ` (and ${unsafe.length - 1} more unsafe tool${unsafe.length > 2 ? 's' : ''})` : '') +
        '; SCAN_POLICY=warn stores such tools with their findings',
      unsafe.map((tool) => ({ ...tool, findings: tool.findings.filter((item) => item.severity === 'high') })),
    );
  }
  let changed = false;
  const visible = raws.map((raw) => {
    const clean = visibleDeep(raw);
    changed ||= clean !== raw;
    return clean;
  });
  return { tools: changed ? parseToolList(visible) : tools, findings };
}

/**
 * Requests with more tools than this store their documents ahead of the catalog, in slices, and
 * queue each slice's embeddings as soon as it commits: workers start on the first slice while the
 * rest is being written. Storing 4,076 tools (documents, 71,778 term rows, the catalog) takes
 * ~1.2 s on PostgreSQL, and `npm run bench:embed` had every worker idle for that long.
 */
export const WRITE_AHEAD_SLICE = 512;
/**
 * The first slice is small, so the first jobs are queued within a few tens of milliseconds; each
 * next slice doubles, up to WRITE_AHEAD_SLICE, while the workers are busy with the ones before.
 */
export const WRITE_AHEAD_FIRST_SLICE = 64;

/** Sizes of the slices a write of `count` documents is stored ahead in: none for a small write. */
export function writeAheadSlices(count: number): number[] {
  if (count <= WRITE_AHEAD_SLICE) return [];
  const sizes: number[] = [];
  let size = WRITE_AHEAD_FIRST_SLICE;
  for (let left = count; left > 0; left -= sizes.at(-1)!) {
    sizes.push(Math.min(size, left));
    size = Math.min(2 * size, WRITE_AHEAD_SLICE);
  }
  return sizes;
}

interface WrittenAhead {
  /** Every tool's document, in request order. */
  documents: CountedDocument[];
  /** What the catalog's transaction must still store: every document, unless they went ahead. */
  unstored: CountedDocument[];
  newHashes: string[];
  jobIds: string[];
  /** Hashes whose embeddings are already queued: the write need not queue them again. */
  queued: Set<string>;
}

/**
 * Documents are content-addressed and immutable, and a catalog only sees them through its own
 * rows, so storing them early shows nothing: the catalog still changes in one transaction, all of
 * it or none of it. If that transaction fails, the documents stay, like a selector request's, and
 * a retry reuses them and their vectors. Each slice's hashes, terms and token counts are computed just before it
 * is stored (~130 us a tool): the first jobs do not wait for the whole request's (~0.5 s for 4,076).
 * Every tool was validated before this runs, so a bad tool still stores nothing.
 */
async function writeAhead(deps: CatalogDeps, tools: Tool[]): Promise<WrittenAhead> {
  const queue = deps.onDocumentsWritten;
  const sizes = writeAheadSlices(tools.length);
  if (sizes.length === 0) {
    const documents = await toDocuments(deps, tools);
    return { documents, unstored: documents, newHashes: [], jobIds: [], queued: new Set() };
  }
  if (!queue) return storeAhead(deps, tools);
  const ahead: WrittenAhead = { documents: [], unstored: [], newHashes: [], jobIds: [], queued: new Set() };
  let queueing = true;
  let start = 0;
  for (const size of sizes) {
    const slice = await toDocuments(deps, tools.slice(start, (start += size)));
    ahead.documents.push(...slice);
    const fresh = await storeDocuments(deps.db, slice, deps.writeSlice);
    ahead.newHashes.push(...fresh);
    if (!queueing || fresh.length === 0) continue;
    try {
      ahead.jobIds.push(...(await queue(fresh)));
      for (const hash of fresh) ahead.queued.add(hash);
    } catch {
      // Queue away (Redis down): stop queueing ahead. The hashes not queued here are queued after
      // the catalog commits, as for a small request, and that call reports the failure (503).
      queueing = false;
    }
  }
  return ahead;
}

/**
 * Nothing to embed: the documents go ahead in slices, each stored as soon as it is made, up to
 * `writeConcurrency` side by side, while this thread makes the next ones (the store's work and this
 * thread's overlap; made all first, then stored, a 5,000-tool push left a quarter of two cores
 * idle). The catalog's transaction then only maps names. Each slice locks its documents in hash
 * order, like every other writer, so slices side by side cannot deadlock.
 */
async function storeAhead(deps: CatalogDeps, tools: Tool[]): Promise<WrittenAhead> {
  // Whole statements' worth (writeSlice documents each), at least WRITE_AHEAD_SLICE a slice.
  const statement = deps.writeSlice ?? STORE_SLICE.postgres;
  const size = statement * Math.ceil(WRITE_AHEAD_SLICE / statement);
  const slots = new Slots(Math.max(1, deps.writeConcurrency ?? 1));
  const documents: CountedDocument[] = [];
  const stores: Promise<string[]>[] = [];
  for (let start = 0; start < tools.length; start += size) {
    const slice = await toDocuments(deps, tools.slice(start, start + size));
    documents.push(...slice);
    stores.push((await slots.start(() => storeDocuments(deps.db, slice, deps.writeSlice))).done);
  }
  const newHashes = (await Promise.all(stores)).flat();
  return { documents, unstored: [], newHashes, jobIds: [], queued: new Set() };
}

/**
 * What a write changed, from its own documents: the index of the revision it made is laid over the
 * last one's at once (search/catalog-index.ts `refresh`), so the next search does not wait for
 * those rows to be read back (~0.7 s for 5,000 tools of 100,000).
 */
export interface WrittenChanges {
  /** The revision the changes apply to (the new one less one). */
  from: number;
  rows: CatalogIndexRow[];
  removed: string[];
}

/** A write's changes when it can tell them (`CatalogWrite.changed`): the documents now behind the changed names. */
export function writtenChanges(write: catalogStore.CatalogWrite, documents: readonly CountedDocument[]): WrittenChanges | undefined {
  if (!write.changed) return undefined;
  const byName = new Map(documents.map((doc) => [doc.tool.name, doc]));
  const rows = write.changed.flatMap((name) => {
    const doc = byName.get(name);
    return doc ? [documentIndexRow(doc)] : [];
  });
  return rows.length === write.changed.length ? { from: write.catalog.revision - 1, rows, removed: [] } : undefined;
}

async function afterWrite(deps: CatalogDeps, write: catalogStore.CatalogWrite, ahead: WrittenAhead, written?: WrittenChanges) {
  deps.onCatalogChanged?.(write.catalog, written);
  // A document queued ahead that a sweep then removed was stored again by the write: queued again.
  const again = new Set(write.newHashes);
  const rest = ahead.documents.map((doc) => doc.hash).filter((hash) => !ahead.queued.has(hash) || again.has(hash));
  const jobIds = deps.onDocumentsWritten && rest.length > 0 ? await deps.onDocumentsWritten(rest) : [];
  return {
    catalog: write.catalog,
    newDocuments: ahead.newHashes.length + write.newHashes.length,
    jobIds: [...ahead.jobIds, ...jobIds],
    warnings: [] as ToolWarning[],
  };
}

export async function replaceCatalog(deps: CatalogDeps, ref: CatalogRef, raws: unknown[]): Promise<CatalogWriteResult> {
  const { tools, findings } = await screenPushedTools(deps.scanPolicy ?? 'refuse', raws);
  const ahead = await writeAhead(deps, tools);
  const known = await catalogStore.tenantHashes(
    deps.db,
    ref.tenant,
    ahead.documents.map((doc) => doc.hash),
  );
  const write = await heldAsConflict(catalogStore.replaceCatalog(deps.db, ref.tenant, ref.name, ahead.documents, ahead.unstored, deps.tenantLimits));
  return {
    ...(await afterWrite(deps, write, ahead)),
    newDocuments: newToTenant(ahead.documents, known),
    warnings: raws.flatMap((raw, index) => toolWarnings(raw, index)),
    findings,
  };
}

export async function upsertTools(deps: CatalogDeps, ref: CatalogRef, raws: unknown[], access?: Access): Promise<CatalogWriteResult> {
  const { tools, findings } = await screenPushedTools(deps.scanPolicy ?? 'refuse', raws);
  // A key that sees only some tools writes only tools it would see, and replaces none it does not:
  // a name a hidden tool holds is refused (a 409 that says nothing of it), judged in the write's
  // transaction, so a hidden tool pushed meanwhile is not written over either.
  const guard = access?.limitsTools ? (held: readonly catalogStore.HeldName[]) => access.requireNamesFree(ref.name, held) : undefined;
  if (access?.limitsTools) access.requireToolsWritable(ref.name, tools);
  const ahead = await writeAhead(deps, tools);
  const known = await catalogStore.tenantHashes(
    deps.db,
    ref.tenant,
    ahead.documents.map((doc) => doc.hash),
  );
  const write = await heldAsConflict(catalogStore.upsertCatalogTools(deps.db, ref.tenant, ref.name, ahead.documents, ahead.unstored, deps.tenantLimits, guard));
  const written = await afterWrite(deps, write, ahead, writtenChanges(write, ahead.documents));
  return {
    ...written,
    catalog: await seenCatalog(deps, written.catalog, access),
    newDocuments: newToTenant(ahead.documents, known),
    warnings: raws.flatMap((raw, index) => toolWarnings(raw, index)),
    findings,
  };
}

/** A push or deletion of an upstream's tool: a 409 naming each such tool and its upstream, nothing written. */
async function heldAsConflict<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (!(error instanceof catalogStore.NamesHeldError)) throw error;
    const names = error.held.map((row) => `"${row.name}" (upstream ${row.upstream ?? 'none'})`).join(', ');
    throw new AppError(
      'name_conflict',
      `${names}: synced from an upstream MCP server of this catalog, which holds the name (push under another name; reject the tool at POST /v1/catalogs/{catalog}/upstreams/{name}/reject, or remove the upstream)`,
      error.held,
    );
  }
}

/**
 * Replaces the catalog's tools of one upstream MCP server (its approved tools, already screened by
 * the upstream's sync) and keeps the rest, in one write under the catalog's lock. Returns what the
 * upstream's tools were before (by name and hash) and the names it could not take (`held`).
 */
export async function replaceServerTools(
  deps: CatalogDeps,
  ref: CatalogRef,
  upstream: string,
  tools: Tool[],
): Promise<
  Omit<CatalogWriteResult, 'findings'> & { before: Map<string, string>; hashes: Map<string, string>; held: { name: string; upstream: string | null }[] }
> {
  const ahead = await writeAhead(deps, tools);
  const write = await catalogStore.replaceServerTools(deps.db, ref.tenant, ref.name, upstream, ahead.documents, ahead.unstored, deps.tenantLimits);
  const hashes = new Map(ahead.documents.map((doc) => [doc.tool.name, doc.hash]));
  return { ...(await afterWrite(deps, write, ahead)), before: write.before, hashes, held: write.held };
}

/**
 * Tools whose content no catalog of this tenant held before the write. Not "new to the store":
 * that would tell a tenant whether another tenant already pushed an identical tool.
 */
function newToTenant(documents: ToolDocument[], known: Set<string>): number {
  return new Set(documents.map((doc) => doc.hash).filter((hash) => !known.has(hash))).size;
}

/** The scanner's findings on a stored tool as it is now (its text was cleaned on the way in, so instructions, not characters). */
export function storedFindings(tool: catalogStore.CatalogToolRow): Finding[] {
  return scanTool(scannedTool(tool), { reservedNames: RESERVED_TOOL_NAMES });
}

export async function deleteTool(deps: CatalogDeps, ref: CatalogRef, toolName: string, access?: Access): Promise<void> {
  if (!(await catalogStore.getCatalog(deps.db, ref.tenant, ref.name))) throw notFound(`catalog "${ref.name}"`);
  // A tool the key does not see is answered as absent.
  if (access?.limitsTools) await getTool(deps, ref, toolName, access);
  if (!(await heldAsConflict(catalogStore.deleteCatalogTool(deps.db, ref.tenant, ref.name, toolName)))) {
    throw notFound(`tool "${toolName}" in catalog "${ref.name}"`);
  }
}

/** One of a tenant's counts beside its bound (TENANT_MAX_*; null: none). */
export interface UsageCount {
  used: number;
  limit: number | null;
}

/** What the tenant holds of each thing TENANT_MAX_* bounds, with the bounds. */
export async function tenantUsage(
  deps: Pick<CatalogDeps, 'db' | 'tenantLimits'>,
  tenant: string,
): Promise<{ catalogs: UsageCount; tools: UsageCount; upstreams: UsageCount; definitionBytes: UsageCount }> {
  const used = await catalogStore.tenantUsage(deps.db, tenant);
  const limits = deps.tenantLimits ?? {};
  return {
    catalogs: { used: used.catalogs, limit: limits.maxCatalogs ?? null },
    tools: { used: used.tools, limit: limits.maxTools ?? null },
    upstreams: { used: used.upstreams, limit: limits.maxUpstreams ?? null },
    definitionBytes: { used: used.bytes, limit: limits.maxBytes ?? null },
  };
}

export async function deleteCatalog(deps: CatalogDeps, ref: CatalogRef): Promise<void> {
  if (!(await catalogStore.deleteCatalog(deps.db, ref.tenant, ref.name))) throw notFound(`catalog "${ref.name}"`);
}

export async function getCatalog(deps: CatalogDeps, ref: CatalogRef): Promise<catalogStore.CatalogSummary> {
  const catalog = await catalogStore.getCatalog(deps.db, ref.tenant, ref.name);
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  return catalog;
}

/** Changes a catalog's settings (code mode, result scanning); 404 when there is no such catalog, 400 for a scan below RESULT_SCAN_MIN. */
export async function updateCatalogSettings(deps: CatalogDeps, ref: CatalogRef, settings: catalogStore.CatalogSettings): Promise<catalogStore.CatalogSummary> {
  requireResultScan(settings.resultScan, deps.resultScanMin);
  const catalog = await catalogStore.updateCatalogSettings(deps.db, ref.tenant, ref.name, settings);
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  return catalog;
}

/**
 * The tools of each catalog (by id) that `access` sees, and the names of those it does not: one
 * statement however many catalogs.
 */
export async function toolsSeen(
  deps: Pick<CatalogDeps, 'db'>,
  catalogs: readonly catalogStore.CatalogSummary[],
  access: Access,
): Promise<Map<number, { seen: catalogStore.ToolSize[]; hidden: string[] }>> {
  const names = new Map(catalogs.map((catalog) => [catalog.id, catalog.name]));
  const byCatalog = new Map(catalogs.map((catalog) => [catalog.id, { seen: [] as catalogStore.ToolSize[], hidden: [] as string[] }]));
  for (const tool of await catalogStore.catalogToolSizes(deps.db, [...names.keys()])) {
    const own = byCatalog.get(tool.catalogId)!;
    if (access.seesTool({ catalog: names.get(tool.catalogId)!, name: tool.name, server: tool.server })) own.seen.push(tool);
    else own.hidden.push(tool.name);
  }
  return byCatalog;
}

/** The definition tokens of `tools` in `shape`, as a catalog's sums count them (a tool not counted yet adds 0). */
export const tokensOfTools = (tools: readonly catalogStore.ToolSize[], shape: WireShape) => tools.reduce((sum, tool) => sum + (tool[shape] ?? 0), 0);

/** The catalog's summary over `tools` alone. */
const summaryOver = (catalog: catalogStore.CatalogSummary, tools: readonly catalogStore.ToolSize[]): catalogStore.CatalogSummary => ({
  ...catalog,
  toolCount: tools.length,
  definitionTokens: { anthropic: tokensOfTools(tools, 'anthropic'), openai: tokensOfTools(tools, 'openai'), as_sent: tokensOfTools(tools, 'as_sent') },
});

/**
 * The catalogs as `access` sees them: a key that sees only some tools is told the tool count and
 * definition tokens of those alone (the catalog's would tell how many tools it does not see, and
 * how large they are). One statement for them all; none for a key that sees every tool.
 */
export async function seenCatalogs(
  deps: Pick<CatalogDeps, 'db'>,
  catalogs: catalogStore.CatalogSummary[],
  access?: Access,
): Promise<catalogStore.CatalogSummary[]> {
  if (!access?.limitsTools || catalogs.length === 0) return catalogs;
  const tools = await toolsSeen(deps, catalogs, access);
  return catalogs.map((catalog) => summaryOver(catalog, tools.get(catalog.id)!.seen));
}

export async function seenCatalog(deps: Pick<CatalogDeps, 'db'>, catalog: catalogStore.CatalogSummary, access?: Access): Promise<catalogStore.CatalogSummary> {
  return (await seenCatalogs(deps, [catalog], access))[0]!;
}

/** A catalog as `access` sees it, with its embedding progress: both over the tools it sees. */
export async function catalogWithProgress(
  deps: CatalogDeps,
  ref: CatalogRef,
  access?: Access,
): Promise<{ catalog: catalogStore.CatalogSummary; embedding: EmbeddingProgress | null }> {
  const catalog = await getCatalog(deps, ref);
  if (!access?.limitsTools) return { catalog, embedding: await embeddingProgress(deps, catalog) };
  const { seen } = (await toolsSeen(deps, [catalog], access)).get(catalog.id)!;
  return {
    catalog: summaryOver(catalog, seen),
    embedding: await embeddingProgress(
      deps,
      catalog,
      seen.map((tool) => tool.hash),
    ),
  };
}

/** Of `hashes` (tools of the catalog), those that lack a current vector of `model`. */
export async function withoutVector(deps: Pick<CatalogDeps, 'db'>, catalogId: number, model: string, hashes: readonly string[]): Promise<string[]> {
  const missing = new Set(await catalogHashesWithoutVector(deps.db, catalogId, currentRecipe(model)));
  return hashes.filter((hash) => missing.has(hash));
}

/** The tenant's catalogs, those `access` may use. */
export async function listCatalogs(deps: CatalogDeps, tenant: string, access?: Access): Promise<catalogStore.CatalogSummary[]> {
  const listed = await catalogStore.listCatalogs(deps.db, tenant);
  return access ? listed.filter((catalog) => access.seesCatalog(catalog.name)) : listed;
}

/** A page of the catalog's tools in name order, of those `access` sees (a page is filled past hidden ones). */
export async function listTools(
  deps: CatalogDeps,
  ref: CatalogRef,
  page: { limit: number; after?: string },
  access?: Access,
): Promise<{ tools: catalogStore.CatalogToolRow[]; nextAfter?: string }> {
  await getCatalog(deps, ref);
  const tools: catalogStore.CatalogToolRow[] = [];
  let after = page.after;
  for (;;) {
    const rows = await catalogStore.listCatalogTools(deps.db, ref, { limit: page.limit + 1, after });
    for (const [at, row] of rows.slice(0, page.limit).entries()) {
      if (access?.limitsTools && !access.seesTool({ catalog: ref.name, name: row.name, server: row.server })) continue;
      tools.push(row);
      // More rows after this one (perhaps none the key sees: the next page is then empty).
      if (tools.length === page.limit) return at < rows.length - 1 ? { tools, nextAfter: row.name } : { tools };
    }
    if (rows.length <= page.limit) return { tools };
    after = rows[page.limit - 1]!.name;
  }
}

/** A tool of the catalog; one `access` does not see is answered as absent (404), and the refusal recorded. */
export async function getTool(deps: CatalogDeps, ref: CatalogRef, toolName: string, access?: Access): Promise<catalogStore.CatalogToolRow> {
  await getCatalog(deps, ref);
  const tool = await catalogStore.getCatalogTool(deps.db, ref, toolName);
  if (tool && access && !access.seesTool({ catalog: ref.name, name: tool.name, server: tool.server })) {
    access.hidden('see_tool', { catalog: ref.name, tool: toolName });
  } else if (tool) return tool;
  throw notFound(`tool "${toolName}" in catalog "${ref.name}"`);
}

/**
 * How far a catalog's tools are embedded under the active model. Every tool is in exactly one of:
 * - done: it has a current vector for `model` (computed from this release's embedding text);
 * - failed: no current vector, and its job gave up after every attempt (the queue's periodic
 *   sweep, or pushing the catalog again, schedules it once more);
 * - pending: no current vector yet and not failed: waiting, running, retrying, or about to be
 *   re-enqueued (e.g. accepted while Redis was away). A vector from an older embedding text
 *   recipe is pending too; it serves search until its replacement is written.
 * null when the service embeds nothing (EMBED_MODEL=none).
 */
export interface EmbeddingProgress {
  model: string;
  total: number;
  done: number;
  pending: number;
  failed: number;
}

/** The upstream MCP servers synced into the catalog (their state is shaped by upstream/upstreams.ts). */
export async function catalogUpstreams(deps: CatalogDeps, ref: CatalogRef): Promise<UpstreamRow[]> {
  return listUpstreams(deps.db, ref.tenant, ref.name);
}

/**
 * The catalog's embedding progress; with `seen` (the hashes of the tools a key that sees only some
 * tools sees), over those tools alone.
 */
export async function embeddingProgress(deps: CatalogDeps, catalog: catalogStore.CatalogSummary, seen?: readonly string[]): Promise<EmbeddingProgress | null> {
  if (!deps.embedding) return null;
  const { model } = deps.embedding;
  const { total, done } = await deps.embedding.status.progress(deps.db, catalog, model);
  // Every tool has its vector: every tool the key sees too.
  if (done >= total) return seen ? progressOf(model, seen.length, seen.length, 0) : progressOf(model, total, done, 0);
  // Failures are looked up only while something is missing; a finished catalog costs one query.
  const failedHashes = await deps.embedding.failedHashes().catch(() => new Set<string>());
  if (seen) {
    const missing = await withoutVector(deps, catalog.id, model, seen);
    return progressOf(model, seen.length, seen.length - missing.length, missing.filter((hash) => failedHashes.has(hash)).length);
  }
  const failed =
    failedHashes.size > 0 ? (await catalogHashesWithoutVector(deps.db, catalog.id, currentRecipe(model))).filter((hash) => failedHashes.has(hash)).length : 0;
  return progressOf(model, total, done, failed);
}

const progressOf = (model: string, total: number, done: number, failed: number): EmbeddingProgress => ({
  model,
  total,
  done,
  pending: total - done - failed,
  failed,
});

import type { ResultScanMode } from '../trust/result-scan-floor.js';
import { sql } from 'drizzle-orm';
import { AppError } from '../errors.js';
import { queryRows, retryOnConflict, type Db } from './database.js';
import type { DefinitionTokens } from '../lib/tool.js';
import { yieldToOtherRequests } from '../lib/time-slice.js';
import { insertDocuments, type CountedDocument, type Executor } from './tool-store.js';
import { holdDocuments } from './document-gc.js';
import { readThrough } from './read-cache.js';

export interface CatalogSummary {
  id: number;
  name: string;
  toolCount: number;
  /** Estimated tokens of every tool's definition, per shape: what sending the whole catalog costs. */
  definitionTokens: DefinitionTokens;
  revision: number;
  /** Which registration of its upstream MCP servers (bumped by each PUT or DELETE of one); not in the API. */
  upstreamRevision: number;
  /** Whether run_code programs may call its tools (CODE_MODE=on). */
  codeMode: boolean;
  /** How its tools' call results are read for injected instructions; null: as the service's RESULT_SCAN says. An upstream's own wins. */
  resultScan: ResultScanMode | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface CatalogToolRow {
  name: string;
  hash: string;
  description: string;
  inputSchema: Record<string, unknown> | null;
  tags: string[];
  server: string | null;
  /** The upstream MCP server that synced it (calls go there only); null: pushed over REST. */
  upstream: string | null;
  definition: unknown;
  /** Its definition's estimated tokens as stored (null for rows of an older release until start-up counts them). */
  tokens: { anthropic: number | null; openai: number | null; as_sent: number | null };
}

const summaryColumns = sql`c.id, c.name, c.revision::int as revision, c.upstream_revision::int as "upstreamRevision", c.code_mode as "codeMode", c.result_scan as "resultScan", c.created_at as "createdAt", c.updated_at as "updatedAt",
  c.tool_count as "toolCount", c.tokens_anthropic::float8 as anthropic, c.tokens_openai::float8 as openai, c.tokens_as_sent::float8 as as_sent`;

type SummaryRow = Omit<CatalogSummary, 'definitionTokens'> & DefinitionTokens;

function normalizeSummary({ anthropic, openai, as_sent, ...row }: SummaryRow): CatalogSummary {
  return {
    ...row,
    definitionTokens: { anthropic: Number(anthropic), openai: Number(openai), as_sent: Number(as_sent) },
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
  };
}

/** What a catalog's row sums over its tools: their definition tokens per shape, and their definitions' bytes as stored. */
type Sums = DefinitionTokens & { bytes: number };

const NO_SUMS: Sums = { anthropic: 0, openai: 0, as_sent: 0, bytes: 0 };

const toSums = (row: Sums | undefined): Sums =>
  row ? { anthropic: Number(row.anthropic), openai: Number(row.openai), as_sent: Number(row.as_sent), bytes: Number(row.bytes) } : NO_SUMS;

/** The sums of a catalog's tools, of all of them or of `names` only (a row an older release wrote is measured here). */
async function toolSums(tx: Executor, id: number, names: string[] | null): Promise<Sums> {
  if (names !== null && names.length === 0) return NO_SUMS;
  const rows = await queryRows<Sums>(
    tx,
    sql`select coalesce(sum(d.tokens_anthropic), 0)::float8 as anthropic, coalesce(sum(d.tokens_openai), 0)::float8 as openai,
               coalesce(sum(ct.tokens_as_sent), 0)::float8 as as_sent,
               coalesce(sum(coalesce(ct.definition_bytes, octet_length(ct.definition::text))), 0)::float8 as bytes
        from catalog_tools ct join tool_documents d on d.hash = ct.hash
        where ct.catalog_id = ${id} ${names === null ? sql`` : sql`and ct.name = any(${sql.param(names)}::text[])`}`,
  );
  return toSums(rows[0]);
}

/** What a write changed the catalog's sums by: the touched names after, less before. */
const sumsChange = (before: Sums, after: Sums): Sums => ({
  anthropic: after.anthropic - before.anthropic,
  openai: after.openai - before.openai,
  as_sent: after.as_sent - before.as_sent,
  bytes: after.bytes - before.bytes,
});

const addSums = (change: Sums) =>
  sql`tokens_anthropic = tokens_anthropic + ${change.anthropic}, tokens_openai = tokens_openai + ${change.openai}, tokens_as_sent = tokens_as_sent + ${change.as_sent},
      definition_bytes = definition_bytes + ${change.bytes}`;

/** The sums the catalog's row holds now. */
async function storedSums(tx: Executor, id: number): Promise<Sums> {
  const rows = await queryRows<Sums>(
    tx,
    sql`select tokens_anthropic::float8 as anthropic, tokens_openai::float8 as openai, tokens_as_sent::float8 as as_sent, definition_bytes::float8 as bytes
        from catalogs where id = ${id}`,
  );
  return toSums(rows[0]);
}

/**
 * Catalog rows a statement writes. 4,000 rows in one statement held every other request ~270 ms
 * inside a PUT's transaction when PGlite ran on the event loop's thread (`npm run bench --
 * --stalls`); smaller statements keep each of PGlite's steps, and the yields between them, short.
 */
const MAPPINGS_PER_STATEMENT = 500;

/** `upstream`: the upstream MCP server the rows come from (null: pushed over REST). */
async function upsertMappings(db: Executor, id: number, documents: CountedDocument[], upstream: string | null = null) {
  for (let start = 0; start < documents.length; start += MAPPINGS_PER_STATEMENT) {
    if (start > 0) await yieldToOtherRequests();
    await upsertMappingStatement(db, id, documents.slice(start, start + MAPPINGS_PER_STATEMENT), upstream);
  }
}

async function upsertMappingStatement(db: Executor, id: number, documents: CountedDocument[], upstream: string | null) {
  // The JSON text each row stores, and its UTF-8 bytes (what TENANT_MAX_BYTES counts).
  const definitions = documents.map((doc) => JSON.stringify(doc.tool.definition));
  await db.execute(
    sql`insert into catalog_tools (catalog_id, name, hash, definition, tokens_as_sent, definition_bytes, upstream)
        select ${id}, t.name, t.hash, t.definition::json, t.tokens_as_sent, t.definition_bytes, ${upstream}::text
        from unnest(
          ${sql.param(documents.map((doc) => doc.tool.name))}::text[],
          ${sql.param(documents.map((doc) => doc.hash))}::text[],
          ${sql.param(definitions)}::text[],
          ${sql.param(documents.map((doc) => doc.tokens.as_sent))}::int[],
          ${sql.param(definitions.map((text) => Buffer.byteLength(text)))}::int[]
        ) as t(name, hash, definition, tokens_as_sent, definition_bytes)
        on conflict (catalog_id, name) do update set hash = excluded.hash, definition = excluded.definition, tokens_as_sent = excluded.tokens_as_sent,
          definition_bytes = excluded.definition_bytes, upstream = excluded.upstream`,
  );
}

/** A write would take over names another source of the catalog holds (an upstream's tools; for an upstream, pushed tools too). */
export class NamesHeldError extends Error {
  constructor(readonly held: { name: string; upstream: string | null }[]) {
    super(
      `names held by another source of the catalog: ${held.map((row) => `${row.name} (${row.upstream === null ? 'pushed' : `upstream ${row.upstream}`})`).join(', ')}`,
    );
  }
}

/**
 * Of `names`, those the catalog holds from another source than `source` (null: pushed over REST),
 * with their holder: a name stays with whoever holds it (issue 70's shadowing).
 */
async function namesHeldByOthers(tx: Executor, id: number, names: string[], source: string | null): Promise<{ name: string; upstream: string | null }[]> {
  if (names.length === 0) return [];
  return queryRows<{ name: string; upstream: string | null }>(
    tx,
    sql`select name, upstream from catalog_tools
        where catalog_id = ${id} and name = any(${sql.param(names)}::text[]) and upstream is distinct from ${source}::text
        order by name`,
  );
}

/** Revisions of each catalog whose changed names stay logged (catalog_changes). */
export const CATALOG_CHANGES_KEPT = 100;

/**
 * Logs the names a catalog's new revision changed (null: every tool), in the write's transaction,
 * and forgets revisions older than the last CATALOG_CHANGES_KEPT.
 */
async function logChanges(tx: Executor, id: number, names: string[] | null): Promise<void> {
  await tx.execute(
    sql`insert into catalog_changes (catalog_id, revision, names)
        select id, revision, ${names === null ? sql`null::text[]` : sql`${sql.param(names)}::text[]`} from catalogs where id = ${id}`,
  );
  await tx.execute(
    sql`delete from catalog_changes where catalog_id = ${id}
        and revision <= (select revision from catalogs where id = ${id}) - ${CATALOG_CHANGES_KEPT}`,
  );
}

/**
 * The change log read since revision `from`, as the CTEs a statement starts with: `c` (the catalog's
 * id, revision and tool count now), `log` (its logged revisions after `from`) and `changed` (their
 * distinct names, at most `maxNames` + 1); and the columns `changesTold` reads.
 */
export const changesSince = (catalogId: number, from: number, maxNames: number) => ({
  ctes: sql`c as (select id, revision, tool_count from catalogs where id = ${catalogId}),
            log as (select x.names from catalog_changes x join c on x.catalog_id = c.id where x.revision > ${from} and x.revision <= c.revision),
            changed as (select distinct n as name from log, unnest(log.names) n limit ${maxNames + 1})`,
  columns: sql`c.revision::int as revision, (select count(*) from log)::int as logged,
               (select count(*) from log where names is null)::int as unknown, (select count(*) from changed)::int as changed`,
});

/** Whether the log tells what changed since `from`: every revision logged, none logged as every tool, at most `maxNames` names. */
export function changesTold(row: { revision: number; logged: number; unknown: number; changed: number }, from: number, maxNames: number): boolean {
  return Number(row.unknown) === 0 && Number(row.logged) === Number(row.revision) - from && Number(row.changed) <= maxNames;
}

/** What one tenant may store (TENANT_MAX_TOOLS, TENANT_MAX_CATALOGS, TENANT_MAX_UPSTREAMS); a field absent: no bound. */
export interface TenantLimits {
  maxTools?: number;
  /** Bytes of tool definitions as the tenant's catalogs store them (each row's JSON, pushed or synced). */
  maxBytes?: number;
  maxCatalogs?: number;
  /** Upstreams registered through the API (UPSTREAMS_FILE's stdio servers, an operator's, are not counted). */
  maxUpstreams?: number;
}

export interface CatalogWrite {
  catalog: CatalogSummary;
  /** Hashes this write stored, for the first time or again after a sweep removed them: their embeddings are still to be computed. */
  newHashes: string[];
  /**
   * The names this write pointed at other content, when it made a new revision (the last one plus
   * one) and can tell them; undefined when it made none, or replaced the catalog whole.
   */
  changed?: string[];
}

/**
 * The transaction both catalog writes share: store the new documents, hold every document the write
 * references against the sweep, create or bump the catalog, let `mapTools` point its names at
 * hashes, and read the summary back. All of it lands, or none.
 */
async function writeCatalog(
  db: Db,
  tenant: string,
  name: string,
  /** Every document `mapTools` may reference; `unstored`: those not stored ahead. */
  documents: CountedDocument[],
  unstored: CountedDocument[],
  /**
   * `changed`: the names that now point at other content or at nothing (null: possibly any);
   * `sums`: what the catalog's definition tokens and bytes changed by.
   */
  limits: TenantLimits | undefined,
  mapTools: (tx: Executor, catalog: LockedCatalog) => Promise<{ changed: string[] | null; toolCount: number; sums: Sums }>,
): Promise<CatalogWrite> {
  // Locks in one order everywhere: documents (by hash), then the catalog row, then its tools.
  return retryOnConflict(() =>
    db.transaction(async (tx) => {
      const newHashes = await insertDocuments(tx, unstored);
      // Reused documents (stored ahead, or found stored just now) are removable until held: a sweep
      // between would fail the rows' foreign key (store/document-gc.ts); those it removed are stored again.
      newHashes.push(...(await holdDocuments(tx, documents, newHashes)));
      const locked = await lockOrCreateCatalog(tx, tenant, name);
      const { id, created } = locked;
      const { changed, toolCount, sums } = await mapTools(tx, locked);
      if (limits) await requireWithinLimits(tx, tenant, locked, { tools: toolCount, bytes: locked.bytes + sums.bytes }, limits);
      // Re-pushing an identical catalog is not a change: revision and updated_at move only when a
      // name now points at other content (clients and caches key on the revision). A definition
      // re-sent in another shape keeps its content (and revision) but may change its tokens as sent.
      if (created) {
        await tx.execute(sql`update catalogs set tool_count = ${toolCount}, ${addSums(sums)} where id = ${id}`);
      } else if (changed === null || changed.length > 0) {
        await tx.execute(sql`update catalogs set updated_at = now(), revision = revision + 1, tool_count = ${toolCount}, ${addSums(sums)} where id = ${id}`);
        await logChanges(tx, id, changed);
      } else if (sums.as_sent !== 0 || sums.anthropic !== 0 || sums.openai !== 0 || sums.bytes !== 0) {
        await tx.execute(sql`update catalogs set ${addSums(sums)} where id = ${id}`);
      }
      const catalog = (await getCatalog(tx, tenant, name))!;
      return { catalog, newHashes, ...(!created && changed !== null && changed.length > 0 ? { changed } : {}) };
    }),
  );
}

/**
 * 403 `quota_exceeded` (the transaction rolls back: nothing written) when a write that creates a
 * catalog or grows one (in tools, or in bytes under TENANT_MAX_BYTES) would take the tenant past
 * its limits. Growing writes of one tenant take a lock of the tenant's (after their catalog's, so
 * no two wait on each other in turn) and count the other catalogs as committed: two pushes racing
 * to the last places cannot both take them.
 */
async function requireWithinLimits(
  tx: Executor,
  tenant: string,
  locked: LockedCatalog,
  after: { tools: number; bytes: number },
  limits: TenantLimits,
): Promise<void> {
  const toolsGrow = locked.created || after.tools > locked.toolCount;
  const bytesGrow = limits.maxBytes !== undefined && after.bytes > locked.bytes;
  if (!toolsGrow && !bytesGrow) return;
  await lockTenant(tx, tenant);
  const [others] = await queryRows<{ catalogs: number; tools: number; bytes: number }>(
    tx,
    sql`select count(*)::int as catalogs, coalesce(sum(tool_count), 0)::bigint as tools, coalesce(sum(definition_bytes), 0)::bigint as bytes
        from catalogs where tenant = ${tenant} and id <> ${locked.id}`,
  );
  const catalogs = Number(others!.catalogs);
  const tools = Number(others!.tools) + after.tools;
  const bytes = Number(others!.bytes) + after.bytes;
  if (locked.created && limits.maxCatalogs !== undefined && catalogs + 1 > limits.maxCatalogs)
    throw new AppError('quota_exceeded', `this tenant has ${catalogs} catalogs, the most TENANT_MAX_CATALOGS allows (${limits.maxCatalogs}): delete one first`);
  if (toolsGrow && limits.maxTools !== undefined && tools > limits.maxTools)
    throw new AppError(
      'quota_exceeded',
      `this write would hold ${tools} tools over this tenant's catalogs, more than TENANT_MAX_TOOLS allows (${limits.maxTools}): nothing was written`,
    );
  if (bytesGrow && bytes > limits.maxBytes!)
    throw new AppError(
      'quota_exceeded',
      `this write would hold ${bytes} bytes of tool definitions over this tenant's catalogs, more than TENANT_MAX_BYTES allows (${limits.maxBytes}): nothing was written`,
    );
}

/**
 * The tenant's upstreams as TENANT_MAX_UPSTREAMS counts them, as a scalar subquery: UPSTREAMS_FILE's
 * stdio servers (url "stdio:<name>") are an operator's, not the tenant's registrations.
 */
export const tenantUpstreams = (tenant: string) =>
  sql`(select count(*)::int from mcp_upstreams u join catalogs c on c.id = u.catalog_id where c.tenant = ${tenant} and u.url not like 'stdio:%')`;

/** What one tenant holds, as TENANT_MAX_* count it. */
export interface TenantUsage {
  catalogs: number;
  tools: number;
  upstreams: number;
  bytes: number;
}

/** The tenant's catalogs, tools, upstreams (tenantUpstreams) and definition bytes: one statement over its catalogs' rows. */
export async function tenantUsage(db: Executor, tenant: string): Promise<TenantUsage> {
  const [row] = await queryRows<TenantUsage>(
    db,
    sql`select count(*)::int as catalogs, coalesce(sum(tool_count), 0)::float8 as tools, coalesce(sum(definition_bytes), 0)::float8 as bytes,
               ${tenantUpstreams(tenant)} as upstreams
        from catalogs where tenant = ${tenant}`,
  );
  return { catalogs: Number(row!.catalogs), tools: Number(row!.tools), upstreams: Number(row!.upstreams), bytes: Number(row!.bytes) };
}

/**
 * The tenant's lock for this transaction: every write that counts against TENANT_MAX_* takes it
 * (after its catalog's row), so two such writes of one tenant count one after the other.
 */
export async function lockTenant(tx: Executor, tenant: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`toolsift:tenant:${tenant}`}))`);
}

/** A catalog's row as a write locked it: its id, whether this write created it, its tool count and definition bytes before the write. */
interface LockedCatalog {
  id: number;
  created: boolean;
  toolCount: number;
  bytes: number;
}

/**
 * The catalog's row, locked for this transaction (writers of one catalog take its lock first,
 * then write its rows), or a new one at revision 1.
 */
async function lockOrCreateCatalog(tx: Executor, tenant: string, name: string): Promise<LockedCatalog> {
  const inserted = await queryRows<{ id: number }>(
    tx,
    sql`insert into catalogs (tenant, name) values (${tenant}, ${name}) on conflict (tenant, name) do nothing returning id`,
  );
  if (inserted[0]) return { id: inserted[0].id, created: true, toolCount: 0, bytes: 0 };
  const rows = await queryRows<{ id: number; toolCount: number; bytes: number }>(
    tx,
    sql`select id, tool_count as "toolCount", definition_bytes::float8 as bytes from catalogs where tenant = ${tenant} and name = ${name} for update`,
  );
  return { id: rows[0]!.id, created: false, toolCount: Number(rows[0]!.toolCount), bytes: Number(rows[0]!.bytes) };
}

/**
 * Replaces every tool of a catalog in one transaction: all of it lands, or none of it. `unstored`:
 * the documents not stored yet (all of them unless the caller stored them ahead).
 */
export async function replaceCatalog(
  db: Db,
  tenant: string,
  name: string,
  documents: CountedDocument[],
  unstored: CountedDocument[] = documents,
  limits?: TenantLimits,
): Promise<CatalogWrite> {
  return writeCatalog(db, tenant, name, documents, unstored, limits, async (tx, { id, created }) => {
    // Upstreams' tools are theirs: a replace changes the pushed tools and never takes an upstream's name.
    const held = created ? [] : await namesHeldByOthers(tx, id, [...new Set(documents.map((doc) => doc.tool.name))], null);
    if (held.length > 0) throw new NamesHeldError(held);
    // The names this replace changes, logged like an upsert's: a replica holding the old revision's
    // index derives the new one from them (a re-sent catalog with a few tools changed costs those
    // tools, not a whole read while searches rank in SQL). Past REPLACE_LOGGED_NAMES_MAX: "every tool".
    const changed = created ? [] : await replacedNames(tx, id, documents);
    // A whole replace sets the sums from its rows (whatever they held before).
    const sumsBefore = await storedSums(tx, id);
    await tx.execute(sql`delete from catalog_tools where catalog_id = ${id} and upstream is null`);
    await upsertMappings(tx, id, documents);
    const synced = created
      ? 0
      : Number((await queryRows<{ n: number }>(tx, sql`select count(*)::int as n from catalog_tools where catalog_id = ${id} and upstream is not null`))[0]!.n);
    return {
      changed,
      toolCount: new Set(documents.map((doc) => doc.tool.name)).size + synced,
      sums: sumsChange(sumsBefore, await toolSums(tx, id, null)),
    };
  });
}

/**
 * The most names a whole-catalog replace logs as changed: as many as a replica derives an index
 * through (search/catalog-index.ts DERIVE_MAX_NAMES); more, and it logs every tool as changed.
 */
export const REPLACE_LOGGED_NAMES_MAX = 20_000;

/**
 * The names a replace by `documents` changes: those it drops, adds, or points at other content.
 * Null when there are more than REPLACE_LOGGED_NAMES_MAX.
 */
async function replacedNames(tx: Executor, id: number, documents: CountedDocument[]): Promise<string[] | null> {
  const rows = await queryRows<{ name: string }>(
    tx,
    sql`select coalesce(o.name, n.name) as name
        from (select name, hash from catalog_tools where catalog_id = ${id} and upstream is null) o
        full join unnest(${sql.param(documents.map((doc) => doc.tool.name))}::text[], ${sql.param(documents.map((doc) => doc.hash))}::text[]) as n(name, hash) on n.name = o.name
        where o.hash is distinct from n.hash
        limit ${REPLACE_LOGGED_NAMES_MAX + 1}`,
  );
  return rows.length > REPLACE_LOGGED_NAMES_MAX ? null : rows.map((row) => row.name);
}

/** A tool a write would replace: its name and server. */
export interface HeldName {
  name: string;
  server: string | null;
}

/**
 * Adds tools to a catalog (creating it when missing) and replaces same-named ones; `unstored` as
 * above. `guard` is shown the tools the write would replace, under the catalog's lock, and refuses
 * by throwing (the transaction rolls back: nothing written).
 */
export async function upsertCatalogTools(
  db: Db,
  tenant: string,
  name: string,
  documents: CountedDocument[],
  unstored: CountedDocument[] = documents,
  limits?: TenantLimits,
  guard?: (held: readonly HeldName[]) => void,
): Promise<CatalogWrite> {
  return writeCatalog(db, tenant, name, documents, unstored, limits, async (tx, { id, toolCount: count }) => {
    // What the written names point at now: the change and the new count cost the slice, not the catalog.
    const names = [...new Map(documents.map((doc) => [doc.tool.name, doc.hash]))];
    const rows = await queryRows<{ name: string; hash: string; server: string | null }>(
      tx,
      sql`select ct.name, ct.hash, d.server from catalog_tools ct join tool_documents d on d.hash = ct.hash
          where ct.catalog_id = ${id} and ct.name = any(${sql.param(names.map(([toolName]) => toolName))}::text[])`,
    );
    // Before the holders are named: a guard's refusal says nothing of a tool its key does not see.
    guard?.(rows);
    const held = await namesHeldByOthers(
      tx,
      id,
      names.map(([toolName]) => toolName),
      null,
    );
    if (held.length > 0) throw new NamesHeldError(held);
    const existing = new Map(rows.map((row) => [row.name, row.hash]));
    const added = names.filter(([toolName]) => !existing.has(toolName)).length;
    const changed = names.filter(([toolName, hash]) => existing.get(toolName) !== hash).map(([toolName]) => toolName);
    const written = names.map(([toolName]) => toolName);
    const sumsBefore = await toolSums(tx, id, written);
    await upsertMappings(tx, id, documents);
    return { changed, toolCount: count + added, sums: sumsChange(sumsBefore, await toolSums(tx, id, written)) };
  });
}

/** What an upstream's tools were before `replaceServerTools`, by name (content hash). */
export type ServerToolsBefore = Map<string, string>;

/**
 * Replaces the catalog's tools of one upstream MCP server with `documents`, keeping every other
 * tool, in one transaction under the catalog's lock: a write of other tools that lands meanwhile is
 * never undone (reading the catalog first and replacing it whole would). A name another source of
 * the catalog holds (a pushed tool, another upstream's) stays with it: that document is left out and
 * returned in `held`, decided under the lock so a push racing the sync cannot lose its name.
 */
export async function replaceServerTools(
  db: Db,
  tenant: string,
  name: string,
  upstream: string,
  documents: CountedDocument[],
  unstored: CountedDocument[] = documents,
  limits?: TenantLimits,
): Promise<CatalogWrite & { before: ServerToolsBefore; held: { name: string; upstream: string | null }[] }> {
  let before: ServerToolsBefore = new Map();
  let held: { name: string; upstream: string | null }[] = [];
  const write = await writeCatalog(db, tenant, name, documents, unstored, limits, async (tx, { id, toolCount: count }) => {
    const rows = await queryRows<{ name: string; hash: string }>(
      tx,
      sql`select name, hash from catalog_tools where catalog_id = ${id} and upstream = ${upstream}`,
    );
    before = new Map(rows.map((row) => [row.name, row.hash]));
    held = await namesHeldByOthers(tx, id, [...new Set(documents.map((doc) => doc.tool.name))], upstream);
    const taken = new Set(held.map((row) => row.name));
    const kept = documents.filter((doc) => !taken.has(doc.tool.name));
    const names = new Set(kept.map((doc) => doc.tool.name));
    const gone = [...before.keys()].filter((toolName) => !names.has(toolName));
    const touched = [...new Set([...before.keys(), ...names])];
    const sumsBefore = await toolSums(tx, id, touched);
    if (gone.length > 0) {
      await tx.execute(sql`delete from catalog_tools where catalog_id = ${id} and upstream = ${upstream} and name = any(${sql.param(gone)}::text[])`);
    }
    const added = kept.filter((doc) => !before.has(doc.tool.name)).length;
    const changed = [...gone, ...kept.filter((doc) => before.get(doc.tool.name) !== doc.hash).map((doc) => doc.tool.name)];
    await upsertMappings(tx, id, kept, upstream);
    return { changed, toolCount: count - gone.length + added, sums: sumsChange(sumsBefore, await toolSums(tx, id, touched)) };
  });
  return { ...write, before, held };
}

/** The names of a catalog's tools that are not `upstream`'s: what a sync's names are compared with (confusables). */
export async function catalogToolNames(db: Executor, catalogId: number, upstream: string): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select name from catalog_tools where catalog_id = ${catalogId} and upstream is distinct from ${upstream}::text`,
  );
  return rows.map((row) => row.name);
}

/** Every tool of a catalog by name and server: what a key limited to some tools is told apart by, when no index is in hand. */
export async function catalogToolServers(db: Executor, catalogId: number): Promise<{ name: string; server: string | null }[]> {
  return queryRows<{ name: string; server: string | null }>(
    db,
    sql`select ct.name, d.server from catalog_tools ct join tool_documents d on d.hash = ct.hash where ct.catalog_id = ${catalogId}`,
  );
}

/** A catalog's tool as a catalog's totals are summed from: its server, content hash and definition tokens (null: not counted yet, 0 in the sums). */
export type ToolSize = { catalogId: number; name: string; server: string | null; hash: string } & Record<keyof DefinitionTokens, number | null>;

/** Every tool of the catalogs, with what their totals sum (`ToolSize`): what a key that sees only some tools is counted over. */
export async function catalogToolSizes(db: Executor, catalogIds: readonly number[]): Promise<ToolSize[]> {
  if (catalogIds.length === 0) return [];
  return queryRows<ToolSize>(
    db,
    sql`select ct.catalog_id as "catalogId", ct.name, d.server, ct.hash,
               d.tokens_anthropic as anthropic, d.tokens_openai as openai, ct.tokens_as_sent as as_sent
        from catalog_tools ct join tool_documents d on d.hash = ct.hash
        where ct.catalog_id = any(${sql.param([...catalogIds])}::int[])`,
  );
}

export async function deleteCatalogTool(db: Db, tenant: string, catalog: string, toolName: string): Promise<boolean> {
  return retryOnConflict(() =>
    db.transaction(async (tx) => {
      // The catalog row first, as every writer takes it: a write in flight finishes before this
      // looks for the tool, so a tool present in every committed state is always found.
      const rows = await queryRows<{ id: number }>(tx, sql`select id from catalogs where tenant = ${tenant} and name = ${catalog} for update`);
      const id = rows[0]?.id;
      if (id === undefined) return false;
      const owner = await queryRows<{ upstream: string | null }>(tx, sql`select upstream from catalog_tools where catalog_id = ${id} and name = ${toolName}`);
      if (owner[0]?.upstream) throw new NamesHeldError([{ name: toolName, upstream: owner[0].upstream }]);
      const tokens = await toolSums(tx, id, [toolName]);
      const deleted = await queryRows<{ name: string }>(tx, sql`delete from catalog_tools where catalog_id = ${id} and name = ${toolName} returning name`);
      if (deleted.length > 0) {
        await tx.execute(
          sql`update catalogs set updated_at = now(), revision = revision + 1, tool_count = tool_count - 1, ${addSums(sumsChange(tokens, NO_SUMS))} where id = ${id}`,
        );
        await logChanges(tx, id, [toolName]);
      }
      return deleted.length > 0;
    }),
  );
}

export async function deleteCatalog(db: Executor, tenant: string, name: string): Promise<boolean> {
  const rows = await retryOnConflict(() => queryRows<{ id: number }>(db, sql`delete from catalogs where tenant = ${tenant} and name = ${name} returning id`));
  return rows.length > 0;
}

/** What a catalog's settings may change: a field left out keeps its value; `resultScan` null returns it to the service's. */
export interface CatalogSettings {
  codeMode?: boolean;
  resultScan?: ResultScanMode | null;
}

/** Sets the catalog's settings; undefined when there is no such catalog. */
export async function updateCatalogSettings(db: Executor, tenant: string, name: string, settings: CatalogSettings): Promise<CatalogSummary | undefined> {
  const resultScan = settings.resultScan === undefined ? sql`result_scan` : sql`${settings.resultScan}::text`;
  const rows = await queryRows<SummaryRow>(
    db,
    sql`with updated as (
          update catalogs set code_mode = coalesce(${settings.codeMode ?? null}::boolean, code_mode), result_scan = ${resultScan}, updated_at = now()
          where tenant = ${tenant} and name = ${name} returning *)
        select ${summaryColumns} from updated c`,
  );
  return rows[0] ? normalizeSummary(rows[0]) : undefined;
}

export async function listCatalogs(db: Executor, tenant: string): Promise<CatalogSummary[]> {
  const rows = await queryRows<SummaryRow>(db, sql`select ${summaryColumns} from catalogs c where c.tenant = ${tenant} order by c.name`);
  return rows.map(normalizeSummary);
}

/** Every tenant's catalogs, the most recently written first, at most `limit`: what a replica reads at start (search/warm-up.ts). */
export async function recentCatalogs(db: Executor, limit: number): Promise<{ tenant: string; catalog: CatalogSummary }[]> {
  const rows = await queryRows<SummaryRow & { tenant: string }>(
    db,
    sql`select c.tenant, ${summaryColumns} from catalogs c order by c.updated_at desc, c.id desc limit ${limit}`,
  );
  return rows.map(({ tenant, ...row }) => ({ tenant, catalog: normalizeSummary(row) }));
}

/** A catalog's row; on the embedded store, from memory while nothing was written since it was read (read-cache.ts). */
export async function getCatalog(db: Executor, tenant: string, name: string): Promise<CatalogSummary | undefined> {
  return readThrough(
    db,
    `catalog\0${tenant}\0${name}`,
    async () => {
      const rows = await queryRows<SummaryRow>(db, sql`select ${summaryColumns} from catalogs c where c.tenant = ${tenant} and c.name = ${name}`);
      return rows[0] ? normalizeSummary(rows[0]) : undefined;
    },
    copySummary,
  );
}

const copySummary = (row: CatalogSummary): CatalogSummary => ({
  ...row,
  definitionTokens: { ...row.definitionTokens },
  createdAt: new Date(row.createdAt),
  updatedAt: new Date(row.updatedAt),
});

/** A catalog tool's columns (CatalogToolRow) over `catalog_tools ct join tool_documents d`. */
export const toolColumns = sql`ct.name, ct.hash, d.description, d.input_schema as "inputSchema", d.tags, d.server, ct.upstream, ct.definition,
  json_build_object('anthropic', d.tokens_anthropic, 'openai', d.tokens_openai, 'as_sent', ct.tokens_as_sent) as tokens`;

/** One page of a catalog's tools in name order; `after` is the last name of the previous page. */
export async function listCatalogTools(
  db: Executor,
  catalog: { tenant: string; name: string },
  page: { limit: number; after?: string },
): Promise<CatalogToolRow[]> {
  return queryRows<CatalogToolRow>(
    db,
    sql`select ${toolColumns}
        from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash
        where c.tenant = ${catalog.tenant} and c.name = ${catalog.name}
          ${page.after === undefined ? sql`` : sql`and ct.name collate "C" > ${page.after}`}
        order by ct.name collate "C"
        limit ${page.limit}`,
  );
}

export async function getCatalogTool(db: Executor, catalog: { tenant: string; name: string }, toolName: string): Promise<CatalogToolRow | undefined> {
  const rows = await queryRows<CatalogToolRow>(
    db,
    sql`select ${toolColumns}
        from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash
        where c.tenant = ${catalog.tenant} and c.name = ${catalog.name} and ct.name = ${toolName}`,
  );
  return rows[0];
}

/** The named tools of a catalog with their documents (search results are loaded last). */
export async function loadCatalogTools(db: Executor, catalogId: number, names: string[]): Promise<Map<string, CatalogToolRow>> {
  if (names.length === 0) return new Map();
  const rows = await queryRows<CatalogToolRow>(
    db,
    sql`select ${toolColumns}
        from catalog_tools ct join tool_documents d on d.hash = ct.hash
        where ct.catalog_id = ${catalogId} and ct.name = any(${sql.param(names)}::text[])`,
  );
  return new Map(rows.map((row) => [row.name, row]));
}

/** Which of `hashes` are in some catalog of `tenant` (job visibility, and what is new to a tenant). */
export async function tenantHashes(db: Executor, tenant: string, hashes: string[]): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`select distinct ct.hash from catalog_tools ct join catalogs c on c.id = ct.catalog_id
        where c.tenant = ${tenant} and ct.hash = any(${sql.param(hashes)}::text[])`,
  );
  return new Set(rows.map((row) => row.hash));
}

/** Catalog rows written before their definition tokens were counted (by an older release). */
export async function catalogRowsWithoutTokens(db: Executor, limit: number): Promise<{ catalogId: number; name: string; definition: unknown }[]> {
  return queryRows(
    db,
    sql`select catalog_id as "catalogId", name, definition from catalog_tools where tokens_as_sent is null
        order by catalog_id, name collate "C" limit ${limit}`,
  );
}

export async function setCatalogRowTokens(db: Executor, counts: { catalogId: number; name: string; asSent: number }[]): Promise<void> {
  if (counts.length === 0) return;
  await db.execute(
    sql`update catalog_tools ct set tokens_as_sent = v.as_sent
        from unnest(${sql.param(counts.map((row) => row.catalogId))}::int[], ${sql.param(counts.map((row) => row.name))}::text[],
                    ${sql.param(counts.map((row) => row.asSent))}::int[]) as v(catalog_id, name, as_sent)
        where ct.catalog_id = v.catalog_id and ct.name = v.name and ct.tokens_as_sent is null`,
  );
}

/**
 * Measures the definitions of catalog rows an older release wrote (no `definition_bytes`); how many.
 * Their catalogs' sums lack them until recountCatalogTokens.
 */
export async function measureCatalogRows(db: Executor): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`with measured as (update catalog_tools set definition_bytes = octet_length(definition::text) where definition_bytes is null returning 1)
        select count(*)::int as n from measured`,
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Sets every catalog's definition tokens to the sums of its rows, each under the catalog's lock (the
 * sums read after it is taken include every write that held it before).
 */
export async function recountCatalogTokens(db: Db): Promise<number> {
  const ids = await queryRows<{ id: number }>(db, sql`select id from catalogs order by id`);
  for (const { id } of ids) {
    await retryOnConflict(() =>
      db.transaction(async (tx) => {
        const locked = await queryRows<{ id: number }>(tx, sql`select id from catalogs where id = ${id} for update`);
        if (locked.length === 0) return;
        const sums = await toolSums(tx, id, null);
        await tx.execute(
          sql`update catalogs set tokens_anthropic = ${sums.anthropic}, tokens_openai = ${sums.openai}, tokens_as_sent = ${sums.as_sent},
              definition_bytes = ${sums.bytes} where id = ${id}`,
        );
      }),
    );
  }
  return ids.length;
}

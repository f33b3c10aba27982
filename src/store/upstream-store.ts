import type { ResultScanMode } from '../trust/result-scan-floor.js';
import { sql } from 'drizzle-orm';
import { AppError } from '../errors.js';
import type { PinPlan, PinRow } from '../trust/pins.js';
import { lockTenant, tenantUpstreams, toolColumns, type CatalogToolRow } from './catalog-store.js';
import { queryRows, retryOnConflict, type Db } from './database.js';
import type { Executor } from './tool-store.js';

export interface UpstreamRow {
  catalogId: number;
  catalog: string;
  tenant: string;
  name: string;
  url: string;
  headers: Record<string, string>;
  refreshSeconds: number;
  lastSyncAt: Date | null;
  toolCount: number;
  lastAdded: number | null;
  lastChanged: number | null;
  lastRemoved: number | null;
  lastError: string | null;
  trust: UpstreamTrust;
  /** When its tools were first pinned; null: the next sync pins what it lists, as a registration. */
  pinnedAt: Date | null;
  /** Tools the last sync left out because another source of the catalog holds their names. */
  conflicts: { name: string; held_by: string }[];
  /** How its tools' results are read; null: the service's RESULT_SCAN. */
  resultScan: UpstreamResultScan | null;
  /** Tools waiting for approval (their current definition neither approved nor rejected). */
  pending: number;
  /** Its OAuth state (upstream-oauth-store.ts) when registered with `auth.type` oauth: never a token or a secret. */
  oauth: UpstreamOAuthSummary | null;
}

export interface UpstreamOAuthSummary {
  grant: 'authorization_code' | 'client_credentials';
  status: 'authorized' | 'authorization_required' | 'refresh_failed';
  client: 'configured' | 'registered' | null;
  /** As the driver gives it (text or a Date). */
  expires_at: string | null;
  authorized_at: string | null;
  last_error: string | null;
}

export type UpstreamTrust = 'pin' | 'auto';
export type UpstreamResultScan = ResultScanMode;

const columns = sql`u.catalog_id as "catalogId", c.name as catalog, c.tenant, u.name, u.url, u.headers, u.refresh_seconds as "refreshSeconds",
  u.last_sync_at as "lastSyncAt", u.tool_count as "toolCount", u.last_added as "lastAdded", u.last_changed as "lastChanged",
  u.last_removed as "lastRemoved", u.last_error as "lastError", u.trust, u.pinned_at as "pinnedAt", u.conflicts, u.result_scan as "resultScan",
  (select count(*)::int from upstream_tools p where p.catalog_id = u.catalog_id and p.upstream = u.name
     and p.current_hash is distinct from p.approved_hash and p.current_hash is distinct from p.rejected_hash) as pending,
  (select json_build_object('grant', o.grant_type, 'status', o.status, 'expires_at', o.expires_at, 'authorized_at', o.authorized_at, 'last_error', o.last_error,
     'client', case when o.client_id is not null then 'configured' when o.client is not null then 'registered' end)
   from upstream_oauth o where o.catalog_id = u.catalog_id and o.upstream = u.name) as oauth`;

/**
 * Registers or changes an upstream and bumps its catalog's upstream revision, in one transaction
 * that locks the catalog's row first, as catalog writes and deletions do (no lock-order cycle).
 * False when the catalog is gone.
 */
/**
 * 403 `quota_exceeded` when registering a new upstream would give the tenant more than
 * `maxUpstreams`; one already registered may always be registered again. Counted under the
 * tenant's lock (lockTenant, taken after the catalog's row, as the catalog writes take it).
 */
async function requireUpstreamPlace(tx: Executor, tenant: string, catalogId: number, name: string, maxUpstreams: number): Promise<void> {
  const known = await queryRows<{ n: number }>(tx, sql`select 1 as n from mcp_upstreams where catalog_id = ${catalogId} and name = ${name}`);
  if (known.length > 0) return;
  await lockTenant(tx, tenant);
  const [held] = await queryRows<{ n: number }>(tx, sql`select ${tenantUpstreams(tenant)} as n`);
  if (Number(held!.n) >= maxUpstreams)
    throw new AppError('quota_exceeded', `this tenant has ${held!.n} upstreams, the most TENANT_MAX_UPSTREAMS allows (${maxUpstreams}): remove one first`);
}

export async function putUpstream(
  db: Db,
  catalogId: number,
  upstream: {
    name: string;
    url: string;
    headers: Record<string, string>;
    refreshSeconds: number;
    trust: UpstreamTrust;
    resultScan?: UpstreamResultScan | null;
  },
  /** TENANT_MAX_UPSTREAMS: a new registration past it is a 403 `quota_exceeded`, nothing written. */
  maxUpstreams?: number,
): Promise<boolean> {
  return retryOnConflict(() =>
    db.transaction(async (tx) => {
      const bumped = await queryRows<{ id: number; tenant: string }>(
        tx,
        sql`update catalogs set upstream_revision = upstream_revision + 1 where id = ${catalogId} returning id, tenant`,
      );
      if (bumped.length === 0) return false;
      if (maxUpstreams !== undefined) await requireUpstreamPlace(tx, bumped[0]!.tenant, catalogId, upstream.name, maxUpstreams);
      // Another URL is another server: its pins go, and its first sync pins afresh. The same URL
      // (new headers, say) keeps them: re-registering must not approve what waits in quarantine.
      const moved = await queryRows<{ name: string }>(
        tx,
        sql`select name from mcp_upstreams where catalog_id = ${catalogId} and name = ${upstream.name} and url <> ${upstream.url} for update`,
      );
      if (moved.length > 0) await tx.execute(sql`delete from upstream_tools where catalog_id = ${catalogId} and upstream = ${upstream.name}`);
      await tx.execute(sql`insert into mcp_upstreams (catalog_id, name, url, headers, refresh_seconds, trust, result_scan)
      values (${catalogId}, ${upstream.name}, ${upstream.url}, ${JSON.stringify(upstream.headers)}::json, ${upstream.refreshSeconds}, ${upstream.trust}, ${upstream.resultScan ?? null})
      on conflict (catalog_id, name) do update set url = excluded.url, headers = excluded.headers, refresh_seconds = excluded.refresh_seconds, trust = excluded.trust,
        result_scan = excluded.result_scan,
        pinned_at = case when mcp_upstreams.url = excluded.url then mcp_upstreams.pinned_at else null end`);
      return true;
    }),
  );
}

export async function getUpstream(db: Executor, tenant: string, catalog: string, name: string): Promise<UpstreamRow | undefined> {
  const rows = await queryRows<UpstreamRow>(
    db,
    sql`select ${columns} from mcp_upstreams u join catalogs c on c.id = u.catalog_id where c.tenant = ${tenant} and c.name = ${catalog} and u.name = ${name}`,
  );
  return rows[0];
}

export async function listUpstreams(db: Executor, tenant: string, catalog: string): Promise<UpstreamRow[]> {
  return queryRows<UpstreamRow>(
    db,
    sql`select ${columns} from mcp_upstreams u join catalogs c on c.id = u.catalog_id where c.tenant = ${tenant} and c.name = ${catalog} order by u.name`,
  );
}

/** Every upstream of a tenant, in catalog and name order. */
export async function listTenantUpstreams(db: Executor, tenant: string): Promise<UpstreamRow[]> {
  return queryRows<UpstreamRow>(
    db,
    sql`select ${columns} from mcp_upstreams u join catalogs c on c.id = u.catalog_id where c.tenant = ${tenant} order by c.name collate "C", u.name collate "C"`,
  );
}

/** Every upstream whose url starts with `prefix` (the operator's stdio servers: `stdio:`), of every tenant. */
export async function upstreamsByUrlPrefix(db: Executor, prefix: string): Promise<UpstreamRow[]> {
  return queryRows<UpstreamRow>(
    db,
    sql`select ${columns} from mcp_upstreams u join catalogs c on c.id = u.catalog_id where starts_with(u.url, ${prefix}) order by c.tenant, c.name, u.name`,
  );
}

/** Removes an upstream and bumps its catalog's upstream revision, in one transaction (the catalog's row first, as above). */
export async function deleteUpstream(db: Db, catalogId: number, name: string): Promise<boolean> {
  return retryOnConflict(() =>
    db.transaction(async (tx) => {
      await tx.execute(sql`update catalogs set upstream_revision = upstream_revision + 1 where id = ${catalogId}`);
      const rows = await queryRows<{ name: string }>(tx, sql`delete from mcp_upstreams where catalog_id = ${catalogId} and name = ${name} returning name`);
      return rows.length > 0;
    }),
  );
}

export async function recordSync(
  db: Executor,
  catalogId: number,
  name: string,
  outcome:
    | { toolCount: number; added: number; changed: number; removed: number; conflicts: { name: string; held_by: string }[]; error: string | null }
    | { error: string },
): Promise<void> {
  if (!('toolCount' in outcome)) {
    await db.execute(
      sql`update mcp_upstreams set last_sync_at = now(), last_error = ${outcome.error}, sync_lease_until = null where catalog_id = ${catalogId} and name = ${name}`,
    );
  } else {
    await db.execute(sql`update mcp_upstreams set last_sync_at = now(), last_error = ${outcome.error}, tool_count = ${outcome.toolCount}, last_added = ${outcome.added},
      last_changed = ${outcome.changed}, last_removed = ${outcome.removed}, conflicts = ${JSON.stringify(outcome.conflicts)}::json,
      pinned_at = coalesce(pinned_at, now()), sync_lease_until = null where catalog_id = ${catalogId} and name = ${name}`);
  }
}

/** Records an upstream's failure seen outside a sync (its OAuth token could not be renewed for a call): its sync state shows it. */
export async function recordUpstreamError(db: Executor, catalogId: number, name: string, error: string): Promise<void> {
  await db.execute(sql`update mcp_upstreams set last_error = ${error} where catalog_id = ${catalogId} and name = ${name}`);
}

/** Records the served tools' count after an approval or rejection changed them (no sync ran). */
export async function recordServed(
  db: Executor,
  catalogId: number,
  name: string,
  toolCount: number,
  conflicts: { name: string; held_by: string }[],
): Promise<void> {
  await db.execute(
    sql`update mcp_upstreams set tool_count = ${toolCount}, conflicts = ${JSON.stringify(conflicts)}::json where catalog_id = ${catalogId} and name = ${name}`,
  );
}

/** A pin as the driver returns it: `changed_at` as text or a Date, by driver. */
type PinRowText = Omit<PinRow, 'changedAt'> & { changedAt: string | Date };

/** An upstream's pins, by name. */
export async function listPins(db: Executor, catalogId: number, upstream: string): Promise<PinRow[]> {
  const rows = await queryRows<PinRowText>(
    db,
    sql`select name, current_hash as "currentHash", current_definition as "currentDefinition", findings, approved_hash as "approvedHash",
          approved_definition as "approvedDefinition", rejected_hash as "rejectedHash", changed_at as "changedAt"
        from upstream_tools where catalog_id = ${catalogId} and upstream = ${upstream} order by name collate "C"`,
  );
  return rows.map((row) => ({ ...row, changedAt: new Date(row.changedAt) }));
}

/**
 * Writes a sync's plan: every listed tool's current definition and findings, the approvals the
 * plan made (others keep the store's approved and rejected hashes, so an approval landing while
 * the sync ran is not undone), and the removal of tools no longer listed, in one transaction.
 */
export async function writePins(db: Db, catalogId: number, upstream: string, plan: PinPlan): Promise<void> {
  await retryOnConflict(() =>
    db.transaction(async (tx) => {
      await tx.execute(sql`delete from upstream_tools where catalog_id = ${catalogId} and upstream = ${upstream}
      and not (name = any(${sql.param(plan.rows.map((row) => row.name))}::text[]))`);
      if (plan.rows.length === 0) return;
      await tx.execute(sql`insert into upstream_tools (catalog_id, upstream, name, current_hash, current_definition, findings, approved_hash, approved_definition, changed_at)
      select ${catalogId}, ${upstream}, r.name, r.current_hash, r.current_definition::json, r.findings::json,
             case when r.approve then r.current_hash end, case when r.approve then r.current_definition::json end, r.changed_at
      from unnest(
        ${sql.param(plan.rows.map((row) => row.name))}::text[],
        ${sql.param(plan.rows.map((row) => row.currentHash))}::text[],
        ${sql.param(plan.rows.map((row) => JSON.stringify(row.currentDefinition)))}::text[],
        ${sql.param(plan.rows.map((row) => JSON.stringify(row.findings)))}::text[],
        ${sql.param(plan.rows.map((row) => plan.approvedNow.has(row.name)))}::boolean[],
        ${sql.param(plan.rows.map((row) => row.changedAt.toISOString()))}::timestamptz[]
      ) as r(name, current_hash, current_definition, findings, approve, changed_at)
      on conflict (catalog_id, upstream, name) do update set
        current_hash = excluded.current_hash, current_definition = excluded.current_definition, findings = excluded.findings,
        changed_at = case when upstream_tools.current_hash = excluded.current_hash then upstream_tools.changed_at else excluded.changed_at end,
        approved_hash = coalesce(excluded.approved_hash, upstream_tools.approved_hash),
        approved_definition = case when excluded.approved_hash is null then upstream_tools.approved_definition else excluded.approved_definition end`);
    }),
  );
}

/** Which of an upstream's tools an approval or rejection names: all waiting ones, or these (each optionally at the hash its caller saw). */
export type PinSelection = null | { name: string; hash?: string }[];

/**
 * Approves (the current definition becomes the approved one) or rejects (it stays out until it
 * changes; an approved tool rejected leaves) the selected tools, in one statement. A name whose
 * current hash is not the one its caller saw is left alone and returned as `stale`. With no
 * selection, `among` keeps the decision to the waiting tools of these names (those a key sees):
 * the waiting set is still read by the update itself, so a tool decided meanwhile is not decided again.
 */
export async function decidePins(
  db: Executor,
  catalogId: number,
  upstream: string,
  decision: 'approve' | 'reject',
  selection: PinSelection,
  among?: readonly string[],
): Promise<{ decided: { name: string; hash: string }[]; stale: string[]; unknown: string[] }> {
  const pending = sql`current_hash is distinct from approved_hash and current_hash is distinct from rejected_hash`;
  const names = selection?.map((item) => item.name) ?? [];
  const hashes = selection?.map((item) => item.hash ?? '') ?? [];
  const chosen =
    selection === null
      ? among
        ? sql`${pending} and name = any(${sql.param([...among])}::text[])`
        : pending
      : sql`exists (select 1 from unnest(${sql.param(names)}::text[], ${sql.param(hashes)}::text[]) as s(n, h)
                    where s.n = upstream_tools.name and (s.h = '' or s.h = upstream_tools.current_hash))`;
  const set =
    decision === 'approve'
      ? sql`approved_hash = current_hash, approved_definition = current_definition, rejected_hash = null`
      : sql`rejected_hash = current_hash, approved_hash = case when approved_hash = current_hash then null else approved_hash end,
            approved_definition = case when approved_hash = current_hash then null else approved_definition end`;
  const decided = await queryRows<{ name: string; hash: string }>(
    db,
    sql`update upstream_tools set ${set} where catalog_id = ${catalogId} and upstream = ${upstream} and ${chosen} returning name, current_hash as hash`,
  );
  if (selection === null) return { decided, stale: [], unknown: [] };
  const present = new Set(
    (
      await queryRows<{ name: string }>(
        db,
        sql`select name from upstream_tools where catalog_id = ${catalogId} and upstream = ${upstream} and name = any(${sql.param(names)}::text[])`,
      )
    ).map((row) => row.name),
  );
  const done = new Set(decided.map((row) => row.name));
  return { decided, stale: names.filter((name) => present.has(name) && !done.has(name)), unknown: names.filter((name) => !present.has(name)) };
}

/**
 * Upstreams due for a refresh whose sync lease this replica now holds (one replica syncs a given
 * upstream at a time; a lease that outlives a crashed replica expires).
 */
export async function claimDueUpstreams(db: Executor, leaseSeconds: number): Promise<UpstreamRow[]> {
  const claimed = await queryRows<{ catalogId: number; name: string }>(
    db,
    sql`update mcp_upstreams set sync_lease_until = now() + make_interval(secs => ${leaseSeconds})
        where (last_sync_at is null or last_sync_at + make_interval(secs => refresh_seconds) <= now())
          and (sync_lease_until is null or sync_lease_until < now())
        returning catalog_id as "catalogId", name`,
  );
  if (claimed.length === 0) return [];
  const rows = await queryRows<UpstreamRow>(db, sql`select ${columns} from mcp_upstreams u join catalogs c on c.id = u.catalog_id`);
  const keys = new Set(claimed.map((row) => `${row.catalogId}\0${row.name}`));
  return rows.filter((row) => keys.has(`${row.catalogId}\0${row.name}`));
}

/**
 * A catalog's tool and the upstream that synced it (null for a pushed tool, whatever its `server`
 * says: a call reaches only the upstream that listed the tool), in one statement: what call_tool
 * needs before it can forward a call.
 */
export async function getToolWithUpstream(
  db: Executor,
  tenant: string,
  catalog: string,
  toolName: string,
): Promise<(Omit<CatalogToolRow, 'upstream'> & { upstream: UpstreamRow | null }) | undefined> {
  const rows = await queryRows<
    CatalogToolRow & { upstreamRow: (Omit<UpstreamRow, 'lastSyncAt' | 'pinnedAt'> & { lastSyncAt: string | null; pinnedAt: string | null }) | null }
  >(
    db,
    sql`select ${toolColumns}, case when up."catalogId" is null then null else row_to_json(up) end as "upstreamRow"
        from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash
          left join lateral (select ${columns} from mcp_upstreams u where u.catalog_id = c.id and u.name = ct.upstream) up on true
        where c.tenant = ${tenant} and c.name = ${catalog} and ct.name = ${toolName}`,
  );
  const found = rows[0];
  if (!found) return undefined;
  const { upstreamRow, ...row } = found;
  const upstream = upstreamRow
    ? {
        ...upstreamRow,
        lastSyncAt: upstreamRow.lastSyncAt === null ? null : new Date(upstreamRow.lastSyncAt),
        pinnedAt: upstreamRow.pinnedAt === null ? null : new Date(upstreamRow.pinnedAt),
      }
    : null;
  return { ...row, upstream };
}

/** The names of the tools an upstream synced into its catalog (served: approved as listed now). */
export async function upstreamToolNames(db: Executor, catalogId: number, upstream: string): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(db, sql`select name from catalog_tools where catalog_id = ${catalogId} and upstream = ${upstream}`);
  return rows.map((row) => row.name);
}

/**
 * The tools of a catalog that its upstreams `upstreams` synced, and those holding the names
 * `held` (their conflicts), each by name, server and the upstream that synced it (null: pushed):
 * what an upstream's counts are narrowed by for a key that sees only some tools.
 */
export async function upstreamToolOwners(
  db: Executor,
  tenant: string,
  catalog: string,
  upstreams: readonly string[],
  held: readonly string[],
): Promise<{ name: string; server: string | null; upstream: string | null }[]> {
  return queryRows<{ name: string; server: string | null; upstream: string | null }>(
    db,
    sql`select ct.name, d.server, ct.upstream
        from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash
        where c.tenant = ${tenant} and c.name = ${catalog}
          and (ct.upstream = any(${sql.param([...upstreams])}::text[]) or ct.name = any(${sql.param([...held])}::text[]))`,
  );
}

/** The pins of a catalog's upstreams `upstreams` without their definitions: by upstream and name, what their status is read from. */
export async function upstreamPinStates(
  db: Executor,
  tenant: string,
  catalog: string,
  upstreams: readonly string[],
): Promise<(Pick<PinRow, 'name' | 'currentHash' | 'approvedHash' | 'rejectedHash'> & { upstream: string })[]> {
  return queryRows<Pick<PinRow, 'name' | 'currentHash' | 'approvedHash' | 'rejectedHash'> & { upstream: string }>(
    db,
    sql`select p.upstream, p.name, p.current_hash as "currentHash", p.approved_hash as "approvedHash", p.rejected_hash as "rejectedHash"
        from catalogs c join upstream_tools p on p.catalog_id = c.id
        where c.tenant = ${tenant} and c.name = ${catalog} and p.upstream = any(${sql.param([...upstreams])}::text[])`,
  );
}

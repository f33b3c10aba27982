import { sql } from 'drizzle-orm';
import { toolColumns, type CatalogToolRow } from './catalog-store.js';
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
}

const columns = sql`u.catalog_id as "catalogId", c.name as catalog, c.tenant, u.name, u.url, u.headers, u.refresh_seconds as "refreshSeconds",
  u.last_sync_at as "lastSyncAt", u.tool_count as "toolCount", u.last_added as "lastAdded", u.last_changed as "lastChanged",
  u.last_removed as "lastRemoved", u.last_error as "lastError"`;

/**
 * Registers or changes an upstream and bumps its catalog's upstream revision, in one transaction
 * that locks the catalog's row first, as catalog writes and deletions do (no lock-order cycle).
 * False when the catalog is gone.
 */
export async function putUpstream(db: Db, catalogId: number, upstream: { name: string; url: string; headers: Record<string, string>; refreshSeconds: number }): Promise<boolean> {
  return retryOnConflict(() => db.transaction(async (tx) => {
    const bumped = await queryRows<{ id: number }>(tx, sql`update catalogs set upstream_revision = upstream_revision + 1 where id = ${catalogId} returning id`);
    if (bumped.length === 0) return false;
    await tx.execute(sql`insert into mcp_upstreams (catalog_id, name, url, headers, refresh_seconds)
      values (${catalogId}, ${upstream.name}, ${upstream.url}, ${JSON.stringify(upstream.headers)}::json, ${upstream.refreshSeconds})
      on conflict (catalog_id, name) do update set url = excluded.url, headers = excluded.headers, refresh_seconds = excluded.refresh_seconds`);
    return true;
  }));
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

/** Removes an upstream and bumps its catalog's upstream revision, in one transaction (the catalog's row first, as above). */
export async function deleteUpstream(db: Db, catalogId: number, name: string): Promise<boolean> {
  return retryOnConflict(() => db.transaction(async (tx) => {
    await tx.execute(sql`update catalogs set upstream_revision = upstream_revision + 1 where id = ${catalogId}`);
    const rows = await queryRows<{ name: string }>(tx, sql`delete from mcp_upstreams where catalog_id = ${catalogId} and name = ${name} returning name`);
    return rows.length > 0;
  }));
}

export async function recordSync(
  db: Executor,
  catalogId: number,
  name: string,
  outcome: { toolCount: number; added: number; changed: number; removed: number } | { error: string },
): Promise<void> {
  if ('error' in outcome) {
    await db.execute(sql`update mcp_upstreams set last_sync_at = now(), last_error = ${outcome.error}, sync_lease_until = null where catalog_id = ${catalogId} and name = ${name}`);
  } else {
    await db.execute(sql`update mcp_upstreams set last_sync_at = now(), last_error = null, tool_count = ${outcome.toolCount}, last_added = ${outcome.added},
      last_changed = ${outcome.changed}, last_removed = ${outcome.removed}, sync_lease_until = null where catalog_id = ${catalogId} and name = ${name}`);
  }
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
 * A catalog's tool and the upstream its `server` names (null when none is registered), in one
 * statement: what call_tool needs before it can forward a call.
 */
export async function getToolWithUpstream(
  db: Executor,
  tenant: string,
  catalog: string,
  toolName: string,
): Promise<(CatalogToolRow & { upstream: UpstreamRow | null }) | undefined> {
  const rows = await queryRows<CatalogToolRow & { upstream: (Omit<UpstreamRow, 'lastSyncAt'> & { lastSyncAt: string | null }) | null }>(
    db,
    sql`select ${toolColumns}, case when up."catalogId" is null then null else row_to_json(up) end as upstream
        from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash
          left join lateral (select ${columns} from mcp_upstreams u where u.catalog_id = c.id and u.name = d.server) up on true
        where c.tenant = ${tenant} and c.name = ${catalog} and ct.name = ${toolName}`,
  );
  const row = rows[0];
  if (!row) return undefined;
  const upstream = row.upstream ? { ...row.upstream, lastSyncAt: row.upstream.lastSyncAt === null ? null : new Date(row.upstream.lastSyncAt) } : null;
  return { ...row, upstream };
}

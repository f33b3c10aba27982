import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type Db } from './database.js';
import type { Executor } from './tool-store.js';

/** One use of a tool after a query, as stored (migration 0016). */
export interface FeedbackEventRow {
  id: number;
  query: string;
  toolName: string;
  caller: string;
  strength: number;
  /** The query's embedding, when it was embedded by the model the reader asked for. */
  queryVector: number[] | null;
  /** The tools shown with it and not used; null: not told. */
  passedOver: string[] | null;
  /** Seconds since the epoch. */
  at: number;
}

export interface NewFeedbackEvent {
  query: string;
  toolName: string;
  toolHash: string;
  caller: string;
  strength: number;
  embedding?: { model: string; vector: number[] };
  passedOver?: string[];
}

/** The current definition hash of each of `names` in the catalog (names it does not hold are absent). */
export async function currentHashes(db: Executor, catalogId: number, names: string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const rows = await queryRows<{ name: string; hash: string }>(
    db,
    sql`select name, hash from catalog_tools where catalog_id = ${catalogId} and name = any(${sql.param(names)}::text[])`,
  );
  return new Map(rows.map((row) => [row.name, row.hash]));
}

/**
 * Writes events of one catalog, then keeps of each caller's events of each tool definition written
 * only the newest `keep`, in one transaction: what one caller stores is bounded by the tools the
 * catalog holds, however many events it sends.
 */
export async function insertFeedback(db: Db, catalogId: number, events: NewFeedbackEvent[], keep: number): Promise<void> {
  if (events.length === 0) return;
  await db.transaction(async (tx) => {
    await insertEvents(tx, catalogId, events);
    const toolsByCaller = new Map<string, Set<string>>();
    for (const event of events) toolsByCaller.set(event.caller, (toolsByCaller.get(event.caller) ?? new Set()).add(event.toolName));
    for (const [caller, tools] of toolsByCaller) {
      await tx.execute(sql`delete from feedback_events where id in (
        select id from (
          select id, row_number() over (partition by tool_name, tool_hash order by id desc) as newer
          from feedback_events
          where catalog_id = ${catalogId} and caller = ${caller} and tool_name = any(${sql.param([...tools])}::text[])
        ) ranked where newer > ${keep})`);
    }
  });
}

async function insertEvents(db: Executor, catalogId: number, events: NewFeedbackEvent[]): Promise<void> {
  const values = events.map(
    (event) =>
      sql`(${catalogId}, ${event.query}, ${event.toolName}, ${event.toolHash}, ${event.caller}, ${event.strength}, ${event.embedding?.model ?? null}, ${
        event.embedding ? sql`${sql.param(event.embedding.vector)}::real[]` : sql`null`
      }, ${event.passedOver ? sql`${sql.param(event.passedOver)}::text[]` : sql`null`})`,
  );
  await db.execute(
    sql`insert into feedback_events (catalog_id, query, tool_name, tool_hash, caller, strength, query_model, query_vector, passed_over) values ${sql.join(values, sql`, `)}`,
  );
}

/**
 * The catalog's events after `afterId` (oldest first, at most `limit`) that judged a definition the
 * catalog still holds, newer than `sinceSeconds` ago: a tool changed or removed since loses them.
 * Vectors only of `model`'s embeddings.
 */
export async function loadFeedback(
  db: Db,
  catalogId: number,
  options: { afterId: number; sinceSeconds: number; model: string | null; limit: number },
): Promise<FeedbackEventRow[]> {
  return queryRows<FeedbackEventRow>(
    db,
    sql`select f.id::float8 as id, f.query, f.tool_name as "toolName", f.caller, f.strength,
          case when f.query_model = ${options.model} then f.query_vector else null end as "queryVector", f.passed_over as "passedOver",
          extract(epoch from f.created_at)::float8 as at
        from feedback_events f join catalog_tools ct on ct.catalog_id = f.catalog_id and ct.name = f.tool_name and ct.hash = f.tool_hash
        where f.catalog_id = ${catalogId} and f.id > ${options.afterId}
          and f.created_at > now() - make_interval(secs => ${options.sinceSeconds})
        order by f.id limit ${options.limit}`,
  );
}

/** The id after which the catalog's newest `newest` events are (0: it holds no more than that). */
export async function feedbackStart(db: Db, catalogId: number, newest: number): Promise<number> {
  const rows = await queryRows<{ id: number }>(
    db,
    sql`select id::float8 as id from feedback_events where catalog_id = ${catalogId} order by id desc offset ${newest} limit 1`,
  );
  return rows[0]?.id ?? 0;
}

/** Forgets every event of the catalog; the number forgotten. */
export async function deleteFeedback(db: Db, catalogId: number): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`with gone as (delete from feedback_events where catalog_id = ${catalogId} returning 1) select count(*)::int as n from gone`,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Events one statement of a purge looks at, by store: PGlite's other statements wait while one
 * runs (1,000 took 7-10 ms, 5,000 ~35 ms: `npm run bench:learned`); PostgreSQL's only bounds it.
 */
export const PURGE_PAGE = { pglite: 1_000, postgres: 5_000 } as const;

/**
 * Removes events older than the retention, and events of a definition their catalog no longer
 * holds (the tool changed or removed: loadFeedback never reads them again), a page at a time;
 * the numbers removed. What a tenant's events take is then bounded by its keys and the tools it
 * holds (each caller keeps LEARNED_EVENTS_PER_TOOL a definition), however often it changes them.
 */
export async function purgeFeedback(db: Db, retentionSeconds: number, page: number): Promise<{ expired: number; stale: number }> {
  const removed = { expired: 0, stale: 0 };
  const remove = async (chosen: SQL) => {
    const rows = await queryRows<{ n: number }>(
      db,
      sql`with gone as (delete from feedback_events where id in (${chosen}) returning 1) select count(*)::int as n from gone`,
    );
    return rows[0]?.n ?? 0;
  };
  for (;;) {
    const n = await remove(sql`select id from feedback_events where created_at < now() - make_interval(secs => ${retentionSeconds}) limit ${page}`);
    removed.expired += n;
    if (n < page) break;
  }
  // Stale events window by window of `page` ids in order: each statement looks at that many at most.
  for (let low = 0; ; ) {
    const [window] = await queryRows<{ high: number | null }>(
      db,
      sql`select max(id)::float8 as high from (select id from feedback_events where id > ${low} order by id limit ${page}) w`,
    );
    const high = window?.high;
    if (high == null) return removed;
    removed.stale += await remove(
      sql`select f.id from feedback_events f where f.id > ${low} and f.id <= ${high} and not exists (
            select 1 from catalog_tools ct where ct.catalog_id = f.catalog_id and ct.name = f.tool_name and ct.hash = f.tool_hash)`,
    );
    low = high;
  }
}

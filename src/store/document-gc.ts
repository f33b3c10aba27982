import { sql } from 'drizzle-orm';
import type { Logger } from '../logger.js';
import { queryRows, type Db } from './database.js';
import { inBackground } from './priority.js';
import { insertDocuments, type CountedDocument, type Executor } from './tool-store.js';

/**
 * Removing documents that nothing uses any more: no catalog row names them, and no request used
 * them (or stored them) within the retention (DOCUMENT_RETENTION_HOURS). Documents are shared by
 * every catalog, tenant and inline request, so "unused" is decided in the store, never by a tenant.
 *
 * How a sweep and a catalog write that reuses a stored document stay out of each other's way
 * (PostgreSQL, read committed; PGlite runs one transaction at a time, so there only the gap between a
 * write's transactions matters):
 * - The sweep locks the expired, unreferenced documents of a page `for update skip locked`, then, in
 *   a second statement (a new snapshot), deletes those that still no catalog row names. A catalog
 *   row can only be committed while its writer holds its document `for key share` (the foreign
 *   key's check takes it, `holdDocuments` below takes it first), which the sweep's lock excludes:
 *   a row committed before the sweep locked is seen by the second statement, and none can commit
 *   after it until the sweep ends. A document a writer already holds is skipped, never waited for.
 * - A catalog write holds every document it is about to reference `for key share` in its own
 *   transaction, before its rows (`holdDocuments`), and stores again any the sweep removed since
 *   it looked: documents stored ahead of a large write's transaction (catalog-service.ts
 *   `writeAhead`), or found stored by this transaction's insert, which does not lock what it finds.
 *   So a write never fails on the foreign key because a sweep ran in between; it writes the removed
 *   document again instead, with its terms, and its embedding is queued again.
 * - The foreign key itself (catalog_tools.hash, no action) stays the last word: a delete of a
 *   document some row names fails rather than leave the row without its document.
 */

/** Hours to milliseconds, for DOCUMENT_RETENTION_HOURS. */
export const retentionMs = (hours: number): number => hours * 3_600_000;

/**
 * How often a document in use is marked as used (store/document-use.ts) and how often the store is
 * swept: a quarter of the retention, at most an hour. A document used at least once a retention
 * then always has a mark less than half a retention old (the last mark may predate the last use by
 * up to two intervals: one for this process's throttle, one for another replica's recent mark).
 */
export function documentUseIntervalMs(retention: number): number {
  return Math.min(3_600_000, retention / 4);
}

/**
 * Documents a sweep examines per transaction, by store (at most this many removed at once). PGlite
 * runs one statement at a time, and removing a document also removes its ~21 term rows and its
 * vectors: 200 keep each pause of every other statement short; PostgreSQL only bounds the
 * transaction's size and locks.
 */
export const SWEEP_PAGE = { pglite: 200, postgres: 1_000 } as const;

/** The pause between a sweep's pages: the store serves requests between them. */
export const SWEEP_PAUSE_MS = 100;

/** Where a sweep's walk over the expired documents, oldest first, goes on from. */
export interface SweepCursor {
  /** `last_used_at` as PostgreSQL prints it: a JavaScript Date would drop its microseconds. */
  usedAt: string;
  hash: string;
}

export interface SweepPage {
  examined: number;
  removed: number;
  /** Where the next page starts; undefined when this page reached the newest expired document. */
  next?: SweepCursor;
}

const expiredBefore = (retention: number) => sql`now() - ${retention / 1000}::float8 * interval '1 second'`;

/**
 * One page of a sweep, in one transaction: the next `pageSize` expired documents after `after`,
 * and of them, those no catalog holds removed with their terms (their vectors cascade). The walk
 * reads the documents catalogs hold once a sweep instead of once a page.
 */
export async function sweepPage(db: Db, options: { retentionMs: number; pageSize: number; after?: SweepCursor }): Promise<SweepPage> {
  const { retentionMs: retention, pageSize, after } = options;
  return inBackground(() =>
    db.transaction(async (tx) => {
      const rows = await queryRows<{ hash: string; usedAt: string; unheld: boolean }>(
        tx,
        sql`with page as (
              select hash, last_used_at from tool_documents
              where last_used_at < ${expiredBefore(retention)}
                ${after ? sql`and (last_used_at, hash) > (${after.usedAt}::timestamptz, ${after.hash}::text)` : sql``}
              order by last_used_at, hash
              limit ${pageSize}
            ),
            unheld as (
              select d.hash from tool_documents d
              where d.hash in (select hash from page) and d.last_used_at < ${expiredBefore(retention)}
                and not exists (select 1 from catalog_tools ct where ct.hash = d.hash)
              order by d.hash
              for update of d skip locked
            )
            select p.hash, p.last_used_at::text as "usedAt", u.hash is not null as unheld
            from page p left join unheld u on u.hash = p.hash
            order by p.last_used_at, p.hash`,
      );
      const last = rows.at(-1);
      const next = rows.length < pageSize || !last ? undefined : { usedAt: last.usedAt, hash: last.hash };
      const locked = rows.filter((row) => row.unheld).map((row) => row.hash);
      if (locked.length === 0) return { examined: rows.length, removed: 0, ...(next ? { next } : {}) };
      // A new snapshot: sees every catalog row committed before the locks above were taken.
      const removed = await queryRows<{ n: number }>(
        tx,
        sql`with gone as (
              delete from tool_documents d
              where d.hash = any(${sql.param(locked)}::text[])
                and not exists (select 1 from catalog_tools ct where ct.hash = d.hash)
              returning d.hash
            ),
            terms as (delete from tool_terms t where t.hash in (select hash from gone))
            select count(*)::int as n from gone`,
      );
      return { examined: rows.length, removed: Number(removed[0]?.n ?? 0), ...(next ? { next } : {}) };
    }),
  );
}

export interface SweepResult {
  examined: number;
  removed: number;
  pages: number;
  ms: number;
}

export interface SweepOptions {
  retentionMs: number;
  pageSize: number;
  pauseMs?: number;
  /** Told each page's removals as they commit (the metrics count them). */
  onRemoved?: (count: number) => void;
  /** Checked between pages: a sweep stops early when it says so (shutdown). */
  stopped?: () => boolean;
}

/** Every expired document examined once, page by page with a pause between pages. */
export async function sweepDocuments(db: Db, options: SweepOptions): Promise<SweepResult> {
  const started = performance.now();
  const result = { examined: 0, removed: 0, pages: 0 };
  let after: SweepCursor | undefined;
  do {
    if (result.pages > 0) await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? SWEEP_PAUSE_MS));
    if (options.stopped?.()) break;
    const page = await sweepPage(db, { retentionMs: options.retentionMs, pageSize: options.pageSize, after });
    result.pages += 1;
    result.examined += page.examined;
    result.removed += page.removed;
    if (page.removed > 0) options.onRemoved?.(page.removed);
    after = page.next;
  } while (after);
  return { ...result, ms: performance.now() - started };
}

/**
 * The service's periodic sweep: every `everyMs` (give or take a quarter, so replicas started
 * together do not sweep together; sweeping side by side is safe, only wasted), one sweep at a time.
 */
export class DocumentSweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<SweepResult> | undefined;
  #stopped = false;

  constructor(
    private readonly db: Db,
    private readonly options: Omit<SweepOptions, 'stopped'> & {
      everyMs: number;
      logger: Logger;
      /** Other rows past their retention, swept with the documents (feedback events). */
      alsoSweep?: () => Promise<void>;
    },
  ) {}

  start(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => void this.#tick(), this.options.everyMs * (0.75 + Math.random() / 2));
    this.#timer.unref();
  }

  /** One whole sweep now (a sweep already running is joined); rejects with what stopped it. */
  sweep(): Promise<SweepResult> {
    this.#running ??= this.#sweep().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** No further sweeps; waits for the page in hand (the sweep stops between pages). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  async #tick(): Promise<void> {
    try {
      await this.sweep();
    } catch (error) {
      // A page that lost a deadlock or found the store down removed nothing; the next sweep goes on.
      this.options.logger.warn({ err: error }, 'document sweep failed; the next one tries again');
    } finally {
      this.#timer = undefined;
      this.start();
    }
  }

  async #sweep(): Promise<SweepResult> {
    const result = await sweepDocuments(this.db, { ...this.options, stopped: () => this.#stopped });
    await this.options.alsoSweep?.();
    if (result.removed > 0) {
      this.options.logger.info(
        {
          removed: result.removed,
          examined: result.examined,
          pages: result.pages,
          ms: Math.round(result.ms),
          retentionHours: this.options.retentionMs / 3_600_000,
        },
        'removed documents no catalog holds and no request used within the retention',
      );
    }
    return result;
  }
}

/**
 * Rounds of holding and storing again in `holdDocuments`. A document stored again in a round is
 * this transaction's own and cannot be removed; one found stored by another writer meanwhile was
 * just stored, and stays for a whole retention: a second round holds it.
 */
const HOLD_ROUNDS = 3;

/**
 * Holds the documents a catalog write is about to reference `for key share`, in hash order, for the
 * rest of its transaction, so no sweep removes them before its rows commit; those removed since the
 * write stored or found them are stored again (with their terms). `own`: hashes this transaction
 * inserted (nobody else sees them). Returns the hashes stored again: their embeddings are missing.
 */
export async function holdDocuments(tx: Executor, documents: CountedDocument[], own: Iterable<string> = []): Promise<string[]> {
  const mine = new Set(own);
  let pending = [...new Map(documents.filter((doc) => !mine.has(doc.hash)).map((doc) => [doc.hash, doc])).values()].sort((a, b) =>
    a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0,
  );
  const restored: string[] = [];
  for (let round = 0; round < HOLD_ROUNDS && pending.length > 0; round++) {
    const held = await queryRows<{ hash: string }>(
      tx,
      sql`select hash from tool_documents where hash = any(${sql.param(pending.map((doc) => doc.hash))}::text[]) order by hash for key share`,
    );
    const found = new Set(held.map((row) => row.hash));
    const removed = pending.filter((doc) => !found.has(doc.hash));
    if (removed.length === 0) break;
    const stored = new Set(await insertDocuments(tx, removed));
    restored.push(...stored);
    pending = removed.filter((doc) => !stored.has(doc.hash));
  }
  return restored;
}

/**
 * Marks documents as used now, unless marked within `everyMs` (another replica's mark will do), and
 * returns those of `hashes` that are not stored (any more): the caller stores them again. A
 * document the sweep is removing at that moment may be reported as stored; the next mark finds it.
 */
export async function touchDocuments(db: Executor, hashes: string[], everyMs: number): Promise<string[]> {
  if (hashes.length === 0) return [];
  const rows = await queryRows<{ hash: string }>(
    db,
    sql`with touched as (
          update tool_documents set last_used_at = now()
          where hash = any(${sql.param(hashes)}::text[]) and last_used_at < now() - ${everyMs / 1000}::float8 * interval '1 second'
        )
        select h.hash from unnest(${sql.param(hashes)}::text[]) as h(hash)
        where not exists (select 1 from tool_documents d where d.hash = h.hash)`,
  );
  return rows.map((row) => row.hash);
}

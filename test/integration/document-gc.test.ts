/**
 * Removing stored documents nothing uses any more (store/document-gc.ts): no catalog holds them and
 * no request used them within the retention. Every test ages its own documents rather than waiting
 * out a retention. The sweep is store-wide by nature, so these tests run on a database of their own:
 * in the shared one they would sweep every other test's documents.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceCatalog, upsertTools, type CatalogDeps } from '../../src/catalog/catalog-service.js';
import * as catalogStore from '../../src/store/catalog-store.js';
import { InProcessEmbedQueue } from '../../src/jobs/in-process-queue.js';
import { selectTools } from '../../src/search/selector.js';
import { queryRows, type Db } from '../../src/store/database.js';
import { DocumentSweeper, sweepDocuments, sweepPage, type SweepCursor } from '../../src/store/document-gc.js';
import { DocumentUse } from '../../src/store/document-use.js';
import { writeVectors } from '../../src/store/embedding-store.js';
import { STORE_CONCURRENCY, STORE_SLICE, storeDocuments } from '../../src/store/tool-store.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { observing, scratchDatabase, storeKind, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import { testEmbedder } from '../helpers/embedder.js';
import { toDocuments, uniqueTools } from '../helpers/queue.js';

const HOUR = 3_600_000;
const silent = pino({ level: 'silent' });
/** A model id no real embedder has: vectors written by hand, to see them cascade. */
const FAKE_MODEL = { model: 'gc-test-model', textVersion: 1 };

let scratch: ScratchDatabase;
const db = (): Db => scratch.database.db;

beforeAll(async () => {
  scratch = await scratchDatabase(storeKind(), 'toolsift_gc');
});
afterAll(async () => {
  await scratch?.drop();
});

/** Makes the documents look unused for `hours` (what waiting out a retention would do). */
async function age(hashes: string[], hours: number): Promise<void> {
  await db().execute(sql`update tool_documents set last_used_at = now() - ${hours}::float8 * interval '1 hour' where hash = any(${sql.param(hashes)}::text[])`);
}

/** How many of `hashes` have a document, terms and a vector of FAKE_MODEL. */
async function stored(hashes: string[]): Promise<{ documents: number; withTerms: number; withVectors: number }> {
  const rows = await queryRows<{ documents: number; withTerms: number; withVectors: number }>(
    db(),
    sql`select (select count(*) from tool_documents where hash = any(${sql.param(hashes)}::text[]))::int as documents,
               (select count(distinct hash) from tool_terms where hash = any(${sql.param(hashes)}::text[]))::int as "withTerms",
               (select count(*) from tool_embeddings where hash = any(${sql.param(hashes)}::text[]) and model = ${FAKE_MODEL.model})::int as "withVectors"`,
  );
  return rows[0]!;
}

const sweep = (retentionHours = 1, pageSize = 1_000) => sweepDocuments(db(), { retentionMs: retentionHours * HOUR, pageSize, pauseMs: 0 });

const catalogDeps = (): CatalogDeps => ({ db: db(), writeSlice: STORE_SLICE[storeKind()], writeConcurrency: STORE_CONCURRENCY[storeKind()] });

/** Removes what a test left (its catalogs first), so the next test's sweeps count only their own. */
async function cleanUp(refs: { tenant: string; name: string }[], hashes: string[]): Promise<void> {
  for (const ref of refs) await catalogStore.deleteCatalog(db(), ref.tenant, ref.name);
  await age(hashes, 10_000);
  await sweep(5_000);
}

describe('the sweep', () => {
  it("removes a deleted catalog's documents after the retention, with their terms and vectors, and keeps those any catalog holds", async () => {
    const own = uniqueTools(3, 'gc_own');
    const shared = uniqueTools(2, 'gc_shared');
    const ownHashes = toDocuments(own).map((doc) => doc.hash);
    const sharedHashes = toDocuments(shared).map((doc) => doc.hash);
    const first = { tenant: uniqueName('gc-t1'), name: uniqueName('gc-c1') };
    const second = { tenant: uniqueName('gc-t2'), name: uniqueName('gc-c2') };
    await replaceCatalog(catalogDeps(), first, [...own, ...shared]);
    await replaceCatalog(catalogDeps(), second, shared);
    await writeVectors(
      db(),
      FAKE_MODEL,
      [...ownHashes, ...sharedHashes].map((hash) => ({ hash, vector: [1, 0, 0, 0] })),
    );
    expect(await stored(ownHashes)).toEqual({ documents: 3, withTerms: 3, withVectors: 3 });

    // Unused for longer than the retention, but held by a catalog: kept.
    await age([...ownHashes, ...sharedHashes], 2);
    await sweep();
    expect(await stored(ownHashes)).toEqual({ documents: 3, withTerms: 3, withVectors: 3 });

    // The first tenant's catalog deleted: its own documents go, those the other tenant's catalog holds stay.
    await catalogStore.deleteCatalog(db(), first.tenant, first.name);
    const result = await sweep();
    expect(result.removed).toBe(3);
    expect(await stored(ownHashes)).toEqual({ documents: 0, withTerms: 0, withVectors: 0 });
    expect(await stored(sharedHashes)).toEqual({ documents: 2, withTerms: 2, withVectors: 2 });

    // The second one deleted too, but its documents used within the retention: kept until they expire.
    await catalogStore.deleteCatalog(db(), second.tenant, second.name);
    await age(sharedHashes, 0.5);
    expect((await sweep()).removed).toBe(0);
    expect(await stored(sharedHashes)).toEqual({ documents: 2, withTerms: 2, withVectors: 2 });
    await age(sharedHashes, 2);
    expect((await sweep()).removed).toBe(2);
    expect(await stored(sharedHashes)).toEqual({ documents: 0, withTerms: 0, withVectors: 0 });
  });

  it('works in pages of at most its page size, from where the last page ended, and reports what it removed', async () => {
    const orphans = toDocuments(uniqueTools(25, 'gc_page'));
    const heldTools = uniqueTools(5, 'gc_page_held');
    const ref = { tenant: uniqueName('gc-t'), name: uniqueName('gc-pages') };
    await storeDocuments(db(), orphans);
    await replaceCatalog(catalogDeps(), ref, heldTools);
    const heldHashes = toDocuments(heldTools).map((doc) => doc.hash);
    // Older than anything else of this database: the walk meets these first, interleaved.
    await age([...orphans.map((doc) => doc.hash), ...heldHashes], 100);

    const pages: { examined: number; removed: number }[] = [];
    let after: SweepCursor | undefined;
    do {
      const page = await sweepPage(db(), { retentionMs: 50 * HOUR, pageSize: 10, after });
      pages.push({ examined: page.examined, removed: page.removed });
      after = page.next;
    } while (after);
    expect(pages.map((page) => page.examined)).toEqual([10, 10, 10, 0]);
    expect(pages.every((page) => page.removed <= 10)).toBe(true);
    expect(pages.reduce((sum, page) => sum + page.removed, 0)).toBe(25);
    expect((await stored(orphans.map((doc) => doc.hash))).documents).toBe(0);
    expect((await stored(heldHashes)).documents).toBe(5);

    // The service's sweeper: the same walk, its removals counted as they commit, and one log line.
    const more = toDocuments(uniqueTools(12, 'gc_page_more'));
    await storeDocuments(db(), more);
    await age(
      more.map((doc) => doc.hash),
      100,
    );
    const lines: { msg: string; removed?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let counted = 0;
    const sweeper = new DocumentSweeper(db(), {
      retentionMs: 50 * HOUR,
      pageSize: 5,
      pauseMs: 0,
      everyMs: HOUR,
      logger,
      onRemoved: (count) => (counted += count),
    });
    const result = await sweeper.sweep();
    expect(result).toMatchObject({ removed: 12, examined: 17, pages: 4 });
    expect(counted).toBe(12);
    expect(lines.filter((line) => line.msg.startsWith('removed documents'))).toMatchObject([{ removed: 12 }]);
    expect((await sweeper.sweep()).removed).toBe(0);
    expect(lines.filter((line) => line.msg.startsWith('removed documents'))).toHaveLength(1);
    await sweeper.stop();
    await cleanUp([ref], heldHashes);
  });
});

describe('documents requests use', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({}, { database: scratch.database });
  });
  afterAll(() => app?.close());

  it('are kept while a selector request uses them, and stored again when swept while the selector still held them', async () => {
    let clock = 0;
    const use = new DocumentUse(db(), { everyMs: 60_000, logger: silent, now: () => clock });
    const deps = { ...app.deps.selector, documentUse: use };
    const tools = uniqueTools(6, 'gc_selector');
    const hashes = toDocuments(tools).map((doc) => doc.hash);
    const unused = toDocuments(uniqueTools(2, 'gc_unused'));
    await storeDocuments(db(), unused, undefined, 1, { withTerms: false });
    const turn = async () => {
      const selection = await selectTools(deps, { pattern: 'request number 3', topK: 2, alwaysKeep: [], tools, toolsKey: `gc-${hashes[0]}` });
      await selection.stored;
      await use.flush();
      await deps.background.settled();
      return selection;
    };

    await turn();
    expect((await stored(hashes)).documents).toBe(6);
    // A quiet spell longer than the retention, then the same list again: marked as used, so kept.
    await age([...hashes, ...unused.map((doc) => doc.hash)], 2);
    clock += 61_000;
    await turn();
    await sweep();
    expect((await stored(hashes)).documents).toBe(6);
    expect((await stored(unused.map((doc) => doc.hash))).documents).toBe(0);

    // Within the interval, another turn writes nothing (one mark an interval).
    await age(hashes, 2);
    clock += 1_000;
    await turn();
    const marked = await queryRows<{ n: number }>(
      db(),
      sql`select count(*)::int as n from tool_documents where hash = any(${sql.param(hashes)}::text[]) and last_used_at > now() - interval '1 hour'`,
    );
    expect(marked[0]!.n).toBe(0);

    // Swept while this process still holds the list as stored: the next marking stores the tools again.
    await sweep();
    expect((await stored(hashes)).documents).toBe(0);
    clock += 61_000;
    const selection = await turn();
    expect(selection.names.length).toBe(2);
    expect(selection.fallback).not.toBe('store_error');
    expect((await stored(hashes)).documents).toBe(6);
    await cleanUp([], hashes);
  });

  it('are marked by one statement per interval, and not written again when another replica marked them within it', async () => {
    const documents = toDocuments(uniqueTools(4, 'gc_marks'));
    const hashes = documents.map((doc) => doc.hash);
    await storeDocuments(db(), documents);
    await age(hashes, 2);
    const statements: string[] = [];
    const seen = observing(db(), (text) => statements.push(text));
    let clock = 0;
    const replica = new DocumentUse(seen, { everyMs: 60_000, logger: silent, now: () => clock });
    const missing = replica.touch(hashes);
    replica.touch(hashes.slice(0, 2));
    await replica.flush();
    expect(await missing).toEqual(new Set());
    expect(statements).toHaveLength(1);
    const after = await queryRows<{ t: string }>(
      db(),
      sql`select max(last_used_at)::text as t from tool_documents where hash = any(${sql.param(hashes)}::text[])`,
    );

    clock += 30_000;
    replica.touch(hashes);
    await replica.flush();
    expect(statements).toHaveLength(1);

    // Another replica, which has not marked them itself: its statement finds them marked, and leaves them.
    const other = new DocumentUse(db(), { everyMs: 60_000, logger: silent });
    await Promise.all([other.touch(hashes), other.flush()]);
    const again = await queryRows<{ t: string }>(
      db(),
      sql`select max(last_used_at)::text as t from tool_documents where hash = any(${sql.param(hashes)}::text[])`,
    );
    expect(again[0]!.t).toBe(after[0]!.t);

    // A document that is not stored is reported as such.
    const gone = toDocuments(uniqueTools(1, 'gc_never'))[0]!.hash;
    clock += 60_000;
    const reported = replica.touch([...hashes, gone]);
    await replica.flush();
    expect(await reported).toEqual(new Set([gone]));
    await cleanUp([], hashes);
  });
});

describe('catalog writes and the sweep', () => {
  it('a write whose documents were stored ahead and then swept stores them again, with their terms', async () => {
    const tools = uniqueTools(5, 'gc_ahead');
    const documents = toDocuments(tools);
    const hashes = documents.map((doc) => doc.hash);
    const ref = { tenant: uniqueName('gc-t'), name: uniqueName('gc-ahead') };
    // As catalog-service's writeAhead does for a large write: documents first, the catalog later.
    await storeDocuments(db(), documents);
    await age(hashes, 2);
    expect((await sweep()).removed).toBeGreaterThanOrEqual(5);
    expect((await stored(hashes)).documents).toBe(0);
    const write = await catalogStore.replaceCatalog(db(), ref.tenant, ref.name, documents, []);
    expect(write.catalog.toolCount).toBe(5);
    expect(write.newHashes.sort()).toEqual([...hashes].sort());
    expect(await stored(hashes)).toMatchObject({ documents: 5, withTerms: 5 });
    await cleanUp([ref], hashes);
  });

  it('pushes of the same tools racing repeated sweeps all succeed, and every catalog ends with all its tools', async () => {
    const small = uniqueTools(24, 'gc_race');
    // Past one write-ahead slice: documents stored in transactions of their own before the catalog's.
    const large = uniqueTools(600, 'gc_race_large');
    const hashes = toDocuments([...small, ...large]).map((doc) => doc.hash);
    const queued: string[][] = [];
    const withQueue: CatalogDeps = { ...catalogDeps(), onDocumentsWritten: async (batch) => (queued.push(batch), [`job-${queued.length}`]) };
    const tenant = uniqueName('gc-race');
    let removed = 0;
    const rounds = storeKind() === 'postgres' ? 6 : 3;
    for (let round = 0; round < rounds; round++) {
      const refs = Array.from({ length: 5 }, (_, i) => ({ tenant, name: uniqueName(`gc-race-${round}-${i}`) }));
      // Stored, unused for longer than the retention, and no catalog holds them: every sweep's prey.
      await age(hashes, 2);
      let pushing = true;
      const first = await sweepPage(db(), { retentionMs: HOUR, pageSize: 7 });
      removed += first.removed;
      const sweeps = (async () => {
        while (pushing) removed += (await sweepDocuments(db(), { retentionMs: HOUR, pageSize: 7, pauseMs: 0 })).removed;
      })();
      const pushes = [
        replaceCatalog(catalogDeps(), refs[0]!, small),
        upsertTools(catalogDeps(), refs[1]!, [...small].reverse()),
        replaceCatalog(withQueue, refs[2]!, small),
        replaceCatalog(round % 2 ? withQueue : catalogDeps(), refs[3]!, large),
        upsertTools(catalogDeps(), refs[4]!, [...large.slice(300), ...small]),
      ];
      const outcomes = await Promise.allSettled(pushes);
      pushing = false;
      await sweeps;
      expect(outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String((outcome as PromiseRejectedResult).reason))).toEqual([]);
      const expected = [small.length, small.length, small.length, large.length, 300 + small.length];
      for (const [i, ref] of refs.entries()) {
        const rows = await queryRows<{ tools: number; documents: number; withTerms: number }>(
          db(),
          sql`select count(*)::int as tools, count(d.hash)::int as documents,
                     count(*) filter (where exists (select 1 from tool_terms t where t.hash = ct.hash))::int as "withTerms"
              from catalogs c join catalog_tools ct on ct.catalog_id = c.id left join tool_documents d on d.hash = ct.hash
              where c.tenant = ${ref.tenant} and c.name = ${ref.name}`,
        );
        expect(rows[0], ref.name).toEqual({ tools: expected[i], documents: expected[i], withTerms: expected[i] });
      }
      for (const ref of refs) await catalogStore.deleteCatalog(db(), ref.tenant, ref.name);
    }
    // The sweeps did take documents the pushes were about to reuse.
    expect(removed).toBeGreaterThan(0);
    await cleanUp([], hashes);
  });

  it.skipIf(storeKind() !== 'postgres')(
    'on PostgreSQL: a write waiting on a sweep that removes its document stores it again; a sweep skips what a write holds',
    async () => {
      const documents = toDocuments(uniqueTools(3, 'gc_locks'));
      const hashes = documents.map((doc) => doc.hash);
      await storeDocuments(db(), documents);
      await age(hashes, 2);
      const client = new pg.Client({ connectionString: scratch.url });
      await client.connect();
      try {
        // A sweep in the middle of its transaction: one document locked and deleted, not committed yet.
        await client.query('begin');
        await client.query('select hash from tool_documents where hash = $1 for update', [hashes[0]]);
        await client.query('delete from tool_terms where hash = $1', [hashes[0]]);
        await client.query('delete from tool_documents where hash = $1', [hashes[0]]);
        const ref = { tenant: uniqueName('gc-t'), name: uniqueName('gc-locks') };
        let settled = false;
        const write = catalogStore.replaceCatalog(db(), ref.tenant, ref.name, documents, []).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        await client.query('commit');
        const done = await write;
        expect(done.newHashes).toEqual([hashes[0]]);
        expect(await stored(hashes)).toMatchObject({ documents: 3, withTerms: 3 });
        await catalogStore.deleteCatalog(db(), ref.tenant, ref.name);

        // A catalog write in the middle of its transaction, its rows naming the documents: the sweep
        // neither waits for it nor removes them; once it rolls back, they go.
        await age(hashes, 2);
        await client.query('begin');
        const { rows } = await client.query(`insert into catalogs (tenant, name) values ($1, $2) returning id`, [uniqueName('gc-t'), uniqueName('gc-open')]);
        await client.query(`insert into catalog_tools (catalog_id, name, hash, definition) select $1, 'tool_' || h, h, '{}'::json from unnest($2::text[]) h`, [
          rows[0].id,
          hashes,
        ]);
        const started = performance.now();
        expect((await sweep()).removed).toBe(0);
        expect(performance.now() - started).toBeLessThan(2_000);
        expect((await stored(hashes)).documents).toBe(3);
        await client.query('rollback');
        expect((await sweep()).removed).toBe(3);
      } finally {
        await client.end();
      }
    },
  );

  it('a tool pushed again after its documents were swept is stored and embedded again', async () => {
    const embedder = await testEmbedder();
    const queue = new InProcessEmbedQueue(db(), embedder, { batchSize: 32, concurrency: 1, logger: silent });
    try {
      const deps: CatalogDeps = { ...catalogDeps(), onDocumentsWritten: (hashes) => queue.enqueue(hashes) };
      const tools = uniqueTools(3, 'gc_embed');
      const hashes = toDocuments(tools).map((doc) => doc.hash);
      const ref = { tenant: uniqueName('gc-t'), name: uniqueName('gc-embed') };
      const vectors = async () =>
        (
          await queryRows<{ n: number }>(
            db(),
            sql`select count(*)::int as n from tool_embeddings where hash = any(${sql.param(hashes)}::text[]) and model = ${embedder.modelId}`,
          )
        )[0]!.n;

      const first = await replaceCatalog(deps, ref, tools);
      await queue.whenIdle();
      expect(await vectors()).toBe(3);
      await catalogStore.deleteCatalog(db(), ref.tenant, ref.name);
      await age(hashes, 2);
      expect((await sweep()).removed).toBe(3);
      expect(await vectors()).toBe(0);

      const again = await replaceCatalog(deps, ref, tools);
      // The same batch as before (its job id is the same): run again, not taken for done.
      expect(again.jobIds).toEqual(first.jobIds);
      await queue.whenIdle();
      expect(await vectors()).toBe(3);
      expect((await stored(hashes)).documents).toBe(3);
      await cleanUp([ref], hashes);
    } finally {
      await queue.close();
    }
  });
});

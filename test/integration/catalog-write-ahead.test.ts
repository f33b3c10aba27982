import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceCatalog, upsertTools, WRITE_AHEAD_SLICE, writeAheadSlices, type CatalogDeps } from '../../src/catalog/catalog-service.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { queryRows, type Db } from '../../src/store/database.js';
import { scratchDatabase, storeKind, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import { toDocuments, uniqueTools } from '../helpers/queue.js';

interface QueueCall {
  hashes: string[];
  /** Whether the catalog existed when the queue was called. */
  catalogExisted: boolean;
  /** How many of the hashes were stored documents with terms when the queue was called. */
  storedWithTerms: number;
}

/** A recording stand-in for the embedding queue: what it was asked, and what the store held then. */
function recordingQueue(db: Db, tenant: string, catalog: string, fail = false) {
  const calls: QueueCall[] = [];
  const onDocumentsWritten = async (hashes: string[]): Promise<string[]> => {
    const stored = await queryRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from tool_documents d
          where d.hash = any(${sql.param(hashes)}::text[]) and exists (select 1 from tool_terms t where t.hash = d.hash)`,
    );
    calls.push({ hashes, catalogExisted: (await getCatalog(db, tenant, catalog)) !== undefined, storedWithTerms: stored[0]!.n });
    if (fail) throw new Error('queue unavailable');
    return [`job-${calls.length}`];
  };
  return { calls, onDocumentsWritten };
}

/**
 * A database of the describe's own, made before its tests and dropped after them: these documents
 * never get vectors, and in the shared one every queue test's sweep would find them and embed them.
 */
function ownDatabase(prefix: string): () => Db {
  let scratch: ScratchDatabase | undefined;
  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), prefix);
  });
  afterAll(async () => {
    await scratch?.drop();
  });
  return () => scratch!.database.db;
}

describe('write-ahead slice sizes', () => {
  it('are none up to one slice, then start small and double up to WRITE_AHEAD_SLICE, covering every document', () => {
    expect(writeAheadSlices(0)).toEqual([]);
    expect(writeAheadSlices(WRITE_AHEAD_SLICE)).toEqual([]);
    expect(writeAheadSlices(WRITE_AHEAD_SLICE + 1)).toEqual([64, 128, 256, 65]);
    expect(writeAheadSlices(4076)).toEqual([64, 128, 256, 512, 512, 512, 512, 512, 512, 512, 44]);
    for (const count of [513, 600, 1000, 4076, 10_000]) {
      const sizes = writeAheadSlices(count);
      expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(count);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(WRITE_AHEAD_SLICE);
      expect(sizes.every((size) => size > 0)).toBe(true);
    }
  });
});

describe('a catalog write larger than one write-ahead slice', () => {
  const count = 2 * WRITE_AHEAD_SLICE + 37;
  const database = ownDatabase('toolsift_ahead');

  it('queues each slice as soon as its documents are stored, before the catalog changes, each hash once', async () => {
    const db = database();
    const ref = { tenant: uniqueName('tenant'), name: uniqueName('ahead') };
    const tools = uniqueTools(count, 'ahead');
    const hashes = toDocuments(tools).map((doc) => doc.hash);
    const queue = recordingQueue(db, ref.tenant, ref.name);
    const deps: CatalogDeps = { db, onDocumentsWritten: queue.onDocumentsWritten };

    const result = await replaceCatalog(deps, ref, tools);
    // Slices of 64, 128, 256, 512 and the 101 left.
    expect(queue.calls.map((call) => call.hashes.length)).toEqual([64, 128, 256, 512, 101]);
    expect(queue.calls.map((call) => call.catalogExisted)).toEqual([false, false, false, false, false]);
    expect(queue.calls.map((call) => call.storedWithTerms)).toEqual([64, 128, 256, 512, 101]);
    expect(queue.calls.flatMap((call) => call.hashes).sort()).toEqual([...hashes].sort());
    expect(result).toMatchObject({ newDocuments: count, jobIds: ['job-1', 'job-2', 'job-3', 'job-4', 'job-5'] });
    expect(result.catalog.toolCount).toBe(count);

    // The same tools again: nothing is new, so the one call after the write hands the queue every
    // hash (it enqueues only those without a vector), as for a small request.
    const again = recordingQueue(db, ref.tenant, ref.name);
    const second = await upsertTools({ db, onDocumentsWritten: again.onDocumentsWritten }, ref, tools);
    expect(again.calls).toHaveLength(1);
    expect(again.calls[0]).toMatchObject({ catalogExisted: true, storedWithTerms: count });
    expect(second.newDocuments).toBe(0);
  });

  it('with the queue away, still writes the catalog, then fails with the queue error after it', async () => {
    const db = database();
    const ref = { tenant: uniqueName('tenant'), name: uniqueName('ahead-down') };
    const tools = uniqueTools(count, 'ahead-down');
    const queue = recordingQueue(db, ref.tenant, ref.name, true);

    await expect(replaceCatalog({ db, onDocumentsWritten: queue.onDocumentsWritten }, ref, tools)).rejects.toThrow('queue unavailable');
    // One try ahead; then every hash it did not take is offered once more after the catalog commit.
    expect(queue.calls.map((call) => [call.hashes.length, call.catalogExisted])).toEqual([
      [64, false],
      [count, true],
    ]);
    expect((await getCatalog(db, ref.tenant, ref.name))?.toolCount).toBe(count);
  });

  it('rejects a request with a bad tool before storing anything', async () => {
    const db = database();
    const ref = { tenant: uniqueName('tenant'), name: uniqueName('ahead-bad') };
    const tools: unknown[] = uniqueTools(count, 'ahead-bad');
    tools[count - 1] = { name: '', description: 'no name' };
    const queue = recordingQueue(db, ref.tenant, ref.name);
    await expect(replaceCatalog({ db, onDocumentsWritten: queue.onDocumentsWritten }, ref, tools)).rejects.toMatchObject({ code: 'invalid_tool' });
    expect(queue.calls).toEqual([]);
    const stored = await queryRows<{ n: number }>(
      db,
      sql`select count(*)::int as n from tool_documents where hash = any(${sql.param(toDocuments(tools.slice(0, 10)).map((doc) => doc.hash))}::text[])`,
    );
    expect(stored[0]!.n).toBe(0);
  });
});

describe('a large catalog write with nothing to embed', () => {
  const database = ownDatabase('toolsift_ahead_plain');

  it('stores its documents ahead of the catalog, two slice transactions at a time', async () => {
    const db = database();
    const tools = uniqueTools(3 * WRITE_AHEAD_SLICE, 'plain');
    let active = 0;
    let most = 0;
    let transactions = 0;
    // The store as the service has it, counting transactions open at once.
    const counted = new Proxy(db, {
      get(target, key, receiver) {
        if (key !== 'transaction') return Reflect.get(target, key, receiver);
        return async (work: never) => {
          transactions++;
          most = Math.max(most, ++active);
          try {
            return await target.transaction(work);
          } finally {
            active--;
          }
        };
      },
    });
    const result = await replaceCatalog({ db: counted, writeSlice: 100, writeConcurrency: 2 }, { tenant: uniqueName('tenant'), name: 'plain' }, tools);
    expect(result).toMatchObject({ newDocuments: tools.length, catalog: { toolCount: tools.length } });
    // 16 slices of up to 100 documents, then the catalog's own transaction.
    expect(transactions).toBe(Math.ceil(tools.length / 100) + 1);
    // Two are open at once from here on both stores: PostgreSQL runs them side by side, PGlite's
    // thread runs the second once the first has ended (the service gives PGlite a concurrency of 1).
    expect(most).toBe(2);
  });

  it('overlapping writers racing it all land whole, each document stored once with its terms', async () => {
    const db = database();
    const tenant = uniqueName('tenant');
    const tools = uniqueTools(3 * WRITE_AHEAD_SLICE, 'racing');
    // Three writers of the same tools in different orders to three catalogs at once: each slice
    // locks its hashes in order, so no two transactions wait on each other in a cycle.
    const deps: CatalogDeps = { db, writeSlice: 100, writeConcurrency: 2 };
    const orders = [tools, [...tools].reverse(), [...tools.slice(700), ...tools.slice(0, 700)]];
    const results = await Promise.all(orders.map((order, index) => replaceCatalog(deps, { tenant, name: `racing-${index}` }, order)));
    for (const result of results) expect(result.catalog.toolCount).toBe(tools.length);
    const hashes = toDocuments(tools).map((doc) => doc.hash);
    const stored = await queryRows<{ documents: number; withTerms: number }>(
      db,
      sql`select count(*)::int as documents, count(*) filter (where exists (select 1 from tool_terms t where t.hash = d.hash))::int as "withTerms"
          from tool_documents d where d.hash = any(${sql.param(hashes)}::text[])`,
    );
    expect(stored[0]).toEqual({ documents: tools.length, withTerms: tools.length });
  });
});

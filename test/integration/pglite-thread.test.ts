// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgliteThread, spawnPgliteWorker } from '../../src/store/pglite-thread.js';
import { isDatabaseUnavailable, openPglite, queryRows, type Database } from '../../src/store/database.js';
import { inBackground } from '../../src/store/priority.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { watchEventLoopGap } from '../helpers/event-loop-gap.js';

/** The embedded PGlite on its own thread (store/pglite-thread.ts), whatever store the suite runs on. */
describe('PGlite on its own thread', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openPglite('memory://');
    await database.db.execute(sql`create table items (id int primary key, label text not null)`);
  }, 60_000);
  afterAll(() => database.close());

  it('commits a transaction that resolves and rolls back one that throws, savepoints included', async () => {
    const { db } = database;
    await expect(
      db.transaction(async (tx) => {
        await tx.execute(sql`insert into items values (1, 'rolled back')`);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    await db.transaction(async (tx) => {
      await tx.execute(sql`insert into items values (2, 'kept')`);
      await tx
        .transaction(async (inner) => {
          await inner.execute(sql`insert into items values (3, 'inner, rolled back')`);
          inner.rollback();
        })
        .catch(() => {});
    });
    const rows = await queryRows<{ id: number; label: string }>(db, sql`select id, label from items order by id`);
    expect(rows).toEqual([{ id: 2, label: 'kept' }]);
  });

  it("keeps PostgreSQL's error code, and a failed transaction leaves nothing", async () => {
    const { db } = database;
    const error = await db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into items values (10, 'first')`);
        await tx.execute(sql`insert into items values (10, 'duplicate')`);
      })
      .catch((caught: unknown) => caught as { code?: string; cause?: { code?: string } });
    expect(error?.code ?? error?.cause?.code).toBe('23505');
    expect(await queryRows(db, sql`select id from items where id = 10`)).toEqual([]);
  });

  it("runs a request's statement before background statements queued ahead of it", async () => {
    const { db } = database;
    const finished: string[] = [];
    const slow = sql`select count(*) from generate_series(1, 200000)`;
    const background = inBackground(() => Promise.all(Array.from({ length: 6 }, (_, i) => db.execute(slow).then(() => finished.push(`background ${i}`)))));
    const request = db.execute(sql`select 1`).then(() => finished.push('request'));
    await Promise.all([background, request]);
    // The first background statement may already be running when the request's arrives.
    expect(finished.indexOf('request')).toBeLessThanOrEqual(1);
    expect(finished.filter((name) => name.startsWith('background'))).toEqual(Array.from({ length: 6 }, (_, i) => `background ${i}`));
  });

  it('leaves the event loop free while a long statement runs', async () => {
    const gap = watchEventLoopGap(5);
    const started = performance.now();
    await database.db.execute(sql`select count(*) from generate_series(1, 3000000)`);
    const statementMs = performance.now() - started;
    const longestGap = gap.stop();
    // In the process, the statement held the event loop for all of its duration.
    expect(statementMs).toBeGreaterThan(200);
    expect(longestGap).toBeLessThan(statementMs / 2);
  });

  it('answers every call after it closed as a database that is unavailable, without hanging', async () => {
    const closing = await openPglite('memory://');
    await closing.close();
    const error = await closing.db.execute(sql`select 1`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  describe('when its thread dies', () => {
    /** Starts real PGlite threads and keeps each, so a test can stop one as a crash would. */
    const startThread = async (dataDir: string) => {
      const workers: Worker[] = [];
      const spawn = (dir: string) => {
        const worker = spawnPgliteWorker(dir);
        workers.push(worker);
        return worker;
      };
      return { thread: await PgliteThread.start(dataDir, spawn), workers };
    };
    const unavailable = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: unknown) => (isDatabaseUnavailable(error) ? 'unavailable' : `other: ${(error as Error).message}`),
      );
    const ids = async (thread: PgliteThread) => (await thread.query('select id from items order by id', [], { rowMode: 'array' })).rows;

    it('fails what it held as unavailable, restarts on the same data without the uncommitted, and answers later calls', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-pglite-crash-'));
      const { thread, workers } = await startThread(dataDir);
      try {
        await thread.query('create table items (id int primary key)');
        await thread.query('insert into items values (1)');
        // A transaction that was writing when the thread died, and a statement it was running.
        let running: Promise<string> | undefined;
        const transaction = unavailable(
          thread.transaction(async (tx) => {
            await tx.query('insert into items values (2)');
            running = unavailable(thread.query('select count(*) from generate_series(1, 30000000)'));
            await workers[0]!.terminate();
            await tx.query('insert into items values (3)');
          }),
        );
        expect(await transaction).toBe('unavailable');
        expect(await running).toBe('unavailable');
        // Calls made while the new thread opens the data wait for it.
        expect(await ids(thread)).toEqual([[1]]);
        expect(workers).toHaveLength(2);
        await thread.query('insert into items values (4)');
        expect(await ids(thread)).toEqual([[1], [4]]);
      } finally {
        await thread.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }, 120_000);

    it('stays stopped when it keeps dying, and when its data was in memory, and says so once', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'toolsift-pglite-crash-'));
      const { thread, workers } = await startThread(dataDir);
      // Told once, when it stops for good (the service then exits for its supervisor: main.ts).
      const stops: Error[] = [];
      thread.onStopped((error) => stops.push(error));
      try {
        await thread.query('create table items (id int primary key)');
        for (let crash = 1; crash <= 3; crash += 1) {
          await workers.at(-1)!.terminate();
          expect(await ids(thread)).toEqual([]);
        }
        expect(workers).toHaveLength(4);
        expect(stops).toEqual([]);
        await workers.at(-1)!.terminate();
        expect(await unavailable(ids(thread))).toBe('unavailable');
        expect(workers).toHaveLength(4);
        expect(stops).toHaveLength(1);
        expect(isDatabaseUnavailable(stops[0])).toBe(true);
      } finally {
        await thread.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
      expect(stops).toHaveLength(1);
      const inMemory = await startThread('memory://');
      const inMemoryStops: Error[] = [];
      inMemory.thread.onStopped((error) => inMemoryStops.push(error));
      await inMemory.workers[0]!.terminate();
      expect(await unavailable(inMemory.thread.query('select 1'))).toBe('unavailable');
      expect(inMemory.workers).toHaveLength(1);
      expect(inMemoryStops).toHaveLength(1);
      await inMemory.thread.close();
      // Closing is not stopping for good.
      const closed = await startThread('memory://');
      const closedStops: Error[] = [];
      closed.thread.onStopped((error) => closedStops.push(error));
      await closed.thread.close();
      expect(closedStops).toEqual([]);
    }, 120_000);
  });
});

/** A catalog's row on the embedded store is read once while nothing is written (store/read-cache.ts), and again after any write. */
describe('PGlite: rows answered from memory until a write', () => {
  let database: Database;
  let sent = 0;
  beforeAll(async () => {
    database = await openPglite('memory://');
    await database.migrate();
    const client = (database.db as unknown as { $client: { query: (...args: unknown[]) => Promise<unknown> } }).$client;
    const query = client.query.bind(client);
    client.query = (...args: unknown[]) => {
      sent += 1;
      return query(...args);
    };
    await database.db.execute(sql`insert into catalogs (tenant, name) values ('t', 'c')`);
  }, 60_000);
  afterAll(() => database.close());

  const read = () => getCatalog(database.db, 't', 'c');

  it('sends the read once, and hands out copies', async () => {
    const first = await read();
    const before = sent;
    const second = await read();
    expect(sent).toBe(before);
    expect(second).toEqual(first);
    second!.codeMode = false;
    second!.definitionTokens.openai = 99;
    expect((await read())!.codeMode).toBe(true);
    expect((await read())!.definitionTokens.openai).toBe(0);
  });

  it('reads again after a statement, a transaction, or a background write queued behind a read', async () => {
    await read();
    await database.db.execute(sql`update catalogs set code_mode = false where name = 'c'`);
    expect((await read())!.codeMode).toBe(false);
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`update catalogs set result_scan = 'block' where name = 'c'`);
    });
    expect((await read())!.resultScan).toBe('block');
    // A background write sent first runs after the request's read (priority.ts): the row that read saw is not kept.
    // (drizzle sends a statement when it is awaited or then'd: each is then'd here, so they are sent in this order.)
    const busy = database.db.execute(sql`select count(*) from generate_series(1, 200000)`).then((result) => result);
    const write = inBackground(() => database.db.execute(sql`update catalogs set revision = revision + 1 where name = 'c'`).then((result) => result));
    const during = read();
    await Promise.all([busy, write, during]);
    expect((await during)!.revision).toBe(1);
    expect((await read())!.revision).toBe(2);
  });

  it('never holds a catalog that is not there, nor one deleted', async () => {
    expect(await getCatalog(database.db, 't', 'absent')).toBeUndefined();
    await database.db.execute(sql`insert into catalogs (tenant, name) values ('t', 'absent')`);
    expect(await getCatalog(database.db, 't', 'absent')).toBeDefined();
    await database.db.execute(sql`delete from catalogs where name = 'absent'`);
    expect(await getCatalog(database.db, 't', 'absent')).toBeUndefined();
  });
});

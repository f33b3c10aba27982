import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable, openPglite, queryRows, type Database } from '../../src/store/database.js';
import { inBackground } from '../../src/store/priority.js';

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
      await tx.transaction(async (inner) => {
        await inner.execute(sql`insert into items values (3, 'inner, rolled back')`);
        inner.rollback();
      }).catch(() => {});
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
    const background = inBackground(() =>
      Promise.all(Array.from({ length: 6 }, (_, i) => db.execute(slow).then(() => finished.push(`background ${i}`)))),
    );
    const request = db.execute(sql`select 1`).then(() => finished.push('request'));
    await Promise.all([background, request]);
    // The first background statement may already be running when the request's arrives.
    expect(finished.indexOf('request')).toBeLessThanOrEqual(1);
    expect(finished.filter((name) => name.startsWith('background'))).toEqual(Array.from({ length: 6 }, (_, i) => `background ${i}`));
  });

  it('leaves the event loop free while a long statement runs', async () => {
    let lastTick = performance.now();
    let longestGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longestGap = Math.max(longestGap, now - lastTick);
      lastTick = now;
    }, 5);
    const started = performance.now();
    await database.db.execute(sql`select count(*) from generate_series(1, 3000000)`);
    const statementMs = performance.now() - started;
    clearInterval(timer);
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
});

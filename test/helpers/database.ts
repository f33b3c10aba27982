import { randomBytes } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { openPglite, openPostgres, type Database } from '../../src/store/database.js';

let shared: Promise<Database> | undefined;

/**
 * The database every integration test of this run shares: the real PostgreSQL when DATABASE_URL
 * is set (CI runs the suite once that way), otherwise one in-memory PGlite with pgvector.
 * Tests isolate themselves with unique catalog and tenant names, never by truncating tables.
 */
export function testDatabase(): Promise<Database> {
  shared ??= (async () => {
    const url = process.env.DATABASE_URL;
    const database = url ? openPostgres(url, 4) : await openPglite('memory://');
    await database.migrate();
    return database;
  })();
  return shared;
}

/** The database as it is, with `seen` told the SQL text of each statement run through `execute`. */
export function observing<T extends object>(db: T, seen: (text: string) => void): T {
  const dialect = new PgDialect();
  return new Proxy(db, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'execute') return value;
      return (statement: SQL) => {
        seen(dialect.sqlToQuery(statement).sql);
        return (value as (statement: SQL) => unknown).call(target, statement);
      };
    },
  });
}

export const storeKind = () => (process.env.DATABASE_URL ? 'postgres' : 'pglite');

/** A name no other test (or earlier run against the same server) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export interface ScratchDatabase {
  /** Its PostgreSQL URL; undefined for PGlite, which lives in this process only. */
  url: string | undefined;
  database: Database;
  drop(): Promise<void>;
}

/**
 * A new, migrated database of its own, for tests that need tables nobody else has written to (or
 * a store no other process shares). `postgres`: a scratch database on DATABASE_URL's server, else
 * on the local one CI machines have. `pglite`: a new in-memory PGlite.
 */
export async function scratchDatabase(kind: 'postgres' | 'pglite', label: string): Promise<ScratchDatabase> {
  if (kind === 'pglite') {
    const database = await openPglite('memory://');
    await database.migrate();
    return { url: undefined, database, drop: () => database.close() };
  }
  const server = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const url = (name: string) => Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  const name = uniqueName(label).replace(/-/g, '_');
  const admin = new pg.Client({ connectionString: url('postgres') });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  const database = openPostgres(url(name), 2);
  await database.migrate();
  return {
    url: url(name),
    database,
    async drop() {
      // Its user may have closed it already (a service that owns its database closes it on close).
      await database.close().catch(() => {});
      await admin.query(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

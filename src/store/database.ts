import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { projectRoot } from '../paths.js';
import { lockDataDir } from './data-dir-lock.js';
import * as schema from './schema.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /** Applies pending migrations from `migrations/`. Safe to call from several processes. */
  migrate(): Promise<void>;
  /** Throws when the database cannot answer or migrations are missing. */
  check(): Promise<{ migrations: { applied: number; expected: number } }>;
  close(): Promise<void>;
}

export const migrationsFolder = (): string => join(projectRoot(), 'migrations');

function expectedMigrations(): number {
  const journal = JSON.parse(readFileSync(join(migrationsFolder(), 'meta', '_journal.json'), 'utf8')) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

/** Rows of a raw query, for both drivers (node-postgres and PGlite both answer `{ rows }`). */
export async function queryRows<T>(db: Pick<Db, 'execute'>, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

async function countApplied(db: Db): Promise<number> {
  const rows = await queryRows<{ exists: boolean }>(
    db,
    sql`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`,
  );
  if (!rows[0]?.exists) return 0;
  const counted = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
  return counted[0]?.n ?? 0;
}

async function checkDb(db: Db): Promise<{ migrations: { applied: number; expected: number } }> {
  const applied = await countApplied(db);
  const expected = expectedMigrations();
  if (applied < expected) throw new Error(`migrations pending: ${applied} of ${expected} applied`);
  return { migrations: { applied, expected } };
}

export function openPostgres(url: string, poolSize = 10): Database {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    kind: 'postgres',
    db,
    async migrate() {
      const client = await pool.connect();
      try {
        // Replicas starting together would race on the same DDL; one migrates, the others wait.
        await client.query(`select pg_advisory_lock(hashtext('toolsift:migrate'))`);
        try {
          await migratePg(drizzlePg(client), { migrationsFolder: migrationsFolder() });
        } finally {
          await client.query(`select pg_advisory_unlock(hashtext('toolsift:migrate'))`);
        }
      } finally {
        client.release();
      }
    },
    check: () => checkDb(db),
    close: () => pool.end(),
  };
}

/**
 * The embedded default: PGlite (PostgreSQL in WASM) with pgvector. `dataDir` persists it;
 * 'memory://' keeps it in memory (tests).
 */
export async function openPglite(dataDir: string): Promise<Database> {
  const inMemory = dataDir.startsWith('memory://');
  const release = inMemory ? () => {} : lockDataDir(resolve(dataDir));
  let client: PGlite;
  try {
    client = await PGlite.create(inMemory ? dataDir : join(resolve(dataDir), 'pglite'), { extensions: { vector } });
  } catch (error) {
    release();
    throw error;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    async migrate() {
      await migratePglite(drizzlePglite(client), { migrationsFolder: migrationsFolder() });
    },
    check: () => checkDb(db),
    async close() {
      try {
        await client.close();
      } finally {
        release();
      }
    },
  };
}

export async function openDatabase(options: { databaseUrl?: string; dataDir: string }): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl) : openPglite(options.dataDir);
}

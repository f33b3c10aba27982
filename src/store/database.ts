import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { projectRoot } from '../lib/paths.js';
import { lockDataDir } from './data-dir-lock.js';
import { PgliteThread } from './pglite-thread.js';
import { countWrites } from './read-cache.js';
import * as schema from './schema.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /** The same store without the request path's deadline: index builds and other long maintenance. */
  readonly adminDb: Db;
  /** Applies pending migrations from `migrations/`. Safe to call from several processes. */
  migrate(): Promise<void>;
  /** Throws when the database cannot answer or migrations are missing. */
  check(): Promise<{ migrations: { applied: number; expected: number } }>;
  close(): Promise<void>;
  /**
   * Calls `listener` once if the store stops for good: the embedded database's thread died more
   * often than it is restarted (store/pglite-thread.ts). PostgreSQL never does: its outages pass.
   */
  onLost?(listener: (error: Error) => void): void;
}

export const migrationsFolder = (): string => join(projectRoot(), 'migrations');

function expectedMigrations(): number {
  const journal = JSON.parse(readFileSync(join(migrationsFolder(), 'meta', '_journal.json'), 'utf8')) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

/**
 * Whether `db` reaches PostgreSQL through node-postgres, which sends a Buffer parameter in binary
 * format (PGlite's driver writes every parameter as text). A transaction answers false: it has no
 * client of its own to tell by, and text is correct on both.
 */
export function sendsBinaryParameters(db: object): boolean {
  return (db as { $client?: unknown }).$client instanceof pg.Pool;
}

/** Rows of a raw query, for both drivers (node-postgres and PGlite both answer `{ rows }`). */
export async function queryRows<T>(db: Pick<Db, 'execute'>, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

async function countApplied(db: Db): Promise<number> {
  const rows = await queryRows<{ exists: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`);
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

/**
 * Every query of the request path has a deadline (`timeoutMs`, DB_TIMEOUT_MS): acquiring a
 * connection, and the query itself on the client side, which is what ends a wait when the network
 * stops forwarding (a server-side statement_timeout never fires then). A client whose query timed
 * out is discarded by the pool, so the pool heals when the network does. Migrations and index
 * builds, which can take minutes on a large store, run on connections without the deadline.
 */
export function openPostgres(url: string, poolSize = 10, timeoutMs = DEFAULT_DB_TIMEOUT_MS): Database {
  const pool = new pg.Pool({
    Client: ListenedClient,
    connectionString: url,
    // No JIT: PostgreSQL compiles a statement whose estimated cost passes jit_above_cost, and at
    // 100,000 tools the estimates of one-row lookups pass it (a hash's terms estimated at 12,000
    // rows); compiling cost 300 ms of a 1 ms statement. Nothing here scans enough to gain from it.
    options: '-c jit=off',
    max: poolSize,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    keepAlive: true,
    idleTimeoutMillis: 30_000,
  });
  const admin = new pg.Pool({ Client: ListenedClient, connectionString: url, options: '-c jit=off', max: 2, keepAlive: true, idleTimeoutMillis: 5_000 });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  admin.on('error', () => {});
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    kind: 'postgres',
    db,
    adminDb: drizzlePg(admin, { schema }) as unknown as Db,
    async migrate() {
      const client = await admin.connect();
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
    close: async () => {
      await Promise.all([pool.end(), admin.end()]);
    },
  };
}

/**
 * A pg client that always has an 'error' listener. A client whose connect or query timed out can
 * still lose its socket later (the network heals and the stale connection is reset); pg then emits
 * 'error' on a client the pool no longer listens to, which would crash the process. Its queries
 * still reject with the error, and the pool discards it.
 */
class ListenedClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => {});
  }
}

/** DB_TIMEOUT_MS's default: longer than any healthy query of the request path, short enough for a gateway's retry. */
export const DEFAULT_DB_TIMEOUT_MS = 5_000;

/** A transaction PostgreSQL aborted for another's sake (deadlock, serialization failure): safe to run again. */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: string })?.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  return code === '40P01' || code === '40001';
}

/**
 * Runs `transaction` again when PostgreSQL aborted it for a concurrent one, a few times with a
 * short random pause; a conflict that persists reaches the caller (a 503 with Retry-After).
 */
export async function retryOnConflict<T>(transaction: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (!isTransientConflict(error) || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}

/** What a caller is told when `isDatabaseUnavailable`: a 503 over REST, an isError result over MCP. */
export const DATABASE_UNAVAILABLE_MESSAGE = 'the database did not answer in time; retry shortly (see /readyz)';

/** Whether an error means the database did not answer in time or could not be reached (a 503, not a 500). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const message = error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? '')}` : '';
  const code = (error as { code?: string; cause?: { code?: string } })?.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  return (
    /timeout exceeded when trying to connect|Query read timeout|Connection terminated|connect ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|Client has encountered a connection error/i.test(
      message,
    ) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03', '08006', '08001', '08003'].includes(code ?? '')
  );
}

/**
 * The embedded default: PGlite (PostgreSQL in WASM) with pgvector, on a thread of its own
 * (pglite-thread.ts). `dataDir` persists it; 'memory://' keeps it in memory (tests).
 */
export async function openPglite(dataDir: string): Promise<Database> {
  const inMemory = dataDir.startsWith('memory://');
  const release = inMemory ? () => {} : lockDataDir(resolve(dataDir));
  let thread: PgliteThread;
  try {
    thread = await PgliteThread.start(inMemory ? dataDir : join(resolve(dataDir), 'pglite'));
  } catch (error) {
    release();
    throw error;
  }
  // drizzle's PGlite driver calls only `query` and `transaction`, which the thread answers alike.
  const client = thread as unknown as PGlite;
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  // This process is the only writer: reads of rows unchanged since can be answered from memory.
  countWrites(db, () => thread.writes);
  return {
    kind: 'pglite',
    db,
    adminDb: db,
    async migrate() {
      await migratePglite(drizzlePglite(client), { migrationsFolder: migrationsFolder() });
    },
    check: () => checkDb(db),
    onLost: (listener) => thread.onStopped(listener),
    async close() {
      try {
        await thread.close();
      } finally {
        release();
      }
    },
  };
}

export async function openDatabase(options: { databaseUrl?: string; dataDir: string; timeoutMs?: number }): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, 10, options.timeoutMs) : openPglite(options.dataDir);
}

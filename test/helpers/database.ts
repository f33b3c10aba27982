import { randomBytes } from 'node:crypto';
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

export const storeKind = () => (process.env.DATABASE_URL ? 'postgres' : 'pglite');

/** A name no other test (or earlier run against the same server) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

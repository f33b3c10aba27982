/**
 * A store for one bench run: PGlite in memory, or a new PostgreSQL database on `pgBase` (dropped
 * afterwards), migrated either way.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPglite, openPostgres, type Database } from '../../src/store/database.js';

export async function openBenchStore(kind: string | undefined, pgBase: string, prefix: string): Promise<{ database: Database; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    const database = await openPglite('memory://');
    await database.migrate();
    return { database, drop: async () => {} };
  }
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: `${pgBase}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const database = openPostgres(`${pgBase}/${name}`);
  await database.migrate();
  return {
    database,
    drop: async () => {
      const again = new pg.Client({ connectionString: `${pgBase}/postgres` });
      await again.connect();
      await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}

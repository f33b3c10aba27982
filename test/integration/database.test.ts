import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../../src/store/data-dir-lock.js';
import { openPglite, queryRows, type Database } from '../../src/store/database.js';
import { storeKind, testDatabase } from '../helpers/database.js';

const expectedMigrations = (JSON.parse(readFileSync(new URL('../../migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }).entries
  .length;

/** A pid no process has: pid_max on Linux defaults to 4194304, and 999999 is rarely in use. */
const DEAD_PID = 999_999;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the shared test database', () => {
  it(`is ${storeKind()} with every migration applied`, async () => {
    const database = await testDatabase();
    expect(database.kind).toBe(storeKind());
    const status = await database.check();
    expect(status.migrations).toEqual({ applied: expectedMigrations, expected: expectedMigrations });
    expect(expectedMigrations).toBeGreaterThanOrEqual(3);
  });

  it('migrates again without changing anything', async () => {
    const database = await testDatabase();
    await database.migrate();
    expect((await database.check()).migrations.applied).toBe(expectedMigrations);
  });

  it('has the vector extension, and vectors compute distances', async () => {
    const { db } = await testDatabase();
    const extensions = await queryRows<{ extname: string }>(db, sql`select extname from pg_extension where extname = 'vector'`);
    expect(extensions).toEqual([{ extname: 'vector' }]);
    const distance = await queryRows<{ d: number }>(db, sql`select ('[1,2,3]'::vector <-> '[1,2,5]'::vector)::float8 as d`);
    expect(Number(distance[0]?.d)).toBeCloseTo(2, 6);
  });

  it('has the tables the catalog needs', async () => {
    const { db } = await testDatabase();
    const tables = await queryRows<{ name: string }>(
      db,
      sql`select table_name as name from information_schema.tables where table_schema = 'public' order by table_name`,
    );
    expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['catalog_tools', 'catalogs', 'tool_documents', 'tool_embeddings', 'tool_terms']));
  });
});

describe('PGlite on a data directory', () => {
  const dirs: string[] = [];
  const open: Database[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolsift-db-test-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const database of open) await database.close().catch(() => {});
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  // One fresh PGlite costs seconds; this walks the whole lock life cycle with two of them.
  it('locks its directory, refuses a second opener, unlocks on close, reopens with its data and takes over a stale lock', async () => {
    const dir = tempDir();
    const lockFile = join(dir, 'toolsift.lock');
    const first = await openPglite(dir);
    open.push(first);
    expect(first.kind).toBe('pglite');
    expect(lockOwner(lockFile)).toBe(process.pid);

    await expect(openPglite(dir)).rejects.toThrow(DataDirLockedError);
    await expect(openPglite(dir)).rejects.toThrow(/data directory .* is already open in this process/);
    // The refused opener must not have released the owner's lock.
    expect(lockOwner(lockFile)).toBe(process.pid);

    await first.migrate();
    expect((await first.check()).migrations.applied).toBe(expectedMigrations);
    await first.db.execute(sql`create table lock_probe (note text)`);
    await first.db.execute(sql`insert into lock_probe values ('written before close')`);
    await first.close();
    open.splice(open.indexOf(first), 1);
    expect(existsSync(lockFile)).toBe(false);

    // A crashed owner leaves its lock behind; its pid is gone, so the lock is taken over.
    expect(isAlive(DEAD_PID)).toBe(false);
    writeFileSync(lockFile, String(DEAD_PID));
    const second = await openPglite(dir);
    open.push(second);
    expect(lockOwner(lockFile)).toBe(process.pid);
    const rows = await queryRows<{ note: string }>(second.db, sql`select note from lock_probe`);
    expect(rows).toEqual([{ note: 'written before close' }]);
    expect((await second.check()).migrations.applied).toBe(expectedMigrations);
    await second.close();
    open.splice(open.indexOf(second), 1);
    expect(existsSync(lockFile)).toBe(false);
  });

  it('refuses a directory another live process holds, saying it is in use', async () => {
    const dir = tempDir();
    const lockFile = join(dir, 'toolsift.lock');
    // The parent process is alive and is not us: it stands in for a second toolsift.
    expect(isAlive(process.ppid)).toBe(true);
    writeFileSync(lockFile, String(process.ppid));
    const attempt = openPglite(dir);
    await expect(attempt).rejects.toThrow(DataDirLockedError);
    await expect(attempt).rejects.toThrow(new RegExp(`data directory .* is in use by process ${process.ppid}`));
    expect(lockOwner(lockFile)).toBe(process.ppid);
    expect(existsSync(join(dir, 'pglite'))).toBe(false);
  });

  it('takes over a lock left by an earlier process with its own pid (PID 1 in a restarted container)', () => {
    const dir = tempDir();
    const lockFile = join(dir, 'toolsift.lock');
    // Same pid, but another process: a different start time (what /proc records for this pid now differs).
    writeFileSync(lockFile, JSON.stringify({ pid: process.pid, boot: null, start: '1' }));
    const release = lockDataDir(dir);
    expect(JSON.parse(readFileSync(lockFile, 'utf8')).start).not.toBe('1');
    release();
  });

  it('takes over a lock file that holds no pid, and releases only once', () => {
    const dir = tempDir();
    const lockFile = join(dir, 'toolsift.lock');
    writeFileSync(lockFile, 'garbage');
    const release = lockDataDir(dir);
    expect(lockOwner(lockFile)).toBe(process.pid);
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
    release();
    expect(existsSync(lockFile)).toBe(false);
    const again = lockDataDir(dir);
    release();
    // A second release of the old lock must not remove the new owner's file.
    expect(existsSync(lockFile)).toBe(true);
    again();
    expect(existsSync(lockFile)).toBe(false);
  });
});

function lockOwner(lockFile: string): number {
  const text = readFileSync(lockFile, 'utf8');
  return text.startsWith('{') ? (JSON.parse(text) as { pid: number }).pid : Number.parseInt(text, 10);
}

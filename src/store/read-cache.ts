/**
 * Reads that a store with one writer can answer from memory. The embedded PGlite is written by this
 * process alone (the data directory's lock), and its thread counts every statement that may change
 * data (store/pglite-thread.ts `writes`): a row read while the count stood still is still the
 * store's row while it stands still, so the read is not sent again. PostgreSQL has other writers
 * (replicas), registers no count, and is always read.
 *
 * Counted before the read is sent: a write sent or settled meanwhile moves the count, and the row
 * is read again next time (never kept past a change).
 */

/** Each store's count of writes, by the drizzle database it serves (database.ts registers PGlite's). */
const counts = new WeakMap<object, () => number>();
const cached = new WeakMap<object, Map<string, { writes: number; value: unknown }>>();

/** Rows held for one store; past this many, all are let go (a catalog row is a few hundred bytes). */
const MAX_HELD = 4096;

export function countWrites(db: object, writes: () => number): void {
  counts.set(db, writes);
}

/**
 * `read()`'s answer for `key`, from memory while `db` has not been written since it was read; a
 * copy (`copy`) each time, so a caller's change never reaches another's. Undefined is not held.
 * `db` of a transaction, or of PostgreSQL, is read every time.
 */
export async function readThrough<T>(db: object, key: string, read: () => Promise<T | undefined>, copy: (value: T) => T): Promise<T | undefined> {
  const count = counts.get(db);
  if (!count) return read();
  const writes = count();
  let held = cached.get(db);
  const hit = held?.get(key);
  if (hit && hit.writes === writes) return copy(hit.value as T);
  const value = await read();
  if (value === undefined) return undefined;
  if (!held) cached.set(db, (held = new Map()));
  if (held.size >= MAX_HELD) held.clear();
  held.set(key, { writes, value: copy(value) });
  return value;
}

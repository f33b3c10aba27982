import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

export class DataDirLockedError extends Error {}

/** Data directories this process holds right now (a second open in-process is refused). */
const heldHere = new Set<string>();

/**
 * Who a process is, beyond its pid: the machine's boot id and the process's start time (Linux
 * /proc; null elsewhere). A container runs its service as PID 1 every time, so after a SIGKILL the
 * lock says "1" and the restarted process is 1 again: the pid alone cannot tell them apart.
 */
function identity(pid: number): { boot: string | null; start: string | null } {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    // Field 22 of /proc/<pid>/stat (after the parenthesised command, which may contain spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
    return { boot, start };
  } catch {
    return { boot: null, start: null };
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the lock's owner still runs: the same pid, alive, and (where /proc tells) the same process. */
function ownerRuns(lock: { pid: number; boot?: string | null; start?: string | null }): boolean {
  if (!Number.isInteger(lock.pid) || !isAlive(lock.pid)) return false;
  const now = identity(lock.pid);
  if (lock.boot && now.boot && lock.boot !== now.boot) return false;
  if (lock.start && now.start && lock.start !== now.start) return false;
  return true;
}

function readLock(path: string): { pid: number; boot?: string | null; start?: string | null } {
  const text = readFileSync(path, 'utf8').trim();
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) return parsed as { pid: number; boot?: string | null; start?: string | null };
  } catch {
    // not JSON
  }
  return { pid: Number.parseInt(text, 10) }; // a lock written by an older release: the pid alone
}

/**
 * PGlite has no lock across processes, and two processes on one data directory silently diverge.
 * An exclusive lock file names the owner (pid, boot id, start time) and refuses a second opener; a
 * lock whose process is gone (a crash, SIGKILL, a restarted container reusing the pid) is taken over.
 */
export function lockDataDir(dir: string): () => void {
  const key = resolve(dir);
  if (heldHere.has(key)) throw new DataDirLockedError(`data directory ${dir} is already open in this process`);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'toolsift.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, ...identity(process.pid) }));
      closeSync(fd);
      heldHere.add(key);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        heldHere.delete(key);
        rmSync(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readLock(path);
      if (owner.pid !== process.pid && ownerRuns(owner)) {
        throw new DataDirLockedError(
          `data directory ${dir} is in use by process ${owner.pid}; PGlite allows one process per directory ` +
            `(stop it, use another DATA_DIR, or set DATABASE_URL to share a PostgreSQL server)`,
        );
      }
      // Our own pid but not held by this process: a previous process with the same pid (PID 1 in a
      // restarted container) died holding it.
      rmSync(path, { force: true });
    }
  }
  throw new DataDirLockedError(`could not lock data directory ${dir}`);
}

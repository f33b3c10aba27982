import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirLockedError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite has no lock across processes, and two processes on one data directory silently diverge.
 * An exclusive lock file holding the owner's pid refuses a second opener; a lock whose process is
 * gone (a crash, SIGKILL) is taken over.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'toolsift.lock');
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        throw new DataDirLockedError(
          `data directory ${dir} is in use by process ${owner}; PGlite allows one process per directory ` +
            `(stop it, use another DATA_DIR, or set DATABASE_URL to share a PostgreSQL server)`,
        );
      }
      if (owner === process.pid) {
        throw new DataDirLockedError(`data directory ${dir} is already open in this process`);
      }
      rmSync(path, { force: true });
    }
  }
  throw new DataDirLockedError(`could not lock data directory ${dir}`);
}

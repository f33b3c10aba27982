import { setPriority } from 'node:os';

/**
 * Lowers the calling worker thread's priority (a nice value, 0-19): under load it yields the cores
 * to the thread that answers requests. Linux keeps a nice value per thread and `setPriority(0, n)`
 * sets the calling thread's alone; on other systems it would lower the whole process, HTTP thread
 * included, so it is Linux only. Raising one's own nice value needs no privilege; a sandbox that
 * forbids it leaves the default.
 */
export function lowerThreadPriority(nice: number): void {
  if (nice === 0 || process.platform !== 'linux') return;
  try {
    setPriority(0, nice);
  } catch {
    // The thread then runs at the HTTP thread's priority.
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Which database work a request waits for and which nobody does. The embedded PGlite runs one
 * statement at a time (pglite-thread.ts), so a search queued behind the writes that follow earlier
 * answers (never-seen tools, their vectors) waits for all of them; marked background, those writes
 * yield to any statement a request is waiting for. PostgreSQL, with a connection each, ignores it.
 */
const background = new AsyncLocalStorage<true>();

/** Runs `work` with every database call it makes, however deep, marked as background. */
export function inBackground<T>(work: () => Promise<T>): Promise<T> {
  return background.run(true, work);
}

export function isBackground(): boolean {
  return background.getStore() === true;
}

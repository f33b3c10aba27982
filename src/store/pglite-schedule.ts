/**
 * Which waiting unit of work the embedded database runs next (pglite-worker.ts). Units a request
 * waits for go first, in arrival order; background units (priority.ts) run when none is waiting,
 * or once the oldest has waited `ageMs`, so under load they are delayed, never starved.
 */
export function takeNext<T extends { arrived: number }>(waiting: { request: T[]; background: T[] }, now: number, ageMs = BACKGROUND_AGE_MS): T | undefined {
  const oldest = waiting.background[0];
  if (oldest && (waiting.request.length === 0 || now - oldest.arrived >= ageMs)) return waiting.background.shift();
  return waiting.request.shift();
}

/** How long a background unit may be passed over: a few searches' worth of statements. */
export const BACKGROUND_AGE_MS = 250;

/**
 * Yielding the HTTP thread between pieces of request-path work (parsing, terms, counts, store
 * slices), so one large request never holds every other one up.
 */

/** Lets queued I/O callbacks (other requests) run before the next slice. */
export function yieldToOtherRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * How long request-path work runs before other requests get the thread. By time, not by item: a
 * count of items tuned on a quiet machine held the thread 3-10 times longer on two busy cores.
 */
export const SLICE_MS = 5;

/** Work cut into SLICE_MS slices: `if (slice.due()) await slice.yield();` before each item. */
export class TimeSlice {
  #started = performance.now();

  due(): boolean {
    return performance.now() - this.#started >= SLICE_MS;
  }

  async yield(): Promise<void> {
    await yieldToOtherRequests();
    this.#started = performance.now();
  }
}

/**
 * `map` over many items in SLICE_MS slices, letting other requests run between them: 10,000 tools'
 * terms and token counts at once held every other request for over a second (`npm run bench --
 * --stalls`).
 */
export async function mapYielding<T, R>(items: readonly T[], map: (item: T) => R): Promise<R[]> {
  const out: R[] = [];
  const slice = new TimeSlice();
  for (const item of items) {
    if (slice.due()) await slice.yield();
    out.push(map(item));
  }
  return out;
}

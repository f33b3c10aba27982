import { vi } from 'vitest';
import { SLICE_MS } from '../../src/lib/time-slice.js';

/**
 * Runs `work` with a clock that moves `step` ms at every read (default SLICE_MS: each time slice
 * ends after one item, however fast the machine); `step` 0 is a clock that stands still.
 */
export async function withRunningClock<T>(work: () => Promise<T>, step = SLICE_MS): Promise<T> {
  let now = 0;
  const clock = vi.spyOn(performance, 'now').mockImplementation(() => (now += step));
  try {
    return await work();
  } finally {
    clock.mockRestore();
  }
}

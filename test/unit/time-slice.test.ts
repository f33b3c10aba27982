import { describe, expect, it } from 'vitest';
import { mapYielding } from '../../src/catalog/catalog-service.js';
import { SLICE_MS, TimeSlice } from '../../src/time-slice.js';
import { holdThread } from '../helpers/hold-thread.js';

describe('work cut into time slices', () => {
  it('is due once SLICE_MS has run, and starts a new slice after yielding', async () => {
    const slice = new TimeSlice();
    expect(slice.due()).toBe(false);
    holdThread(SLICE_MS + 1);
    expect(slice.due()).toBe(true);
    await slice.yield();
    expect(slice.due()).toBe(false);
  });

  it('mapYielding lets other requests run after a slow item, however few the items, and keeps their order', async () => {
    let otherRan = false;
    setImmediate(() => (otherRan = true));
    const seen: boolean[] = [];
    const out = await mapYielding([SLICE_MS * 4, 0, 0], (ms) => {
      seen.push(otherRan);
      holdThread(ms);
      return ms;
    });
    expect(out).toEqual([SLICE_MS * 4, 0, 0]);
    expect(seen).toEqual([false, true, true]);
  });
});

import { describe, expect, it, vi } from 'vitest';
import { mapYielding } from '../../src/lib/time-slice.js';
import { parseArrayInSlices } from '../../src/http/json-body.js';
import { SLICE_MS, TimeSlice } from '../../src/lib/time-slice.js';
import { holdThread } from '../helpers/hold-thread.js';
import { withRunningClock } from '../helpers/running-clock.js';

describe('work cut into time slices', () => {
  it('is due once SLICE_MS has run, and starts a new slice after yielding', async () => {
    // A clock the test moves (the real one could pass SLICE_MS while the test process waits for a core).
    let now = 1_000;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      const slice = new TimeSlice();
      now += SLICE_MS - 0.5;
      expect(slice.due()).toBe(false);
      now += 0.5;
      expect(slice.due()).toBe(true);
      await slice.yield();
      expect(slice.due()).toBe(false);
      now += SLICE_MS;
      expect(slice.due()).toBe(true);
    } finally {
      clock.mockRestore();
    }
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

  it('parseArrayInSlices yields once SLICE_MS has passed, however few bytes it has parsed', async () => {
    const body = Buffer.from('[{"name":"a"},{"name":"b"},{"name":"c"}]');
    let otherRan = false;
    setImmediate(() => (otherRan = true));
    // Each element's parse counts as a full slice.
    const values = await withRunningClock(() => parseArrayInSlices(body, { start: 0, end: body.length }, []));
    expect(values).toEqual([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    expect(otherRan).toBe(true);
  });

  it('parseArrayInSlices does not yield while its slice lasts', async () => {
    const body = Buffer.from('[1,2,3]');
    let otherRan = false;
    setImmediate(() => (otherRan = true));
    // A clock that stands still: the slice never ends.
    const values = await withRunningClock(() => parseArrayInSlices(body, { start: 0, end: body.length }, []), 0);
    expect(values).toEqual([1, 2, 3]);
    expect(otherRan).toBe(false);
  });
});

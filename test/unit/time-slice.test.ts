import { afterEach, describe, expect, it, vi } from 'vitest';
import { mapYielding } from '../../src/catalog/catalog-service.js';
import { parseArrayInSlices } from '../../src/http/json-body.js';
import { SLICE_MS, TimeSlice } from '../../src/time-slice.js';
import { holdThread } from '../helpers/hold-thread.js';

describe('work cut into time slices', () => {
  afterEach(() => vi.restoreAllMocks());

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

  it('parseArrayInSlices yields once SLICE_MS has passed, however few bytes it has parsed', async () => {
    // A clock that moves SLICE_MS at every read: each element's parse counts as a full slice.
    let now = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => (now += SLICE_MS));
    const body = Buffer.from('[{"name":"a"},{"name":"b"},{"name":"c"}]');
    let otherRan = false;
    setImmediate(() => (otherRan = true));
    const values = await parseArrayInSlices(body, { start: 0, end: body.length }, []);
    vi.restoreAllMocks();
    expect(values).toEqual([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    expect(otherRan).toBe(true);
  });

  it('parseArrayInSlices does not yield while its slice lasts', async () => {
    vi.spyOn(performance, 'now').mockReturnValue(0); // a clock that stands still: the slice never ends
    const body = Buffer.from('[1,2,3]');
    let otherRan = false;
    setImmediate(() => (otherRan = true));
    const values = await parseArrayInSlices(body, { start: 0, end: body.length }, []);
    vi.restoreAllMocks();
    expect(values).toEqual([1, 2, 3]);
    expect(otherRan).toBe(false);
  });
});

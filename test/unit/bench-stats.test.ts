import { describe, expect, it } from 'vitest';
import { leaveOneOutChoices, median, medianAndRange, percentile, summarize } from '../../bench/lib/stats.js';

describe('bench statistics', () => {
  it('interpolates percentiles between the nearest samples, as numpy does by default', () => {
    const sorted = [1, 2, 3, 4, 10];
    // numpy.percentile([1, 2, 3, 4, 10], [0, 10, 25, 50, 90, 99, 100])
    expect([0, 10, 25, 50, 90, 99, 100].map((p) => percentile(sorted, p))).toEqual([1, 1.4, 2, 3, 7.6, 9.76, 10].map((x) => expect.closeTo(x, 12)));
  });

  it('takes the mean of the middle two as the median of an even count, whatever the input order', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });

  it('summarizes unsorted samples without changing them', () => {
    const samples = [30, 10, 20];
    expect(summarize(samples)).toEqual({ n: 3, min: 10, p10: 12, p50: 20, p90: 28, p95: 29, p99: expect.closeTo(29.8, 12), max: 30 });
    expect(samples).toEqual([30, 10, 20]);
    expect(medianAndRange([3, 1, 2.25], 2)).toBe('median 2.25  [1.00 .. 3.00]');
  });
});

describe('leave-one-out choice of a grid setting', () => {
  it('keeps a setting that is best on every query', () => {
    expect(
      leaveOneOutChoices([
        [[0], [0], [0]],
        [[1], [1], [1]],
      ]),
    ).toEqual([1, 1, 1]);
  });

  it('does not keep a setting whose lead comes from the query left out', () => {
    // Setting 0 is best overall (1 against 0.8), but only through query 0: without it, setting 1 wins.
    expect(
      leaveOneOutChoices([
        [[1], [0], [0]],
        [[0], [0.4], [0.4]],
      ]),
    ).toEqual([1, 0, 0]);
  });

  it('breaks ties on the next key, then keeps the earlier setting', () => {
    expect(
      leaveOneOutChoices([
        [
          [1, 0],
          [1, 0],
        ],
        [
          [1, 1],
          [1, 1],
        ],
      ]),
    ).toEqual([1, 1]);
    expect(
      leaveOneOutChoices([
        [
          [1, 1],
          [0, 1],
        ],
        [
          [1, 1],
          [0, 1],
        ],
      ]),
    ).toEqual([0, 0]);
  });
});

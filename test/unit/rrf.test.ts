import { describe, it, expect } from 'vitest';
import {
  BM25_PEAK_EXPONENT,
  BM25_PEAK_REFERENCE,
  BM25_WEIGHT,
  DENSE_GAP_EXPONENT,
  DENSE_GAP_REFERENCE,
  DENSE_WEIGHT_FLOOR,
  DENSE_WEIGHT_MAX,
  DENSE_WEIGHT_PER_UNKNOWN,
  RRF_DEPTH,
  RRF_K,
  VECTOR_WEIGHT,
  denseWeight,
  fuseHybrid,
  fuseRrf,
} from '../../src/ranking/rrf.js';
import { TAG_BOOST, boostByTags } from '../../src/ranking/tags.js';

describe('fuseRrf', () => {
  it('is plain RRF with weight 1 and no score scaling', () => {
    const fused = fuseRrf([
      {
        ranked: [
          ['a', 9],
          ['b', 5],
        ],
        weight: 1,
        scaleByScore: false,
      },
      {
        ranked: [
          ['b', 0.9],
          ['c', 0.8],
        ],
        weight: 1,
        scaleByScore: false,
      },
    ]);
    expect(fused.map(([id]) => id)).toEqual(['b', 'a', 'c']);
    expect(fused[0]?.[1]).toBeCloseTo(1 / (RRF_K + 2) + 1 / (RRF_K + 1), 12);
  });
  it('scales votes by score / top score when asked', () => {
    const fused = fuseRrf([
      {
        ranked: [
          ['a', 10],
          ['b', 5],
        ],
        weight: 1,
        scaleByScore: true,
      },
    ]);
    expect(fused[1]?.[1]).toBeCloseTo(0.5 / (RRF_K + 2), 12);
  });
  it('reads only `depth` candidates per list', () => {
    const ranked = Array.from({ length: 100 }, (_, i): [string, number] => [`t${String(i).padStart(3, '0')}`, 100 - i]);
    expect(fuseRrf([{ ranked, weight: 1, scaleByScore: false }])).toHaveLength(RRF_DEPTH);
    expect(fuseRrf([{ ranked, weight: 1, scaleByScore: false }], { k: RRF_K, depth: 30 })).toHaveLength(30);
  });
  it('breaks ties by id, skips empty lists and zero weights', () => {
    const fused = fuseRrf([
      { ranked: [['b', 1]], weight: 1, scaleByScore: false },
      { ranked: [['a', 1]], weight: 1, scaleByScore: false },
      { ranked: [['z', 1]], weight: 0, scaleByScore: false },
      { ranked: [], weight: 1, scaleByScore: true },
    ]);
    expect(fused.map(([id]) => id)).toEqual(['a', 'b']);
  });
  it("gives tools a list scores alike the mean of their places' votes, in whatever order the list holds them", () => {
    const dense = {
      ranked: [
        ['d', 0.9],
        ['b', 0.8],
        ['a', 0.7],
        ['c', 0.6],
      ] as [string, number][],
      weight: 0.5,
      scaleByScore: false,
    };
    const fused = (bm25: [string, number][]) => fuseRrf([{ ranked: bm25, weight: 1, scaleByScore: true }, dense]);
    const one = fused([
      ['a', 4],
      ['b', 2],
      ['c', 2],
      ['d', 1],
    ]);
    expect(one).toEqual(
      fused([
        ['a', 4],
        ['c', 2],
        ['b', 2],
        ['d', 1],
      ]),
    );
    const score = new Map(one);
    // b and c share places 2 and 3 of BM25 (scaled by 2/4); b is 2nd in the dense list, c 4th.
    expect(score.get('b')).toBeCloseTo((0.5 * (1 / (RRF_K + 2) + 1 / (RRF_K + 3))) / 2 + 0.5 / (RRF_K + 2), 12);
    expect(score.get('c')).toBeCloseTo((0.5 * (1 / (RRF_K + 2) + 1 / (RRF_K + 3))) / 2 + 0.5 / (RRF_K + 4), 12);
    expect(score.get('a')).toBe(1 / (RRF_K + 1) + 0.5 / (RRF_K + 3));
  });
});

describe('fuseHybrid', () => {
  it('keeps a confident BM25 head ahead of dense-only candidates', () => {
    const fused = fuseHybrid(
      [
        ['exact', 12],
        ['weak', 3],
      ],
      [
        ['dense', 0.7],
        ['weak', 0.6],
      ],
    );
    expect(fused[0]?.[0]).toBe('exact');
    expect(BM25_WEIGHT).toBeGreaterThan(VECTOR_WEIGHT);
  });
  it('lets the dense list rescue a tool BM25 never found', () => {
    const fused = fuseHybrid([], [['dense', 0.7]]);
    expect(fused).toEqual([['dense', VECTOR_WEIGHT / (RRF_K + 1)]]);
  });
});

describe('denseWeight', () => {
  /** A BM25 list of ten whose top score is `peak` times its 10th. */
  const list = (peak: number): [string, number][] => Array.from({ length: 10 }, (_, i) => [`t${i}`, peak - ((peak - 1) * i) / 9]);
  /** A dense list of ten whose top cosine is `gap` above its 10th. */
  const dense = (gap: number): [string, number][] => Array.from({ length: 10 }, (_, i) => [`d${i}`, 0.6 - (gap * i) / 9]);
  const typical = dense(DENSE_GAP_REFERENCE);

  it('gives the dense list its floor when the corpus knows every word of the query', () => {
    expect(denseWeight(1, list(BM25_PEAK_REFERENCE), typical)).toBeCloseTo(DENSE_WEIGHT_FLOOR, 12);
    expect(denseWeight(1, list(8), typical)).toBeCloseTo(DENSE_WEIGHT_FLOOR, 12);
  });

  it('gives it more say the more of the query the corpus does not know', () => {
    expect(denseWeight(0.5, list(BM25_PEAK_REFERENCE), typical)).toBeCloseTo(DENSE_WEIGHT_FLOOR + 0.5 * DENSE_WEIGHT_PER_UNKNOWN, 12);
    expect(denseWeight(0, list(BM25_PEAK_REFERENCE), typical)).toBeGreaterThan(denseWeight(0.5, list(BM25_PEAK_REFERENCE), typical));
  });

  it("gives it less when BM25's head stands out, more when BM25 is flat or found nothing, within its cap", () => {
    expect(denseWeight(0.5, list(10), typical)).toBeLessThan(denseWeight(0.5, list(BM25_PEAK_REFERENCE), typical));
    expect(denseWeight(0.5, list(1.2), typical)).toBeGreaterThan(denseWeight(0.5, list(BM25_PEAK_REFERENCE), typical));
    expect(denseWeight(0, [], typical)).toBeLessThanOrEqual(DENSE_WEIGHT_MAX);
    expect(denseWeight(0, [['only', 3]], typical)).toBeCloseTo(
      Math.min(DENSE_WEIGHT_MAX, DENSE_WEIGHT_FLOOR + DENSE_WEIGHT_PER_UNKNOWN * BM25_PEAK_REFERENCE ** BM25_PEAK_EXPONENT),
      12,
    );
  });

  it('gives it more when its own head stands out beyond the reference gap, never less under it, within its cap', () => {
    const base = denseWeight(0.5, list(BM25_PEAK_REFERENCE), typical);
    expect(denseWeight(0.5, list(BM25_PEAK_REFERENCE), dense(2 * DENSE_GAP_REFERENCE))).toBeCloseTo(base * 2 ** DENSE_GAP_EXPONENT, 12);
    expect(denseWeight(0.5, list(BM25_PEAK_REFERENCE), dense(DENSE_GAP_REFERENCE / 2))).toBeCloseTo(base, 12);
    expect(denseWeight(0.5, list(BM25_PEAK_REFERENCE), [])).toBeCloseTo(base, 12);
    // The 10th is read where the list is longer, the last where it is shorter.
    const long: [string, number][] = [...dense(2 * DENSE_GAP_REFERENCE), ['d10', 0]];
    expect(denseWeight(0.5, list(BM25_PEAK_REFERENCE), long)).toBeCloseTo(base * 2 ** DENSE_GAP_EXPONENT, 12);
    expect(
      denseWeight(0.5, list(BM25_PEAK_REFERENCE), [
        ['a', 0.6],
        ['b', 0.6 - 2 * DENSE_GAP_REFERENCE],
      ]),
    ).toBeCloseTo(base * 2 ** DENSE_GAP_EXPONENT, 12);
    expect(denseWeight(0, list(1), dense(1))).toBe(DENSE_WEIGHT_MAX);
    // A query the corpus knows word for word stays BM25's, whatever the dense list looks like.
    expect(denseWeight(1, list(BM25_PEAK_REFERENCE), dense(0.5))).toBeLessThan(1e-4);
  });

  it('is the vector weight fuseHybrid applies', () => {
    const weight = denseWeight(0.3, list(2), dense(0.25));
    expect(fuseHybrid([], [['dense', 0.7]], weight)).toEqual([['dense', weight / (RRF_K + 1)]]);
  });
});

describe('boostByTags', () => {
  const tags = new Map([
    ['a', ['Finance']],
    ['b', ['Finance', 'Search']],
    ['c', []],
  ]);
  it('adds TAG_BOOST per matching tag and re-sorts', () => {
    const boosted = boostByTags(
      [
        ['c', 0.024],
        ['a', 0.022],
        ['b', 0.02],
      ],
      tags,
      ['Finance', 'Search'],
    );
    expect(boosted.map(([id]) => id)).toEqual(['b', 'a', 'c']);
    expect(boosted[0]?.[1]).toBeCloseTo(0.02 + 2 * TAG_BOOST, 12);
  });
  it('is a fraction of one first-place RRF vote and a no-op without tags', () => {
    expect(TAG_BOOST).toBeLessThan(1 / (RRF_K + 1));
    expect(
      boostByTags(
        [
          ['c', 0.03],
          ['a', 0.025],
        ],
        tags,
        [],
      ),
    ).toEqual([
      ['c', 0.03],
      ['a', 0.025],
    ]);
  });
});

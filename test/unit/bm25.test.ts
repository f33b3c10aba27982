import { describe, it, expect } from 'vitest';
import { BM25_B, BM25_K1, BM25_TERM_UNIT, bm25Idf, bm25TermScore, scoreBm25, type Bm25Document } from '../../src/ranking/bm25.js';
import { Bm25Builder, Bm25Index, slotPlan } from '../../src/ranking/bm25-index.js';

// Toy corpus: N = 3, lengths 3 + 1 + 2 occurrences, so avgdl = 2; counted, as documents are, in
// BM25_TERM_UNIT (2) units per occurrence: the scores are those of the occurrences with k1.
const corpus: Bm25Document[] = [
  {
    id: 'd1',
    termFreqs: new Map([
      ['cat', 4],
      ['dog', 2],
    ]),
    length: 6,
  },
  { id: 'd2', termFreqs: new Map([['dog', 2]]), length: 2 },
  { id: 'd3', termFreqs: new Map([['fish', 4]]), length: 4 },
];
// Worked by hand with k1 = 1.2, b = 0.75, on the occurrences:
// idf(cat) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3)  = 0.980829
// idf(dog) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)  = 0.470004
// d1 (dl 3): k1 * (1 - b + b * 3/2) = 1.65;  d2 (dl 1): k1 * (1 - b + b * 1/2) = 0.75
// cat in d1 = 0.980829 * 2 * 2.2 / (2 + 1.65) = 1.182369
// dog in d1 = 0.470004 * 1 * 2.2 / (1 + 1.65) = 0.390192
// dog in d2 = 0.470004 * 1 * 2.2 / (1 + 0.75) = 0.590862
const CAT_D1 = 1.182369;
const DOG_D1 = 0.390192;
const DOG_D2 = 0.590862;

describe('bm25Idf', () => {
  it('matches the Lucene formula', () => {
    expect(bm25Idf(3, 1)).toBeCloseTo(Math.log(8 / 3), 10);
    expect(bm25Idf(3, 2)).toBeCloseTo(0.470004, 6);
  });
  it('stays positive for a term in every document', () => {
    expect(bm25Idf(3, 3)).toBeGreaterThan(0);
  });
});

describe('bm25TermScore', () => {
  it('uses the named constants by default', () => {
    expect(BM25_K1).toBe(1.2);
    expect(BM25_B).toBe(0.75);
    expect(BM25_TERM_UNIT).toBe(2);
    expect(bm25TermScore(4, Math.log(8 / 3), 6, 4)).toBeCloseTo(CAT_D1, 5);
  });
  it('scores a half-weight occurrence (one unit) as half an occurrence', () => {
    // A parameter's word in d1 (3 occurrences' length, avgdl 2): tf 0.5 with k1 = 1.2.
    const half = (Math.log(8 / 3) * 0.5 * 2.2) / (0.5 + 1.2 * (1 - 0.75 + (0.75 * 3) / 2));
    expect(bm25TermScore(1, Math.log(8 / 3), 6, 4)).toBeCloseTo(half, 10);
    expect(bm25TermScore(1, 1, 6, 4, { k1: 1.2, b: 0.75, unit: 1 })).toBeCloseTo((1 * 2.2) / (1 + 1.2 * (1 - 0.75 + (0.75 * 6) / 4)), 10);
  });
  it('is zero for an absent term and finite for an all-empty corpus', () => {
    expect(bm25TermScore(0, 1, 3, 2)).toBe(0);
    expect(Number.isFinite(bm25TermScore(1, 1, 0, 0))).toBe(true);
  });
});

describe('scoreBm25', () => {
  it('scores one term', () => {
    const ranked = scoreBm25(corpus, ['dog']);
    expect(ranked.map(([id]) => id)).toEqual(['d2', 'd1']);
    expect(ranked[0]?.[1]).toBeCloseTo(DOG_D2, 5);
    expect(ranked[1]?.[1]).toBeCloseTo(DOG_D1, 5);
  });
  it('sums terms and leaves out documents with no query term', () => {
    const ranked = scoreBm25(corpus, ['cat', 'dog']);
    expect(ranked.map(([id]) => id)).toEqual(['d1', 'd2']);
    expect(ranked[0]?.[1]).toBeCloseTo(CAT_D1 + DOG_D1, 5);
  });
  it('counts a repeated query term once', () => {
    expect(scoreBm25(corpus, ['dog', 'dog', 'dog'])).toEqual(scoreBm25(corpus, ['dog']));
  });
  it('breaks ties by id and handles empty input', () => {
    const twins: Bm25Document[] = [
      { id: 'b', termFreqs: new Map([['x', 1]]), length: 1 },
      { id: 'a', termFreqs: new Map([['x', 1]]), length: 1 },
    ];
    expect(scoreBm25(twins, ['x']).map(([id]) => id)).toEqual(['a', 'b']);
    expect(scoreBm25([], ['x'])).toEqual([]);
    expect(scoreBm25(corpus, [])).toEqual([]);
    expect(scoreBm25(corpus, ['unknown'])).toEqual([]);
  });
});

describe('Bm25Index', () => {
  it('scores the hand-computed toy corpus', () => {
    const index = new Bm25Index(corpus);
    const [d1, d2] = index.search(['cat', 'dog']);
    expect(d1![0]).toBe('d1');
    expect(d1![1]).toBeCloseTo(CAT_D1 + DOG_D1, 5);
    expect(d2).toEqual(['d2', expect.closeTo(DOG_D2, 5)]);
    expect(index.search(['cat', 'dog'], 1)).toHaveLength(1);
    expect(new Bm25Index([]).search(['cat'])).toEqual([]);
  });

  it('multiplies each term by its weight and gives the corpus IDF', () => {
    const index = new Bm25Index(corpus);
    const [d1, d2] = index.searchWeighted(
      new Map([
        ['cat', 2],
        ['dog', 0.5],
      ]),
    );
    expect(d1).toEqual(['d1', expect.closeTo(2 * CAT_D1 + 0.5 * DOG_D1, 5)]);
    expect(d2).toEqual(['d2', expect.closeTo(0.5 * DOG_D2, 5)]);
    expect(index.searchWeighted(new Map([['dog', 1]]))).toEqual(index.search(['dog']));
    expect(index.idf('cat')).toBeCloseTo(Math.log(8 / 3), 10);
    expect(index.idf('dog')).toBeCloseTo(0.470004, 6);
    expect(index.idf('unknown')).toBeCloseTo(Math.log(1 + 3.5 / 0.5), 10);
  });

  it('ranks and scores exactly as scoreBm25 on random corpora and queries', () => {
    let state = 7;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    const vocabulary = Array.from({ length: 40 }, (_, i) => `t${i}`);
    for (let round = 0; round < 50; round++) {
      const documents: Bm25Document[] = Array.from({ length: 1 + Math.floor(random() * 60) }, (_, i) => {
        const termFreqs = new Map<string, number>();
        for (let j = 0; j < Math.floor(random() * 12); j++) {
          const term = vocabulary[Math.floor(random() * vocabulary.length)]!;
          termFreqs.set(term, (termFreqs.get(term) ?? 0) + 1 + Math.floor(random() * 3));
        }
        return { id: `doc-${Math.floor(random() * 1000)}-${i}`, termFreqs, length: [...termFreqs.values()].reduce((a, b) => a + b, 0) };
      });
      const query = Array.from({ length: 1 + Math.floor(random() * 6) }, () => vocabulary[Math.floor(random() * vocabulary.length)]!);
      expect(new Bm25Index(documents).search(query)).toEqual(scoreBm25(documents, query));
    }
  });

  it('under a filter, ranks exactly as scoreBm25 over the kept documents alone; a long list keeps the same top as a full sort', () => {
    let state = 11;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    const vocabulary = Array.from({ length: 12 }, (_, i) => `t${i}`);
    for (let round = 0; round < 20; round++) {
      // Up to 2,000 documents over 12 terms: a query term touches hundreds of them (the heap path).
      const documents: Bm25Document[] = Array.from({ length: 1 + Math.floor(random() * 2000) }, (_, i) => {
        const termFreqs = new Map<string, number>();
        for (let j = 0; j < 1 + Math.floor(random() * 5); j++) {
          const term = vocabulary[Math.floor(random() * vocabulary.length)]!;
          termFreqs.set(term, (termFreqs.get(term) ?? 0) + 1 + Math.floor(random() * 3));
        }
        return { id: `doc-${i}`, termFreqs, length: [...termFreqs.values()].reduce((a, b) => a + b, 0) };
      });
      const query = Array.from({ length: 1 + Math.floor(random() * 3) }, () => vocabulary[Math.floor(random() * vocabulary.length)]!);
      const index = new Bm25Index(documents);
      expect(index.search(query, 30)).toEqual(scoreBm25(documents, query).slice(0, 30));
      const within = Uint8Array.from(documents, () => (random() < 0.3 ? 1 : 0));
      const kept = documents.filter((_, i) => within[i]);
      const weights = new Map([...new Set(query)].map((term) => [term, 1]));
      expect(index.searchWeighted(weights, 30, within)).toEqual(scoreBm25(kept, query).slice(0, 30));
      expect(index.searchWeighted(weights, Number.POSITIVE_INFINITY, within)).toEqual(scoreBm25(kept, query));
    }
  });
});

describe('Bm25Index with keys', () => {
  it('orders and cuts ties by key, as an index over the same documents with the keys for ids', () => {
    let state = 5;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let round = 0; round < 20; round++) {
      // Few terms and lengths: ties are common, and hundreds of documents take the heap path.
      const documents = Array.from({ length: 1 + Math.floor(random() * 800) }, (_, i) => {
        const termFreqs = new Map([[`t${Math.floor(random() * 3)}`, 1]]);
        return {
          id: `hash-${Math.floor(random() * 1e6)}-${i}`,
          key: `name-${Math.floor(random() * 1e6)}-${i}`,
          termFreqs,
          length: 1 + Math.floor(random() * 2),
        };
      });
      const byKey = new Bm25Builder();
      for (const doc of documents) byKey.add(doc.id, doc.length, doc.termFreqs, doc.key);
      const keyed = new Bm25Index(byKey);
      const named = new Bm25Index(documents.map((doc) => ({ id: doc.key, termFreqs: doc.termFreqs, length: doc.length })));
      const idOf = new Map(documents.map((doc) => [doc.key, doc.id]));
      for (const limit of [1, 30, Number.POSITIVE_INFINITY]) {
        expect(keyed.search(['t0', 't1'], limit)).toEqual(named.search(['t0', 't1'], limit).map(([key, score]) => [idOf.get(key), score]));
      }
    }
  });

  it('is not derived', async () => {
    const builder = new Bm25Builder();
    builder.add('h1', 1, [['a', 1]], 'n1');
    await expect(Bm25Index.derive(new Bm25Index(builder), slotPlan(1, new Set(), 0), [])).rejects.toThrow('not derived');
  });
});

describe('Bm25Index.derive', () => {
  /** Seeded documents of 1-5 of `vocabulary`'s terms (tf 1-3), each a little longer than its terms' sum. */
  const documents = async (seed: number, vocabulary: readonly string[]) => {
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const random = seededRandom(seed);
    const document = (id: string): Bm25Document => {
      const termFreqs = new Map<string, number>();
      for (let k = 0; k < 1 + Math.floor(random() * 5); k++) termFreqs.set(vocabulary[Math.floor(random() * vocabulary.length)]!, 1 + Math.floor(random() * 3));
      return { id, termFreqs, length: [...termFreqs.values()].reduce((sum, tf) => sum + tf, 0) + Math.floor(random() * 3) };
    };
    return { random, document };
  };

  it('scores the changed corpus exactly as an index built over it, sharing the lists no change touches', async () => {
    const vocabulary = Array.from({ length: 15 }, (_, i) => `w${i}`);
    const { random, document } = await documents(11, vocabulary);
    const corpus = Array.from({ length: 50 }, (_, i) => document(`d${i}`));
    const base = new Bm25Index(corpus);
    for (const [dropCount, addCount] of [
      [0, 3],
      [10, 0],
      [7, 8],
      [50, 2],
    ] as const) {
      const dropped = new Set<number>();
      while (dropped.size < dropCount) dropped.add(Math.floor(random() * corpus.length));
      const added = Array.from({ length: addCount }, (_, i) => document(`n${dropCount}_${i}`));
      const changed = [...corpus.filter((_, i) => !dropped.has(i)), ...added];
      const derived = await Bm25Index.derive(base, slotPlan(base.size, dropped, added.length), added);
      const built = new Bm25Index(changed);
      expect(derived.size).toBe(changed.length);
      for (const query of [['w0'], ['w1', 'w2'], ['w3', 'w4', 'w5', 'w14'], vocabulary]) {
        expect(derived.search(query)).toEqual(built.search(query));
        expect(derived.search(query)).toEqual(scoreBm25(changed, query));
      }
      for (const term of vocabulary) expect(derived.df(term)).toBe(built.df(term));
      expect(derived.postingCount).toBe(built.postingCount);
    }
  });

  it('puts a replaced document back in its own place, leaving the lists of the terms it kept as they were', async () => {
    const vocabulary = Array.from({ length: 15 }, (_, i) => `w${i}`);
    const { random, document } = await documents(23, vocabulary);
    let corpus = Array.from({ length: 60 }, (_, i) => document(`d${i}`));
    let index = new Bm25Index(corpus);
    for (let round = 0; round < 12; round++) {
      // Some documents revised (most terms kept, one term's tf changed or a term added), some dropped, some new.
      const dropped = new Set<number>();
      while (dropped.size < 4 + (round % 5)) dropped.add(Math.floor(random() * index.size));
      const revised = [...dropped]
        .filter(() => random() < 0.7)
        .map((at) => {
          const old = corpus.find((doc) => doc.id === index.idAt(at))!;
          const termFreqs = new Map(old.termFreqs);
          const term = vocabulary[Math.floor(random() * vocabulary.length)]!;
          termFreqs.set(term, (termFreqs.get(term) ?? 0) + 1);
          return { id: old.id, termFreqs, length: old.length + 1 };
        });
      const added = [...revised, ...Array.from({ length: round % 3 }, (_, i) => document(`n${round}_${i}`))];
      const droppedIds = [...dropped].map((at) => index.idAt(at));
      corpus = [...corpus.filter((doc) => !droppedIds.includes(doc.id)), ...added];
      const plan = slotPlan(
        index.size,
        dropped,
        added.length,
        added.map((doc) => index.indexOf(doc.id)),
      );
      revised.forEach((doc, i) => {
        const own = index.indexOf(doc.id)!;
        if (own < plan.size) expect(plan.addedAt[i]).toBe(own);
      });
      const base = index;
      index = await Bm25Index.derive(base, plan, added);
      const built = new Bm25Index(corpus);
      expect(index.size).toBe(corpus.length);
      for (const query of [['w0'], ['w1', 'w2'], vocabulary]) expect(index.search(query)).toEqual(scoreBm25(corpus, query));
      for (const term of vocabulary) expect(index.df(term)).toBe(built.df(term));
      expect(index.postingCount).toBe(built.postingCount);
      for (const doc of corpus) expect(index.idAt(index.indexOf(doc.id)!)).toBe(doc.id);
    }
  });

  it('rewrites only the lists of the terms a revision in place changed', async () => {
    const corpus = Array.from({ length: 30 }, (_, i) => ({
      id: `d${i}`,
      termFreqs: new Map([
        ['common', 1],
        [`own${i}`, 2],
      ]),
      length: 3,
    }));
    const base = new Bm25Index(corpus);
    const dropped = new Set([3, 7, 12]);
    const added = [...dropped].map((at) => ({
      id: `d${at}`,
      termFreqs: new Map([
        ['common', 1],
        [`own${at}`, 2],
        ['revised', 1],
      ]),
      length: 4,
    }));
    const plan = slotPlan(
      base.size,
      dropped,
      added.length,
      added.map((doc) => base.indexOf(doc.id)),
    );
    expect(plan.addedAt).toEqual([3, 7, 12]);
    const derived = await Bm25Index.derive(base, plan, added);
    const postings = (index: Bm25Index) => (index as unknown as { postings: Map<string, Int32Array> }).postings;
    expect(postings(derived).get('common')).toBe(postings(base).get('common'));
    expect(postings(derived).get('own3')).toBe(postings(base).get('own3'));
    expect(postings(derived).get('revised')).not.toBeUndefined();
    const changed = corpus.map((doc) => added.find((a) => a.id === doc.id) ?? doc);
    for (const query of [['common'], ['revised'], ['own3', 'common']]) expect(derived.search(query)).toEqual(scoreBm25(changed, query));
  });

  it('derives from a derived index, many times over, finding every document by id', async () => {
    const vocabulary = Array.from({ length: 12 }, (_, i) => `w${i}`);
    const { random, document } = await documents(5, vocabulary);
    let corpus = Array.from({ length: 40 }, (_, i) => document(`d${i}`));
    let index = new Bm25Index(corpus);
    const gone = new Set<string>();
    // More drops than adds, more adds than drops, changes in place (the same id dropped and added), the first and last documents.
    for (let round = 0; round < 20; round++) {
      const dropCount = [0, 5, 1, 3, 8][round % 5]!;
      const addCount = [2, 1, 1, 6, 0][round % 5]!;
      const dropped = new Set<number>(round === 7 ? [0, index.size - 1] : []);
      while (dropped.size < Math.min(dropCount, index.size)) dropped.add(Math.floor(random() * index.size));
      const droppedIds = [...dropped].map((at) => index.idAt(at));
      const readded = droppedIds.filter(() => random() < 0.5).map((id) => document(id));
      const added = [...readded, ...Array.from({ length: addCount }, (_, i) => document(`r${round}_${i}`))];
      for (const id of droppedIds) gone.add(id);
      for (const doc of added) gone.delete(doc.id);
      corpus = [...corpus.filter((doc) => !droppedIds.includes(doc.id)), ...added];
      index = await Bm25Index.derive(index, slotPlan(index.size, dropped, added.length), added);
      expect(index.size).toBe(corpus.length);
      for (const query of [['w0'], ['w1', 'w2'], vocabulary]) expect(index.search(query)).toEqual(scoreBm25(corpus, query));
      for (const doc of corpus) expect(index.idAt(index.indexOf(doc.id)!)).toBe(doc.id);
      for (const id of gone) expect(index.indexOf(id)).toBeUndefined();
    }
  });
});

describe('slotPlan', () => {
  it('gives an added document its preferred place when the change drops it and it lies below the new size; the rest as before', () => {
    // 10 documents, 4 dropped (1, 3, 6, 9), 3 added: the new size is 9.
    const dropped = new Set([1, 3, 6, 9]);
    const plan = slotPlan(10, dropped, 3, [6, undefined, 9]);
    // 6 is taken as preferred; 9 is past the new size, so that document takes the lowest free hole.
    expect(plan.addedAt).toEqual([6, 1, 3]);
    expect(plan.size).toBe(9);
    expect([...plan.moved]).toEqual([]);
    // A preferred place the change does not drop, or one asked for twice, is not given.
    expect(slotPlan(10, new Set([2, 5]), 2, [4, undefined]).addedAt).toEqual([2, 5]);
    expect(slotPlan(10, new Set([2, 5]), 2, [5, 5]).addedAt).toEqual([5, 2]);
    // Fewer come than go: the last documents move into the holes left below the new size.
    const shrink = slotPlan(10, new Set([0, 4, 5]), 1, [5]);
    expect(shrink.addedAt).toEqual([5]);
    expect(shrink.size).toBe(8);
    expect([...shrink.moved]).toEqual([
      [9, 0],
      [8, 4],
    ]);
    // No preference: the plan as before (holes lowest first, then new places at the end).
    expect(slotPlan(4, new Set([2]), 3).addedAt).toEqual([2, 4, 5]);
  });
});

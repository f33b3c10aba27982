import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import type { Bm25Document } from '../../src/ranking/bm25.js';
import { expandTerms } from '../../src/ranking/fuzzy-terms.js';
import { requestListSource } from '../../src/search/corpus-source.js';
import { expandQuery, rankCorpus, type RankDeps } from '../../src/search/hybrid-search.js';

const documents: Bm25Document[] = [
  {
    id: 'weather',
    termFreqs: new Map([
      ['weather', 2],
      ['forecast', 1],
    ]),
    length: 3,
  },
  {
    id: 'files',
    termFreqs: new Map([
      ['read', 1],
      ['file', 2],
    ]),
    length: 3,
  },
];
/** BM25 in process over a held index: nothing here reads the store. */
const deps = { embedder: null } as Pick<RankDeps, 'embedder'>;
const rank = (index: Bm25Index, query: string, expandedQuery?: ReturnType<typeof expandQuery>) =>
  rankCorpus(
    deps,
    requestListSource(undefined as unknown as RankDeps['db'], {
      hashes: ['weather', 'files'],
      bm25: index,
      servers: { bm25: index, members: new Map() },
      vocabulary: index.vocabulary(),
      vectors: Promise.resolve(undefined),
      tieKeyOf: (id) => id,
    }),
    { query, topK: 5, mode: 'bm25' },
    expandedQuery ? { expandedQuery } : {},
  ).then((result) => result.tools.map((tool) => [tool.id, tool.score]));

describe('expandQuery handed to rankCorpus', () => {
  it('is the expansion and dense text rankCorpus would compute itself', async () => {
    const index = new Bm25Index(documents);
    const query = 'wether forcast';
    const handed = expandQuery(query, index.vocabulary());
    expect(handed.text).toBe('wether forcast weather forecast');
    expect(handed.expanded.weights.get('weather')).toBeGreaterThan(0);
    expect(await rank(index, query, handed)).toEqual(await rank(index, query));
    expect((await rank(index, query))[0]?.[0]).toBe('weather');
  });

  it('is used as given over the same vocabulary, and ignored over another', async () => {
    const index = new Bm25Index(documents);
    // An expansion of another query: were rankCorpus to expand "weather" itself, "weather" would rank.
    const elsewhere = { vocabulary: index.vocabulary(), expanded: expandTerms(['file'], index.vocabulary()), text: 'file' };
    expect((await rank(index, 'weather', elsewhere)).map(([id]) => id)).toEqual(['files']);
    const otherIndex = new Bm25Index(documents);
    expect((await rank(otherIndex, 'weather', elsewhere)).map(([id]) => id)).toEqual(['weather']);
  });
});

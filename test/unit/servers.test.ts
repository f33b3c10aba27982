import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import { scoreBm25 } from '../../src/ranking/bm25.js';
import { RRF_K } from '../../src/ranking/rrf.js';
import {
  addServerVotes,
  entriesFor,
  serverCentroids,
  serverDocuments,
  SERVER_BM25_WEIGHT,
  SERVER_DEPTH,
  SERVER_VECTOR_WEIGHT,
} from '../../src/ranking/servers.js';
import { l2Normalize } from '../../src/embed/embedder.js';
import { seededRandom } from '../../src/eval/seeded-random.js';

const doc = (id: string, server: string | null, termFreqs: Record<string, number>) => {
  const map = new Map(Object.entries(termFreqs));
  return { id, server, termFreqs: map, length: [...map.values()].reduce((sum, tf) => sum + tf, 0) };
};

describe('serverDocuments', () => {
  it("adds up each server's term counts and lengths, and leaves tools without a server out", () => {
    const { documents, members } = serverDocuments([
      doc('arxiv__search', 'arxiv', { search: 2, paper: 1 }),
      doc('lone', null, { search: 5 }),
      doc('arxiv__read', 'arxiv', { read: 1, paper: 2 }),
      doc('fs__read', 'fs', { read: 1, file: 1 }),
    ]);
    expect(documents).toEqual([
      {
        id: 'arxiv',
        termFreqs: new Map([
          ['search', 2],
          ['paper', 3],
          ['read', 1],
        ]),
        length: 6,
      },
      {
        id: 'fs',
        termFreqs: new Map([
          ['read', 1],
          ['file', 1],
        ]),
        length: 2,
      },
    ]);
    expect(members).toEqual(
      new Map([
        ['arxiv', ['arxiv__search', 'arxiv__read']],
        ['fs', ['fs__read']],
      ]),
    );
    // The server documents are ordinary BM25 documents: N counts servers, not tools.
    const index = new Bm25Index(documents);
    expect(index.search(['paper', 'read'])).toEqual(scoreBm25(documents, ['paper', 'read']));
    expect(index.search(['paper', 'read'])[0]![0]).toBe('arxiv');
  });
});

describe('serverCentroids', () => {
  it("is the unit-length mean of a server's tool vectors, skipping tools without one", () => {
    const centroids = serverCentroids(
      new Map([
        ['a', ['t1', 't2', 'missing']],
        ['b', ['t3']],
        ['none', ['missing']],
      ]),
      new Map([
        ['t1', [1, 0]],
        ['t2', [0, 1]],
        ['t3', [0, 2]],
      ]),
    );
    expect([...centroids.keys()]).toEqual(['a', 'b']);
    expect(centroids.get('a')![0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(centroids.get('a')![1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect([...centroids.get('b')!]).toEqual([0, 1]);
  });

  it('gives the float32 of each normalized sum, as the store reads its means, and leaves out a server whose vectors cancel', () => {
    const random = seededRandom(3);
    const vectors = new Map(Array.from({ length: 40 }, (_, i) => [`t${i}`, Float32Array.from({ length: 8 }, () => random() - 0.5)] as const));
    const members = new Map<string, string[]>([
      ['first', ['t0', 't1', 't2']],
      ['cancels', ['plus', 'minus']],
      ['after', ['t3', 't4']],
      ...Array.from({ length: 10 }, (_, s) => [`s${s}`, Array.from({ length: 3 }, (_, j) => `t${5 + s * 3 + j}`)] as [string, string[]]),
    ]);
    const plus = Float32Array.from({ length: 8 }, (_, i) => i + 1);
    const withCancelling = new Map([...vectors, ['plus', plus], ['minus', plus.map((x) => -x)]]);
    const centroids = serverCentroids(members, withCancelling);
    expect(centroids.has('cancels')).toBe(false);
    expect([...centroids.keys()]).toEqual([...members.keys()].filter((server) => server !== 'cancels'));
    for (const [server, ids] of members) {
      if (server === 'cancels') continue;
      const sum = new Float32Array(8);
      for (const id of ids) withCancelling.get(id)!.forEach((x, i) => (sum[i] = sum[i]! + x));
      expect([...centroids.get(server)!]).toEqual([...Float32Array.from(l2Normalize(sum))]);
    }
  });
});

describe('addServerVotes', () => {
  const members = new Map([
    ['s1', ['a', 'b']],
    ['s2', ['c']],
    ['s3', ['d']],
    ['s4', ['e']],
  ]);

  it("adds each server's weighted reciprocal-rank vote to every one of its tools, BM25's scaled by score / top", () => {
    const { fused, votes } = addServerVotes(
      [
        ['c', 0.02],
        ['a', 0.01],
      ],
      {
        bm25: [
          ['s2', 4],
          ['s1', 2],
        ],
        vector: [['s1', 0.9]],
        members,
      },
    );
    const s1 = (SERVER_BM25_WEIGHT * 0.5) / (RRF_K + 2) + SERVER_VECTOR_WEIGHT / (RRF_K + 1);
    const s2 = SERVER_BM25_WEIGHT / (RRF_K + 1);
    expect(votes.get('a')).toBeCloseTo(s1, 12);
    expect(votes.get('b')).toBeCloseTo(s1, 12);
    expect(votes.get('c')).toBeCloseTo(s2, 12);
    // A tool no retriever found (b) still gets its server's vote; the list is re-sorted.
    expect(fused.map(([id]) => id)).toEqual(['c', 'a', 'b']);
    expect(fused[1]![1]).toBeCloseTo(0.01 + s1, 12);
    expect(fused[2]![1]).toBeCloseTo(s1, 12);
  });

  it('reads only the first SERVER_DEPTH servers of each list', () => {
    const bm25: [string, number][] = [
      ['s1', 4],
      ['s2', 3],
      ['s3', 2],
      ['s4', 1],
    ];
    expect(SERVER_DEPTH).toBe(3);
    const { votes } = addServerVotes([], { bm25, vector: [], members });
    expect([...votes.keys()].sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('changes nothing without servers', () => {
    const fused: [string, number][] = [
      ['x', 0.02],
      ['y', 0.01],
    ];
    expect(addServerVotes(fused, { bm25: [], vector: [], members: new Map() })).toEqual({ fused, votes: new Map() });
  });
});

describe('entriesFor (the dense server list above SERVER_SCAN_MAX)', () => {
  it('keeps each named server that has a mean once, in first-seen order, and skips the rest', () => {
    const means = new Map([
      ['weather', [1, 0]],
      ['files', [0, 1]],
      ['mail', [0.6, 0.8]],
    ]);
    const chosen = entriesFor(['files', undefined, 'unknown', 'weather', 'files'], means);
    expect([...chosen]).toEqual([
      ['files', [0, 1]],
      ['weather', [1, 0]],
    ]);
    expect(entriesFor([], means).size).toBe(0);
  });
});

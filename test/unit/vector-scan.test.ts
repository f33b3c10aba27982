import { describe, expect, it } from 'vitest';
import { byScoreThenKey } from '../../src/ranking/bm25.js';
import { rankByCosine } from '../../src/ranking/vector-scan.js';
import { seededRandom } from '../helpers/seeded-random.js';

/** The plain definition: score everything, sort everything (ties by key), cut. */
function rankAll(query: number[], vectors: ReadonlyMap<string, number[]>, limit: number, keyOf = (id: string) => id): [string, number][] {
  const scored = [...vectors].map(([id, vector]): [string, number] => [id, vector.reduce((sum, x, i) => sum + x * query[i]!, 0)]);
  return scored.sort(byScoreThenKey(keyOf)).slice(0, limit);
}
const reversed = (id: string) => [...id].reverse().join('');

describe('rankByCosine', () => {
  it('scores stored vectors (Float32Array, scanned four at a time) to the same bits as one at a time', () => {
    const random = seededRandom(75);
    for (const size of [1, 3, 4, 5, 8, 258, 1001]) {
      const dimension = 512;
      const query = Array.from({ length: dimension }, () => random() - 0.5);
      const vectors = new Map<string, Float32Array>();
      for (let i = 0; i < size; i++)
        vectors.set(
          `t${i}`,
          Float32Array.from({ length: dimension }, () => random() - 0.5),
        );
      // One shorter vector among them: its block is scored one by one, as far as both reach.
      if (size > 4)
        vectors.set(
          'short',
          Float32Array.from({ length: dimension - 1 }, () => random() - 0.5),
        );
      const plain = new Map([...vectors].map(([id, vector]) => [id, [...vector]]));
      for (const limit of [1, 5, 60, size + 1]) expect(rankByCosine(query, vectors, limit)).toEqual(rankAll(query, plain, limit));
    }
  });

  it('gives the same top `limit` as sorting every candidate, ties by id (or by key) included', () => {
    const random = seededRandom(42);
    for (let round = 0; round < 50; round++) {
      const dimension = 8;
      const query = Array.from({ length: dimension }, () => random() - 0.5);
      const vectors = new Map<string, number[]>();
      const size = 1 + Math.floor(random() * 120);
      for (let i = 0; i < size; i++) {
        // Every third vector repeats an earlier one, so equal scores are common.
        const earlier = [...vectors.values()][Math.floor(random() * vectors.size)];
        vectors.set(`t${Math.floor(random() * 1e6)}_${i}`, i % 3 === 2 && earlier ? earlier : Array.from({ length: dimension }, () => random() - 0.5));
      }
      for (const limit of [0, 1, 5, 50, size, size + 3]) {
        expect(rankByCosine(query, vectors, limit)).toEqual(rankAll(query, vectors, limit));
        expect(rankByCosine(query, vectors, limit, reversed)).toEqual(rankAll(query, vectors, limit, reversed));
      }
    }
  });
});

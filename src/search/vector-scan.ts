import { byScoreThenId } from './bm25.js';

/**
 * Exact cosine ranking of a small candidate set held in memory (vectors are unit length, so the
 * cosine is the dot product). For a request's few hundred tools this is a fraction of a
 * millisecond, less than the round trip of the same scan in pgvector.
 */
export function rankByCosine(query: ArrayLike<number>, vectors: ReadonlyMap<string, ArrayLike<number>>, limit: number): [string, number][] {
  const scored: [string, number][] = [];
  for (const [id, vector] of vectors) {
    let dot = 0;
    const length = Math.min(query.length, vector.length);
    for (let i = 0; i < length; i++) dot += query[i]! * vector[i]!;
    scored.push([id, dot]);
  }
  return scored.sort(byScoreThenId).slice(0, limit);
}

import { byScoreThenKey } from './bm25.js';

/**
 * Exact cosine ranking of a candidate set held in memory (vectors are unit length, so the cosine
 * is the dot product): a request's few hundred tools, or a large catalog's server mean vectors.
 * The best `limit` are kept as the scan goes (a sorted run of at most `limit`), so tens of
 * thousands of candidates cost their dot products, not a sort; the answer equals sorting them all
 * by cosine, ties by `keyOf` (the id by default), and cutting.
 */
export function rankByCosine(
  query: ArrayLike<number>,
  vectors: ReadonlyMap<string, ArrayLike<number>>,
  limit: number,
  keyOf: (id: string) => string = (id) => id,
): [string, number][] {
  if (limit <= 0) return [];
  const order = byScoreThenKey(keyOf);
  const q = Float64Array.from(query);
  const best: [string, number][] = [];
  for (const [id, vector] of vectors) {
    let dot = 0;
    const length = Math.min(q.length, vector.length);
    for (let i = 0; i < length; i++) dot += q[i]! * vector[i]!;
    // A candidate that cannot enter makes no entry (a 10,000-tool catalog's scan kept 10,000 of them as garbage).
    if (best.length === limit) {
      const worst = best[best.length - 1]!;
      if (dot < worst[1] || (dot === worst[1] && order(worst, [id, dot]) <= 0)) continue;
    }
    const entry: [string, number] = [id, dot];
    // Insert in order (binary search), dropping the worst past `limit`.
    let low = 0;
    let high = best.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (order(best[middle]!, entry) <= 0) low = middle + 1;
      else high = middle;
    }
    best.splice(low, 0, entry);
    if (best.length > limit) best.pop();
  }
  return best;
}

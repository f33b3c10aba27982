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
  const consider = (id: string, dot: number) => {
    // A candidate that cannot enter makes no entry (a 10,000-tool catalog's scan kept 10,000 of them as garbage).
    if (best.length === limit) {
      const worst = best[best.length - 1]!;
      if (dot < worst[1] || (dot === worst[1] && order(worst, [id, dot]) <= 0)) return;
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
  };
  // Candidates go through in blocks (see dotProducts), then one by one in the map's order.
  const ids: string[] = [];
  const rows: ArrayLike<number>[] = [];
  const dots = new Float64Array(BLOCK);
  const flush = () => {
    dotProducts(q, rows, dots);
    for (let k = 0; k < ids.length; k++) consider(ids[k]!, dots[k]!);
    ids.length = 0;
    rows.length = 0;
  };
  for (const [id, vector] of vectors) {
    ids.push(id);
    rows.push(vector);
    if (ids.length === BLOCK) flush();
  }
  if (ids.length > 0) flush();
  return best;
}

/** Vectors whose dot products with the query are computed together (see dotProducts). */
const BLOCK = 4;

/**
 * The dot product of `q` with each row, into `out`. A block of BLOCK stored vectors shares one pass
 * over the query: the adds of one sum wait on each other, four independent sums keep the CPU busy
 * (a 258-tool list's scan took ~0.1 ms instead of ~0.18). Each sum still adds its products in index
 * order, so every dot product is exactly the one-row loop's, to the last bit.
 */
function dotProducts(q: Float64Array, rows: readonly ArrayLike<number>[], out: Float64Array): void {
  if (rows.length === BLOCK && rows.every((row) => row instanceof Float32Array && row.length === rows[0]!.length)) {
    dotProducts4(q, rows as Float32Array[], out);
    return;
  }
  rows.forEach((row, k) => {
    let dot = 0;
    const length = Math.min(q.length, row.length);
    for (let i = 0; i < length; i++) dot += q[i]! * row[i]!;
    out[k] = dot;
  });
}

/** dotProducts of BLOCK stored vectors (Float32Array, one length): one kind of array, which V8 reads fastest. */
function dotProducts4(q: Float64Array, [a, b, c, d]: readonly Float32Array[], out: Float64Array): void {
  const length = Math.min(q.length, a!.length);
  let sa = 0;
  let sb = 0;
  let sc = 0;
  let sd = 0;
  for (let i = 0; i < length; i++) {
    const x = q[i]!;
    sa += x * a![i]!;
    sb += x * b![i]!;
    sc += x * c![i]!;
    sd += x * d![i]!;
  }
  out[0] = sa;
  out[1] = sb;
  out[2] = sc;
  out[3] = sd;
}

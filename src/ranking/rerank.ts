/**
 * The rerank stage's maths: the fused list's head reordered by a reranker's scores. `fuse` (the
 * default) adds the reranker's rank to the first stage's as weighted RRF, the reranker weighing
 * RERANK_WEIGHT times as much: it decides where it is sure, and the first stage's evidence (BM25's
 * exact words, the learned votes) still breaks its near-ties. `replace` orders the head by the
 * reranker's scores alone, for a reranker its operator has measured on their own tools. Either way
 * the head keeps its own scores, in order, so the rest of the list stays below it.
 */

export type RerankMode = 'fuse' | 'replace';

/** The reranker's weight against the first stage's order in `fuse` mode. */
export const RERANK_WEIGHT = 2;

/** A text the reranker reads for a tool: its name and description (cut by the client). */
export function rerankText(name: string, description: string): string {
  const about = description.trim();
  return about ? `${name}: ${about}` : name;
}

/**
 * `head` (the fused list's first entries, best first) reordered by `scores` (the reranker's, in
 * head order), with each tool's place and score in the reranker's own list.
 */
export function rerankHead(
  head: readonly [string, number][],
  scores: readonly number[],
  mode: RerankMode,
  k: number,
): { reordered: [string, number][]; at: Map<string, { rank: number; score: number }> } {
  const byReranker = head.map((_, index) => index).sort((a, b) => scores[b]! - scores[a]! || a - b);
  const rerankRank = new Array<number>(head.length);
  byReranker.forEach((index, rank) => {
    rerankRank[index] = rank;
  });
  const key = (index: number) => (mode === 'replace' ? -rerankRank[index]! : 1 / (k + index + 1) + RERANK_WEIGHT / (k + rerankRank[index]! + 1));
  const order = head.map((_, index) => index).sort((a, b) => key(b) - key(a) || a - b);
  const descending = head.map(([, score]) => score).sort((a, b) => b - a);
  return {
    reordered: order.map((index, place) => [head[index]![0], descending[place]!]),
    at: new Map(head.map(([id], index) => [id, { rank: rerankRank[index]! + 1, score: scores[index]! }])),
  };
}

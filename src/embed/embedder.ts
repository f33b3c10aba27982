/**
 * What the rest of toolsift needs from a sentence-embedding model. Implementations: `use-lite.ts`
 * (Universal Sentence Encoder Lite in worker threads) and `transformers.ts` (any ONNX sentence model).
 */
export interface Embedder {
  /** Stable id stored beside every vector, e.g. 'use-lite' or 'Xenova/all-MiniLM-L6-v2'. */
  readonly modelId: string;
  readonly dimension: number;
  /** Unit-length vectors, one per text, same order. Documents (tool texts). */
  embedDocuments(texts: string[]): Promise<number[][]>;
  /** Unit-length vector for a search query (query prefix applied when the model has one). */
  embedQuery(text: string): Promise<number[]>;
  /**
   * embedQuery calls for one text share one model call, while it runs and after (the query cache):
   * a caller may start a query early, and a later call for that text finds it (http/early-query.ts).
   */
  readonly sharesQueries?: boolean;
  /** An embedding service's last failure, for /readyz (in-process models have none). */
  lastFailure?(): string | undefined;
  close(): Promise<void>;
}

export type EmbedderStatus = {
  state: 'ready' | 'loading' | 'unavailable' | 'disabled';
  modelId: string;
  reason?: string;
  /** unavailable for a reason that may pass (an embedding service unreachable, 429, 5xx), not a setting to fix. */
  transient?: boolean;
};

/**
 * Scales a vector to unit length so cosine similarity is a plain dot product. A zero vector is
 * returned as zeros rather than NaNs: it then scores 0 against everything instead of poisoning sums.
 */
export function l2Normalize(vector: ArrayLike<number>): number[] {
  let sumOfSquares = 0;
  for (let i = 0; i < vector.length; i++) sumOfSquares += vector[i]! * vector[i]!;
  const norm = Math.sqrt(sumOfSquares);
  const out = new Array<number>(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = norm > 0 ? vector[i]! / norm : 0;
  return out;
}

/** Splits `items` into consecutive slices of at most `size` (size >= 1). */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

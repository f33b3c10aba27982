import type { Embedder } from './embedder.js';

/**
 * Remembers the vectors of recent queries: agents repeat the same few searches, and a query
 * embedding costs tens of milliseconds on a CPU. Least recently used entries go first. Documents
 * pass straight through; they are embedded once and stored.
 */
export function withQueryCache(embedder: Embedder, capacity: number): Embedder {
  if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`query cache capacity must be a positive integer, got ${capacity}`);
  // Map iteration order is insertion order, so the first key is the least recently used.
  const entries = new Map<string, Promise<number[]>>();

  return {
    modelId: embedder.modelId,
    dimension: embedder.dimension,
    sharesQueries: true,
    embedDocuments: (texts) => embedder.embedDocuments(texts),
    ...(embedder.lastFailure ? { lastFailure: () => embedder.lastFailure?.() } : {}),
    embedQuery(text) {
      const key = cacheKey(text);
      const cached = entries.get(key);
      if (cached) {
        entries.delete(key);
        entries.set(key, cached);
        return cached;
      }
      // The promise, not the vector, is cached, so identical queries arriving together share one
      // model call; a failure is forgotten so the next call retries.
      const pending = embedder.embedQuery(text);
      entries.set(key, pending);
      pending.catch(() => {
        if (entries.get(key) === pending) entries.delete(key);
      });
      if (entries.size > capacity) entries.delete(entries.keys().next().value!);
      return pending;
    },
    close: () => {
      entries.clear();
      return embedder.close();
    },
  };
}

/** Queries differing only in surrounding or repeated whitespace embed alike. */
function cacheKey(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

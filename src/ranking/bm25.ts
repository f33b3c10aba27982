/**
 * Okapi BM25, exactly as the Postgres query computes it: this in-memory version is the reference
 * that the SQL implementation is tested against, so it stays literal rather than clever.
 *
 * Definitions shared with SQL:
 * - a document is a bag of terms (`termFreqs`); its `length` is the sum of its term frequencies;
 * - N, avgdl and df are taken over the corpus being searched (after tag filtering);
 * - each distinct query term counts once (see `distinctTerms`);
 * - only documents containing at least one query term are returned.
 */

/** Term-frequency saturation: the usual 1.2; a tool document repeats a term only a few times. */
export const BM25_K1 = 1.2;
/** Length normalisation: the usual 0.75, so a long parameter list does not drown its name. */
export const BM25_B = 0.75;
/**
 * Term counts per unit of weight: a document's fields are weighted (catalog/search-text.ts), and
 * its term counts stay integers (the store's and Bm25Index's) by counting each weight-1 occurrence
 * BM25_TERM_UNIT times. Saturation then reads k1 x BM25_TERM_UNIT, so every score is the one of
 * fractional counts with k1: a document without weighted fields scores as if counted once.
 */
export const BM25_TERM_UNIT = 2;

export interface Bm25Document {
  id: string;
  termFreqs: ReadonlyMap<string, number>;
  /** Sum of termFreqs: the number of terms in the document, repeats included. */
  length: number;
}

export interface Bm25Params {
  k1: number;
  b: number;
  /** Term counts per unit of weight (BM25_TERM_UNIT). */
  unit: number;
}

export const DEFAULT_BM25_PARAMS: Bm25Params = { k1: BM25_K1, b: BM25_B, unit: BM25_TERM_UNIT };

/** Lucene's IDF: never negative, so a term found in most documents still counts a little. */
export function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** One term's contribution to one document's score. */
export function bm25TermScore(tf: number, idf: number, docLength: number, avgDocLength: number, params: Bm25Params = DEFAULT_BM25_PARAMS): number {
  if (tf <= 0) return 0;
  return (idf * tf * (params.k1 + 1)) / (tf + lengthNorm(docLength, avgDocLength, params));
}

/** The document-length part of a term's score: k1 x unit x (1 - b + b dl / avgdl). */
export function lengthNorm(docLength: number, avgDocLength: number, params: Bm25Params = DEFAULT_BM25_PARAMS): number {
  // An all-empty corpus has avgdl 0; no document then holds a term, but keep the maths finite.
  const relativeLength = avgDocLength > 0 ? docLength / avgDocLength : 1;
  return params.k1 * params.unit * (1 - params.b + params.b * relativeLength);
}

/**
 * Query terms as BM25 sees them: each distinct term once, in first-seen order. Long agent tasks
 * repeat their topic words ("stock ... stock price ... stock"); counting repeats let one word
 * outweigh the rest of the task, and the eval preferred counting once.
 */
export function distinctTerms(terms: readonly string[]): string[] {
  return [...new Set(terms)];
}

/** Scores every document that contains a query term; best first, ties by id. */
export function scoreBm25(corpus: readonly Bm25Document[], queryTerms: readonly string[], params: Bm25Params = DEFAULT_BM25_PARAMS): [string, number][] {
  const terms = distinctTerms(queryTerms);
  if (corpus.length === 0 || terms.length === 0) return [];
  const n = corpus.length;
  const avgDocLength = corpus.reduce((sum, doc) => sum + doc.length, 0) / n;
  const idfs = terms.map((term) => {
    const df = corpus.reduce((count, doc) => count + ((doc.termFreqs.get(term) ?? 0) > 0 ? 1 : 0), 0);
    return bm25Idf(n, df);
  });

  const scored: [string, number][] = [];
  for (const doc of corpus) {
    let score = 0;
    let matched = false;
    terms.forEach((term, i) => {
      const tf = doc.termFreqs.get(term) ?? 0;
      if (tf <= 0) return;
      matched = true;
      score += bm25TermScore(tf, idfs[i] as number, doc.length, avgDocLength, params);
    });
    if (matched) scored.push([doc.id, score]);
  }
  return scored.sort(byScoreThenId);
}

/** Best first; equal scores in id order so results are stable across runs and engines. */
export function byScoreThenId(a: [string, number], b: [string, number]): number {
  return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}

/** `byScoreThenId` with ties in the order of each id's key (a request's list: its tools' names). */
export function byScoreThenKey(keyOf: (id: string) => string): (a: readonly [string, number], b: readonly [string, number]) => number {
  return (a, b) => {
    if (b[1] !== a[1]) return b[1] - a[1];
    const [x, y] = [keyOf(a[0]), keyOf(b[0])];
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

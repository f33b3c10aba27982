/**
 * BM25 over a fixed corpus with its statistics computed once: the selector's repeated tool lists.
 * A gateway sends the same tools every turn, so N, avgdl and the postings of a list never change
 * between its requests; only the query does. Scores are the same floating-point operations, in the
 * same order, as `scoreBm25` (the reference the SQL is tested against), so they are identical to it;
 * Postgres groups the arithmetic differently, so against SQL only near-ties can order differently.
 */
import { bm25Idf, bm25TermScore, byScoreThenId, distinctTerms, DEFAULT_BM25_PARAMS, type Bm25Document, type Bm25Params } from './bm25.js';

export class Bm25Index {
  readonly size: number;
  private readonly ids: string[];
  private readonly lengths: Float64Array;
  private readonly avgDocLength: number;
  /** term -> [document index, term frequency] pairs, in corpus order. */
  private readonly postings = new Map<string, number[]>();

  constructor(corpus: readonly Bm25Document[], private readonly params: Bm25Params = DEFAULT_BM25_PARAMS) {
    this.size = corpus.length;
    this.ids = corpus.map((doc) => doc.id);
    this.lengths = Float64Array.from(corpus, (doc) => doc.length);
    this.avgDocLength = this.size === 0 ? 0 : corpus.reduce((sum, doc) => sum + doc.length, 0) / this.size;
    corpus.forEach((doc, index) => {
      for (const [term, tf] of doc.termFreqs) {
        if (tf <= 0) continue;
        let list = this.postings.get(term);
        if (!list) this.postings.set(term, (list = []));
        list.push(index, tf);
      }
    });
  }

  /** Whether any document of the corpus holds `term`. */
  has(term: string): boolean {
    return this.postings.has(term);
  }

  /** The documents holding a query term, best first, ties by id, at most `limit`. */
  search(queryTerms: readonly string[], limit = Number.POSITIVE_INFINITY): [string, number][] {
    return this.searchWeighted(new Map(distinctTerms(queryTerms).map((term) => [term, 1])), limit);
  }

  /**
   * `search` with each term's contribution multiplied by its weight, like the SQL's `weights`
   * (added terms, such as feedback or expansion terms, can count less than the query's own).
   * Weight 1 multiplies exactly, so `search` keeps `scoreBm25`'s scores to the last bit.
   */
  searchWeighted(weights: ReadonlyMap<string, number>, limit = Number.POSITIVE_INFINITY): [string, number][] {
    const scores = new Float64Array(this.size);
    const matched = new Uint8Array(this.size);
    for (const [term, weight] of weights) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = bm25Idf(this.size, list.length / 2);
      for (let i = 0; i < list.length; i += 2) {
        const doc = list[i]!;
        scores[doc] = scores[doc]! + weight * bm25TermScore(list[i + 1]!, idf, this.lengths[doc]!, this.avgDocLength, this.params);
        matched[doc] = 1;
      }
    }
    const ranked: [string, number][] = [];
    for (let doc = 0; doc < this.size; doc++) if (matched[doc]) ranked.push([this.ids[doc]!, scores[doc]!]);
    ranked.sort(byScoreThenId);
    return ranked.length > limit ? ranked.slice(0, limit) : ranked;
  }

  /** The IDF of a term over this corpus (0 documents holding it: the largest). */
  idf(term: string): number {
    return bm25Idf(this.size, (this.postings.get(term)?.length ?? 0) / 2);
  }
}

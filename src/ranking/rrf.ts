/**
 * Reciprocal Rank Fusion of the retrievers' ranked lists. Stages hand over `[id, score]` lists,
 * best first; fusion reads ranks, and for a score-scaled list also its own scores.
 *
 * Why not plain equal-weight RRF: with a weak dense model (USE Lite) it made toolbench_stable
 * worse than BM25 alone, because RRF flattens BM25's confident head (rank 1 with twice the score
 * of rank 10 gets barely more credit) and lets near-random dense ranks reorder it. Two changes fix
 * it, both measured on the dev splits (README, "Measured quality and speed"): the dense list votes
 * with a lower weight, and BM25 votes are scaled by score / top score, so BM25 speaks loudly only
 * where its own scores say it is sure. The dense weight is set per query (denseWeight, below).
 */
import { byScoreThenId } from './bm25.js';

export type Ranked = readonly (readonly [string, number])[];

/** Cormack et al.'s constant: damps the head so one retriever's rank 1 cannot decide alone. */
export const RRF_K = 60;
/** Candidates read from each list: 50 beat 30 (misses multi-tool tasks) and 100 (adds noise). */
export const RRF_DEPTH = 50;
/** BM25 is the stronger retriever on every eval set; its votes are the unit. */
export const BM25_WEIGHT = 1;
/**
 * The dense weight of the fusion before it adapted per query (denseWeight), and fuseHybrid's
 * default: fitted on livemcpbench and toolbench_stable, it left sealtools 0.03 under BM25 alone.
 */
export const VECTOR_WEIGHT = 0.4;

export interface FusionInput {
  /** Best first. Scores must be non-negative when `scaleByScore` is set. */
  ranked: Ranked;
  /** Multiplies this list's reciprocal-rank votes; 1 is plain RRF. */
  weight: number;
  /**
   * Scale each vote by score / top score of this list: the list's own confidence. Meant for BM25,
   * whose scores are comparable within a query; cosine scores sit in a narrow band, so not those.
   */
  scaleByScore: boolean;
}

export interface FusionOptions {
  k: number;
  depth: number;
}

export const DEFAULT_FUSION_OPTIONS: FusionOptions = { k: RRF_K, depth: RRF_DEPTH };

/**
 * Weighted, optionally score-scaled RRF:
 * fused(id) = sum over lists of weight * scale(id) / (k + rank(id)), rank from 1, over the first
 * `depth` entries of each list; scale is score / top score, or 1; entries of equal score share
 * 1 / (k + rank) over their ranks equally. Best first, ties by id.
 */
export function fuseRrf(inputs: readonly FusionInput[], options: FusionOptions = DEFAULT_FUSION_OPTIONS): [string, number][] {
  const fused = new Map<string, number>();
  for (const { ranked, weight, scaleByScore } of inputs) {
    if (!(weight > 0) || ranked.length === 0) continue;
    const top = (ranked[0] as readonly [string, number])[1];
    const depth = Math.min(options.depth, ranked.length);
    for (let first = 0; first < depth; ) {
      // Tools the list scores alike share their places' votes (each gets the mean): what order a
      // retriever put a tie in decides nothing.
      const score = (ranked[first] as readonly [string, number])[1];
      let end = first + 1;
      while (end < depth && (ranked[end] as readonly [string, number])[1] === score) end++;
      const scale = scaleByScore ? (top > 0 ? Math.max(0, score / top) : 0) : 1;
      let vote = (weight * scale) / (options.k + first + 1);
      if (end - first > 1) {
        let votes = 0;
        for (let place = first; place < end; place++) votes += 1 / (options.k + place + 1);
        vote = (weight * scale * votes) / (end - first);
      }
      for (let place = first; place < end; place++) {
        const id = (ranked[place] as readonly [string, number])[0];
        fused.set(id, (fused.get(id) ?? 0) + vote);
      }
      first = end;
    }
  }
  return [...fused].sort(byScoreThenId);
}

/**
 * The dense list's weight when the corpus holds every word of the query: next to none, BM25 has
 * every word to go on. Not 0: the dense list still breaks BM25's exact ties and fills the answer
 * after BM25's matches (a query some tool matches by only a few words still gets top_k tools).
 */
export const DENSE_WEIGHT_FLOOR = 1e-6;
/** What each unknown share of the query adds to the dense weight (all words unknown: 0.5 more). */
export const DENSE_WEIGHT_PER_UNKNOWN = 0.5;
/** A typical BM25 top-to-10th score ratio on the dev corpora (their medians: 1.9-2.5). */
export const BM25_PEAK_REFERENCE = 2.5;
/** How strongly a peaked BM25 list keeps the dense list's say down (1 would be in proportion). */
export const BM25_PEAK_EXPONENT = 0.5;
/** Above this the dense list's rank 1 would outvote BM25's twice over. */
export const DENSE_WEIGHT_MAX = 2;
/**
 * The default model's (USE Lite) top-to-10th cosine gap at or under which the dense list gets no
 * more say: the dev corpora's medians are 0.07-0.11 (thousands of tools, many alike); small
 * catalogs of short descriptions, where the dense list is the better one, 0.19-0.22.
 */
export const DENSE_GAP_REFERENCE = 0.1;
/** How fast a dense head that stands out gains say: twice the reference gap, four times the weight. */
export const DENSE_GAP_EXPONENT = 2;

/**
 * The dense list's weight for one query. Reason: words the corpus does not know are the dense
 * list's job, and a list whose head stands out from its 10th has earned its say (BM25's less, the
 * dense list's more).
 *   weight = min(MAX, (FLOOR + PER_UNKNOWN x (1 - known) x (PEAK_REFERENCE / peak)^PEAK_EXPONENT)
 *                     x max(1, gap / GAP_REFERENCE)^GAP_EXPONENT)
 * `known` is the share of the query's distinct terms that some document of the corpus holds
 * (spelled as the query spells them: a word typo matching corrected does not count, so a typo
 * leans on BM25's corrections, not on a model that misreads it too); peak is BM25's top score over
 * its 10th (over its last when shorter; 1 when empty); gap is the dense list's top cosine minus its
 * 10th (its last; 0 when empty). Chosen leave-one-corpus-out on four corpora and five small
 * one-line-description catalogs drawn from them (`npx tsx bench/research/fusion-loco.ts`, docs/ranking.md):
 * no fixed weight suits both the corpora where BM25 is much the better list and those where the
 * dense list is.
 */
export function denseWeight(known: number, bm25: Ranked, dense: Ranked): number {
  const unknown = Math.min(1, Math.max(0, 1 - known));
  const base = DENSE_WEIGHT_FLOOR + DENSE_WEIGHT_PER_UNKNOWN * unknown * (BM25_PEAK_REFERENCE / bm25Peak(bm25)) ** BM25_PEAK_EXPONENT;
  return Math.min(DENSE_WEIGHT_MAX, base * Math.max(1, denseGap(dense) / DENSE_GAP_REFERENCE) ** DENSE_GAP_EXPONENT);
}

/** BM25's top score over its 10th (over its last when shorter; 1 when empty): how far its head stands out. */
export function bm25Peak(bm25: Ranked): number {
  const top = bm25[0]?.[1] ?? 0;
  const tenth = bm25[Math.min(9, bm25.length - 1)]?.[1] ?? 0;
  return top > 0 && tenth > 0 ? top / tenth : 1;
}

/** The dense list's top cosine minus its 10th (its last when shorter; 0 when empty): how far its head stands out. */
export function denseGap(dense: Ranked): number {
  return dense.length > 0 ? dense[0]![1] - dense[Math.min(9, dense.length - 1)]![1] : 0;
}

/** The shipped fusion of one BM25 list and one vector list, both best first; the dense weight is the query's (denseWeight). */
export function fuseHybrid(
  bm25: Ranked,
  vector: Ranked,
  vectorWeight: number = VECTOR_WEIGHT,
  options: FusionOptions = DEFAULT_FUSION_OPTIONS,
): [string, number][] {
  return fuseRrf(
    [
      { ranked: bm25, weight: BM25_WEIGHT, scaleByScore: true },
      { ranked: vector, weight: vectorWeight, scaleByScore: false },
    ],
    options,
  );
}

/**
 * `head` as it is, then the tools of `tail` it lacks, in `tail`'s order, each scored below `head`'s
 * last (and above 0): a list the caller trusts first, and one it keeps only so that an answer is
 * not empty (hybrid's dense list for a query the model does not read, ranking/language.ts).
 */
export function appendBelow(head: Ranked, tail: Ranked): [string, number][] {
  const seen = new Set(head.map(([id]) => id));
  const rest = tail.filter(([id]) => !seen.has(id));
  const floor = head.length > 0 ? head[head.length - 1]![1] : 1;
  return [
    ...head.map(([id, score]): [string, number] => [id, score]),
    ...rest.map(([id], i): [string, number] => [id, (floor * (rest.length - i)) / (rest.length + 1)]),
  ];
}

/**
 * Reciprocal Rank Fusion of the retrievers' ranked lists. Stages hand over `[id, score]` lists,
 * best first; fusion reads ranks, and for a score-scaled list also its own scores.
 *
 * Why not plain equal-weight RRF: with a weak dense model (USE Lite) it made toolbench_stable
 * worse than BM25 alone, because RRF flattens BM25's confident head (rank 1 with twice the score
 * of rank 10 gets barely more credit) and lets near-random dense ranks reorder it. Two changes fix
 * it, both measured on the dev splits (README, "Measured quality and speed"): the dense list votes
 * with a lower weight, and BM25 votes are scaled by score / top score, so BM25 speaks loudly only
 * where its own scores say it is sure.
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
 * USE Lite alone reaches ~55% of BM25's nDCG; at 0.4 it adds the tools BM25 misses on long
 * multi-step tasks without reordering BM25's confident matches (0.35-0.5 all work; 1 hurts).
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
 * `depth` entries of each list; scale is score / top score, or 1. Best first, ties by id.
 */
export function fuseRrf(
  inputs: readonly FusionInput[],
  options: FusionOptions = DEFAULT_FUSION_OPTIONS,
): [string, number][] {
  const fused = new Map<string, number>();
  for (const { ranked, weight, scaleByScore } of inputs) {
    if (!(weight > 0) || ranked.length === 0) continue;
    const top = (ranked[0] as readonly [string, number])[1];
    const depth = Math.min(options.depth, ranked.length);
    for (let i = 0; i < depth; i++) {
      const [id, score] = ranked[i] as readonly [string, number];
      const scale = scaleByScore ? (top > 0 ? Math.max(0, score / top) : 0) : 1;
      fused.set(id, (fused.get(id) ?? 0) + (weight * scale) / (options.k + i + 1));
    }
  }
  return [...fused].sort(byScoreThenId);
}

/** The shipped fusion of one BM25 list and one vector list, both best first. */
export function fuseHybrid(
  bm25: Ranked,
  vector: Ranked,
  options: FusionOptions = DEFAULT_FUSION_OPTIONS,
): [string, number][] {
  return fuseRrf(
    [
      { ranked: bm25, weight: BM25_WEIGHT, scaleByScore: true },
      { ranked: vector, weight: VECTOR_WEIGHT, scaleByScore: false },
    ],
    options,
  );
}


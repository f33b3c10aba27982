/**
 * Reciprocal Rank Fusion of the retrievers' ranked lists. Stages hand over `[id, score]` lists,
 * best first; only ranks (and, for the weights, each list's own scores) matter here.
 */
import { byScoreThenId } from './bm25.js';

export type Ranked = readonly (readonly [string, number])[];

/** Cormack et al.'s constant: damps the head so one retriever's rank 1 cannot decide alone. */
export const RRF_K = 60;
/** Candidates read from each list: deep enough that a tool ranked 40th by one side can still rise. */
export const RRF_DEPTH = 50;

export interface FusionInput {
  ranked: Ranked;
  /** Multiplies this list's reciprocal-rank votes; 1 is plain RRF. */
  weight: number;
}

export interface FusionOptions {
  k: number;
  depth: number;
}

export const DEFAULT_FUSION_OPTIONS: FusionOptions = { k: RRF_K, depth: RRF_DEPTH };

/** Weighted RRF: score(id) = sum over lists of weight / (k + rank), rank from 1. */
export function fuseRrf(
  inputs: readonly FusionInput[],
  options: FusionOptions = DEFAULT_FUSION_OPTIONS,
): [string, number][] {
  const fused = new Map<string, number>();
  for (const { ranked, weight } of inputs) {
    if (!(weight > 0)) continue;
    const depth = Math.min(options.depth, ranked.length);
    for (let i = 0; i < depth; i++) {
      const id = (ranked[i] as readonly [string, number])[0];
      fused.set(id, (fused.get(id) ?? 0) + weight / (options.k + i + 1));
    }
  }
  return [...fused].sort(byScoreThenId);
}

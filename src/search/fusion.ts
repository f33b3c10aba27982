import { fuseRrf, RRF_DEPTH } from './rrf.js';

/** Candidates read from each retriever before fusing. */
export const FUSION_DEPTH = RRF_DEPTH;

/** Placeholder weights until the eval settles them (see rrf.ts). */
export function fuseHybrid(bm25: [string, number][], vector: [string, number][]): [string, number][] {
  return fuseRrf([
    { ranked: bm25, weight: 1 },
    { ranked: vector, weight: 1 },
  ]);
}

/**
 * A calibrated confidence for a ranked tool: the estimated probability that it is relevant to the
 * query, from the signals the ranking already has (where the tool sits in each list, its scores
 * against the query's best, how well the query matches anything at all, its server's vote, an
 * exact name). A logistic model, fitted on the four corpora's dev splits by `npm run
 * fit:confidence` (src/cli/fit-confidence.ts), which reports its calibration in sample and on each
 * corpus left out of the fit; the coefficients live in confidence-model.ts, versioned with the
 * ranking they were fitted on.
 */
import { FITTED_CONFIDENCE } from './confidence-model.js';

/** What a ranked tool carries (hybrid-search's explain) plus its place in the fused list. */
export interface ConfidenceInput {
  rank: number;
  bm25: { rank: number; score: number } | null;
  vector: { rank: number; score: number } | null;
  server_vote: number;
  exact_name: boolean;
}

export const CONFIDENCE_FEATURES = [
  'fused_recip',
  'bm25_present',
  'bm25_recip',
  'bm25_rel',
  'bm25_best_log',
  'vector_present',
  'vector_recip',
  'cosine',
  'cosine_gap',
  'cosine_best',
  'server_vote',
  'exact_name',
] as const;

/** The query-level figures features are relative to: the top BM25 score and cosine of its lists (0 when a list is empty). */
export interface ListBests {
  bm25: number;
  vector: number;
}

export function confidenceFeatures(tool: ConfidenceInput, bests: ListBests): number[] {
  const bm25 = tool.bm25;
  const vector = tool.vector;
  return [
    1 / tool.rank,
    bm25 ? 1 : 0,
    bm25 ? 1 / bm25.rank : 0,
    bm25 && bests.bm25 > 0 ? bm25.score / bests.bm25 : 0,
    Math.log1p(bests.bm25),
    vector ? 1 : 0,
    vector ? 1 / vector.rank : 0,
    vector ? vector.score : 0,
    vector ? bests.vector - vector.score : 0,
    bests.vector,
    tool.server_vote > 0 ? 1 : 0,
    tool.exact_name ? 1 : 0,
  ];
}

export interface ConfidenceModel {
  version: number;
  features: readonly string[];
  weights: number[];
  bias: number;
  /** Feature means and spreads of the fit (inputs are standardized with them). */
  means: number[];
  scales: number[];
}

export const CONFIDENCE_MODEL: ConfidenceModel = FITTED_CONFIDENCE;

export function predictConfidence(features: readonly number[], fitted: ConfidenceModel = CONFIDENCE_MODEL): number {
  let z = fitted.bias;
  for (let i = 0; i < features.length; i++) z += fitted.weights[i]! * ((features[i]! - fitted.means[i]!) / fitted.scales[i]!);
  return 1 / (1 + Math.exp(-z));
}

/** The confidences of a BM25-only ranking (a store fallback's): no vector, no server vote, no exact name. */
export function bm25Confidences(ranked: readonly (readonly [string, number])[]): number[] {
  return confidences(
    ranked.map(([, score], index) => ({ rank: index + 1, bm25: { rank: index + 1, score }, vector: null, server_vote: 0, exact_name: false })),
    { bm25: ranked[0]?.[1] ?? 0, vector: 0 },
  );
}

/** Each ranked tool's confidence, in the list's order (`rank` is its 1-based place). */
export function confidences(tools: readonly ConfidenceInput[], bests: ListBests, fitted: ConfidenceModel = CONFIDENCE_MODEL): number[] {
  return tools.map((tool) => predictConfidence(confidenceFeatures(tool, bests), fitted));
}

/**
 * What a confidence is multiplied by when the query's language is not read by the model (a query
 * in German for USE Lite, ranking/language.ts). The model above was fitted on English queries, where
 * a tool's BM25 standing says how likely it is relevant; for a query the model does not read, the
 * same standing comes from shared names, numbers and cognates and says less. The factor is the
 * share of answers whose top tool is relevant over that tool's mean confidence (0.139 / 0.187), on
 * the labelled non-English queries (test/fixtures/multilingual; docs/ranking.md has the fit).
 */
export const UNREAD_LANGUAGE_SCALE = 0.75;

/** `confidences` of a ranking, scaled by UNREAD_LANGUAGE_SCALE when the query's language was not understood. */
export function rankingConfidences(tools: readonly ConfidenceInput[], bests: ListBests, language?: { understood: boolean }): number[] {
  const values = confidences(tools, bests);
  return language && !language.understood ? values.map((value) => value * UNREAD_LANGUAGE_SCALE) : values;
}

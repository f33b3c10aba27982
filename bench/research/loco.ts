/**
 * The pieces of docs/ranking.md's rule that its benches share (bench/research/fusion-loco.ts,
 * bench/research/bm25-params.ts): the queries as the eval reads them (clean, and with its seeded typos), which
 * public corpus a set is drawn from, and how a setting is chosen on some sets.
 */
import type { EvalQuery } from '../../src/eval/run-eval.js';
import { loadQueries } from '../../src/eval/run-eval.js';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { addTypos } from '../../src/eval/typos.js';

/** The eval's typo rate and seed (`npm run eval -- --typos 0.2 --seed 1`). */
export const TYPO_RATE = 0.2;
export const TYPO_SEED = 1;

/** A set's dev queries and their texts, clean and with the eval's typos (one seeded draw per set, in query order, as `npm run eval -- --all` makes them). */
export function evalQueries(folder: string, set: string): { queries: EvalQuery[]; texts: Record<'clean' | 'typos', string[]> } {
  const queries = loadQueries(`${folder}${set}/queries.dev.jsonl`);
  const random = seededRandom(TYPO_SEED);
  return { queries, texts: { clean: queries.map((q) => q.query), typos: queries.map((q) => addTypos(q.query, TYPO_RATE, random)) } };
}

/** The public corpus a set is drawn from: small catalogs (`<corpus>_schema`, `<corpus>_noschema`) are held out with it. */
export const source = (set: string) => set.replace(/_(no)?schema$/, '');

/**
 * docs/ranking.md's rule for choosing a setting on the sets `on`, the targets as
 * constraints: among the settings that keep hybrid within 0.005 of its better input and 90% of its
 * nDCG@10 under typos on each of them, the best sum of nDCG@10 and R@10; when none does, the best
 * worst margin. Ties keep the earlier setting.
 */
export function chooseSetting<Row>(
  rows: readonly Row[],
  on: readonly string[],
  read: { margin(row: Row, set: string): number; quality(row: Row, set: string): number; typoShare(row: Row, set: string): number },
): Row {
  const worst = (row: Row) => Math.min(...on.map((set) => read.margin(row, set)));
  const quality = (row: Row) => on.reduce((sum, set) => sum + read.quality(row, set), 0);
  const passing = rows.filter((row) => worst(row) >= -0.005 && on.every((set) => read.typoShare(row, set) >= 0.9));
  if (passing.length === 0) return rows.reduce((a, b) => (worst(b) > worst(a) ? b : a));
  return passing.reduce((a, b) => (quality(b) > quality(a) ? b : a));
}

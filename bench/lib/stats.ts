/**
 * The benches' statistics, one definition for all of them: percentiles interpolate linearly
 * between the two nearest samples (numpy's default), so the median of an even count is the mean
 * of the middle two, and a p99 of fewer than 100 samples does not jump to the maximum.
 */

/** The p-th percentile (0-100) of samples already sorted ascending; NaN when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below);
}

export const sortedAscending = (samples: readonly number[]): number[] => [...samples].sort((a, b) => a - b);

export function median(samples: readonly number[]): number {
  return percentile(sortedAscending(samples), 50);
}

export interface Summary {
  n: number;
  min: number;
  p10: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = sortedAscending(samples);
  const at = (p: number) => percentile(sorted, p);
  return { n: sorted.length, min: sorted[0] ?? Number.NaN, p10: at(10), p50: at(50), p90: at(90), p95: at(95), p99: at(99), max: sorted.at(-1) ?? Number.NaN };
}

/** `median 12.3  [10.1 .. 15.0]`: the median and the spread of repeated runs. */
export function medianAndRange(samples: readonly number[], digits = 1): string {
  const { p50, min, max } = summarize(samples);
  return `median ${p50.toFixed(digits)}  [${min.toFixed(digits)} .. ${max.toFixed(digits)}]`;
}

/**
 * Leave-one-out selection over a grid of settings, for judging what picking a grid's best setting
 * on a small labelled split is worth: for each query, the setting whose scores over all the *other*
 * queries are best. `scores[setting][query]` is a tuple of keys compared in order (the first
 * decides, later ones break its ties); on a full tie the earlier setting stays. Returns the setting
 * chosen for each query.
 */
export function leaveOneOutChoices(scores: readonly (readonly (readonly number[])[])[]): number[] {
  const totals = scores.map((perQuery) =>
    perQuery.reduce(
      (sum, keys) => sum.map((x, k) => x + keys[k]!),
      perQuery[0]!.map(() => 0),
    ),
  );
  const withoutQuery = (setting: number, query: number) => totals[setting]!.map((x, k) => x - scores[setting]![query]![k]!);
  return scores[0]!.map((_, query) => {
    let chosen = 0;
    let best = withoutQuery(0, query);
    for (let setting = 1; setting < scores.length; setting += 1) {
      const candidate = withoutQuery(setting, query);
      const k = candidate.findIndex((x, i) => Math.abs(x - best[i]!) > 1e-9);
      if (k >= 0 && candidate[k]! > best[k]!) [chosen, best] = [setting, candidate];
    }
    return chosen;
  });
}

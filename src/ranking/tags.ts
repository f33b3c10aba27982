/**
 * Tag boost: a tool carrying a tag the caller asked for moves up, without outranking a clearly
 * better match. Tag filtering happens before ranking, elsewhere; this is only the boost maths.
 */
import { byScoreThenId } from './bm25.js';
import { RRF_K } from './rrf.js';

/**
 * Per matching tag, a quarter of one first-place RRF vote (1 / (k + 1) ~ 0.016): it reorders
 * tools the retrievers rank close together (a tag-matching tool at rank 10 passes an untagged
 * one at rank ~14 in both lists) but cannot lift a tool neither retriever found near the top.
 */
export const TAG_BOOST = 0.25 / (RRF_K + 1);

/** Whether a tool carrying `toolTags` passes a filter on `wanted` (one of them, case-insensitive). */
export function carriesTag(toolTags: readonly string[], wanted: readonly string[]): boolean {
  const lower = new Set(wanted.map((tag) => tag.toLowerCase()));
  return toolTags.some((tag) => lower.has(tag.toLowerCase()));
}

/** Adds `boost` per requested tag the tool carries (case-insensitive, as the filter), then re-sorts. */
export function boostByTags(
  fused: readonly (readonly [string, number])[],
  toolTags: ReadonlyMap<string, readonly string[]>,
  queryTags: readonly string[],
  boost: number = TAG_BOOST,
): [string, number][] {
  const wanted = new Set(queryTags.map((tag) => tag.toLowerCase()));
  const boosted = fused.map(([id, score]): [string, number] => {
    if (wanted.size === 0) return [id, score];
    const matches = new Set((toolTags.get(id) ?? []).map((tag) => tag.toLowerCase()).filter((tag) => wanted.has(tag))).size;
    return [id, score + boost * matches];
  });
  return boosted.sort(byScoreThenId);
}

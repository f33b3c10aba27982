/** Retrieval metrics over one query's ranking, binary relevance. */
export interface QueryJudgement {
  relevant: string[];
  /** Any-of groups: a group counts as found when any member is retrieved. */
  relevantGroups?: string[][];
}

export interface QueryMetrics {
  recall1: number;
  recall5: number;
  recall10: number;
  ndcg10: number;
  mrr10: number;
  groupRecall10?: number;
}

function recallAt(ranked: string[], relevant: Set<string>, k: number): number {
  if (relevant.size === 0) return 0;
  return ranked.slice(0, k).filter((name) => relevant.has(name)).length / relevant.size;
}

/** nDCG@k with binary gains; the ideal ranking puts min(|relevant|, k) hits first. */
export function ndcgAt(ranked: string[], relevant: Set<string>, k: number): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((name, index) => {
    if (relevant.has(name)) dcg += 1 / Math.log2(index + 2);
  });
  let ideal = 0;
  for (let index = 0; index < Math.min(relevant.size, k); index++) ideal += 1 / Math.log2(index + 2);
  return ideal === 0 ? 0 : dcg / ideal;
}

export function mrrAt(ranked: string[], relevant: Set<string>, k: number): number {
  const index = ranked.slice(0, k).findIndex((name) => relevant.has(name));
  return index === -1 ? 0 : 1 / (index + 1);
}

export function scoreQuery(ranked: string[], judgement: QueryJudgement): QueryMetrics {
  const relevant = new Set(judgement.relevant);
  const metrics: QueryMetrics = {
    recall1: recallAt(ranked, relevant, 1),
    recall5: recallAt(ranked, relevant, 5),
    recall10: recallAt(ranked, relevant, 10),
    ndcg10: ndcgAt(ranked, relevant, 10),
    mrr10: mrrAt(ranked, relevant, 10),
  };
  if (judgement.relevantGroups?.length) {
    const top = new Set(ranked.slice(0, 10));
    const found = judgement.relevantGroups.filter((group) => group.some((name) => top.has(name))).length;
    metrics.groupRecall10 = found / judgement.relevantGroups.length;
  }
  return metrics;
}

/** Mean of each metric; group recall over the queries that have groups. */
export function meanMetrics(all: QueryMetrics[]): QueryMetrics & { queries: number } {
  const mean = (pick: (m: QueryMetrics) => number | undefined) => {
    const values = all.map(pick).filter((value): value is number => value !== undefined);
    return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0;
  };
  const grouped = all.some((m) => m.groupRecall10 !== undefined);
  return {
    queries: all.length,
    recall1: mean((m) => m.recall1),
    recall5: mean((m) => m.recall5),
    recall10: mean((m) => m.recall10),
    ndcg10: mean((m) => m.ndcg10),
    mrr10: mean((m) => m.mrr10),
    ...(grouped ? { groupRecall10: mean((m) => m.groupRecall10) } : {}),
  };
}

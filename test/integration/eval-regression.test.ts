import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEval, type EvalReport } from '../../src/eval/run-eval.js';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { addTypos } from '../../src/eval/typos.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Ranking is locked down by numbers: the eval on the four public dev splits, through the same code
 * as the REST API and the search endpoint, with the real default model. Floors sit just under what
 * was measured (npm run eval -- --all ../shared/eval, see docs/ranking.md); hybrid must stay within
 * TOLERANCE of the better of its own inputs, and with the eval's seeded typos (rate 0.2, seed 1)
 * keep `typoShare` of its clean nDCG@10 (measured 90.2-99.9% with npm run eval, 2026-11-27).
 */
const FLOORS: Record<string, { recall10: number; ndcg10: number; typoShare?: number }> = {
  // Were 0.46 / 0.355 before the per-query dense weight (docs/ranking.md: the rule's setting gives
  // 0.453 / 0.346 here; one relevant tool of 24 queries moved from rank 10 to 11). Its typo share,
  // 90.2% (npm run eval), moves by one query's tool: the floor sits just under it.
  livemcpbench: { recall10: 0.45, ndcg10: 0.34, typoShare: 0.89 },
  toolbench_stable: { recall10: 0.76, ndcg10: 0.675, typoShare: 0.9 },
  // BFCL's 1,460 functions and 736 user requests (typos: 99.0% by npm run eval; not rerun here,
  // it would add 5 minutes on PGlite). sealtools' hybrid (0.903 / 0.932, above BM25) is checked
  // by npm run eval only, for the same reason; its BM25 is locked below.
  bfcl: { recall10: 0.9, ndcg10: 0.77 },
};
const TOLERANCE = 0.005;

describe('retrieval quality on the dev splits', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
    // A model that cannot load fails here with its reason, not later as a missing mode.
    expect(app.deps.embedderStatus, JSON.stringify(app.deps.embedderStatus)).toMatchObject({ state: 'ready' });
  });
  afterAll(() => app.close());

  for (const [dataset, floor] of Object.entries(FLOORS)) {
    it(`${dataset}: hybrid above its floors and within ${TOLERANCE} of both of its inputs${floor.typoShare ? `, keeping ${floor.typoShare * 100}% under typos` : ''}`, { timeout: 900_000 }, async () => {
      const path = new URL(`../../../shared/eval/${dataset}`, import.meta.url).pathname;
      const report: EvalReport = await runEval(app.deps, { dataset: path, modes: ['hybrid', 'bm25', 'vector'] });
      const { hybrid, bm25, vector } = report.modes as Record<string, { recall10: number; ndcg10: number }>;
      const summary = JSON.stringify(report.modes);
      expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(floor.recall10);
      expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(floor.ndcg10);
      for (const input of [bm25!, vector!]) {
        expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(input.recall10 - TOLERANCE);
        expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(input.ndcg10 - TOLERANCE);
      }
      if (floor.typoShare === undefined) return;
      const random = seededRandom(1);
      const typos = await runEval(app.deps, { dataset: path, modes: ['hybrid'], rewriteQuery: (query) => addTypos(query, 0.2, random) });
      expect(typos.modes.hybrid!.ndcg10, `${summary} typos ${JSON.stringify(typos.modes)}`).toBeGreaterThanOrEqual(floor.typoShare * hybrid!.ndcg10);
    });
  }
});

/**
 * sealtools without a model: BM25 alone (no model, nothing to embed). It locks down the
 * tokenizer, the BM25 maths and the exact-name rule at a scale the other two sets lack: before a
 * plain prose word ("optimize") stopped naming a tool, this set scored nDCG@10 0.891 and MRR@10
 * 0.956 (README, measured quality).
 */
const SEALTOOLS_BM25_FLOOR = { recall10: 0.925, ndcg10: 0.895, mrr10: 0.97 } as const;

describe('retrieval quality on sealtools, BM25', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'none' });
  });
  afterAll(() => app.close());

  it('bm25 above its floors', { timeout: 600_000 }, async () => {
    const report = await runEval(app.deps, {
      dataset: new URL('../../../shared/eval/sealtools', import.meta.url).pathname,
      modes: ['bm25'],
    });
    const bm25 = report.modes.bm25!;
    const summary = JSON.stringify(bm25);
    expect(report.tools, summary).toBe(4076);
    expect(bm25.recall10, summary).toBeGreaterThanOrEqual(SEALTOOLS_BM25_FLOOR.recall10);
    expect(bm25.ndcg10, summary).toBeGreaterThanOrEqual(SEALTOOLS_BM25_FLOOR.ndcg10);
    expect(bm25.mrr10, summary).toBeGreaterThanOrEqual(SEALTOOLS_BM25_FLOOR.mrr10);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEval, type EvalReport } from '../../src/eval/run-eval.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Ranking is locked down by numbers: the eval on three public dev splits, through the same code as
 * the REST API and the search endpoint, with the real default model. Floors sit just under what
 * was measured (npm run eval, see the issue notes); hybrid must never fall below either input.
 */
const FLOORS = {
  livemcpbench: { recall10: 0.46, ndcg10: 0.355 },
  toolbench_stable: { recall10: 0.76, ndcg10: 0.675 },
  // BFCL's 1,460 functions and 736 user requests (measured 0.919 / 0.787, 2026-11-24).
  bfcl: { recall10: 0.91, ndcg10: 0.78 },
} as const;

describe('retrieval quality on the dev splits', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBED_MODEL: 'use-lite' });
    // A model that cannot load fails here with its reason, not later as a missing mode.
    expect(app.deps.embedderStatus, JSON.stringify(app.deps.embedderStatus)).toMatchObject({ state: 'ready' });
  });
  afterAll(() => app.close());

  for (const [dataset, floor] of Object.entries(FLOORS)) {
    it(`${dataset}: hybrid above its floors and above both of its inputs`, { timeout: 900_000 }, async () => {
      const report: EvalReport = await runEval(app.deps, {
        dataset: new URL(`../../../shared/eval/${dataset}`, import.meta.url).pathname,
        modes: ['hybrid', 'bm25', 'vector'],
      });
      const { hybrid, bm25, vector } = report.modes as Record<string, { recall10: number; ndcg10: number }>;
      const summary = JSON.stringify(report.modes);
      expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(floor.recall10);
      expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(floor.ndcg10);
      for (const input of [bm25!, vector!]) {
        expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(input.recall10);
        expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(input.ndcg10);
      }
    });
  }
});

/**
 * sealtools, the third set: 4,076 tools whose tasks reuse their tools' words. Embedding them takes
 * ~100 s a run, so only BM25 is checked here (no model, nothing to embed). It locks down the
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

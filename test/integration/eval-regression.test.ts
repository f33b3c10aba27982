import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { writeSmallCatalogs } from '../../src/eval/small-catalog.js';
import { scratchDatabase, storeKind } from '../helpers/database.js';

const run = promisify(execFile);

/**
 * Ranking is locked down by numbers: the eval on the four public dev splits, through the same code
 * as the REST API and the search endpoint, with the real default model. Floors sit just under what
 * was measured (npm run eval -- --all ../shared/eval, see docs/ranking.md); hybrid must stay within
 * TOLERANCE of the better of its own inputs, and with the eval's seeded typos (rate 0.2, seed 1)
 * keep `typoShare` of its clean nDCG@10 (measured 95.4-99.0% with npm run eval, 2026-12-05).
 * sealtools' BM25 list has floors of its own as well (below).
 */
const FLOORS: Record<string, { recall10: number; ndcg10: number; typoShare: number }> = {
  // Its floors from before issue 24 (0.46 / 0.355), met again since a parameter's words count half
  // (docs/ranking.md, 2026-12-05): 0.467 / 0.356 (0.453 / 0.354 before). Its typo share moves by one
  // query's tool: 90.1% before the dense query read typos' likely words, 95.4% now.
  livemcpbench: { recall10: 0.46, ndcg10: 0.355, typoShare: 0.95 },
  // 0.794 / 0.704 (0.780 / 0.693 before the parameters' half weight), typos 99.0%.
  toolbench_stable: { recall10: 0.78, ndcg10: 0.69, typoShare: 0.95 },
  // BFCL's 1,460 functions and 736 user requests: 0.905 / 0.778 (0.908 / 0.777 before), typos 98.2%.
  bfcl: { recall10: 0.9, ndcg10: 0.77, typoShare: 0.95 },
  // sealtools' 4,076 tools: 0.942 / 0.912 (BM25 alone 0.937 / 0.910, locked below), typos 98.0%.
  sealtools: { recall10: 0.935, ndcg10: 0.905, typoShare: 0.95 },
};
const TOLERANCE = 0.005;
/**
 * The dense list alone keeps this share of its clean nDCG@10 under typos: it reads each typo's
 * likely word (ranking/fuzzy-terms.ts denseQueryText). 94.5-113.9% on the four corpora (2026-11-29);
 * 86-90% when it read typos as typed.
 */
const DENSE_TYPO_SHARE = 0.92;

/**
 * How long one corpus's eval may take: a guard against a hang, not a speed target (speed lives in
 * the benches). The child is killed at the deadline, so a stuck eval never runs on beside the next test.
 */
const EVAL_TIMEOUT_MS = 2_400_000;

/**
 * `npm run eval` itself, in a child process: the eval's minutes of ranking then never block the
 * test worker (a worker busy that long missed vitest's 60 s RPC deadline in CI), and the command
 * the README and docs/ranking.md cite is the one checked. Same kind of store as the suite: on
 * PostgreSQL a scratch database of its own on DATABASE_URL's server (as `npm run eval` is run:
 * the suite's other catalogs in the same tables made its plans, with no statistics yet, several
 * times slower: BFCL took over 15 minutes on a slow machine), else the CLI's own in-memory
 * PGlite; the in-process queue.
 */
/**
 * The model's vectors, kept across this file's evals and the next run's (`--vector-file`): the
 * second store of a CI run ranks the same texts, and the small catalogs ask the same queries, so
 * each text is embedded once. Named after what makes the vectors (the model's code and the
 * locked packages): a change to either starts a new file. node_modules/.cache is the cache
 * folder tools share (a clean install starts without one).
 */
const VECTOR_FILE = (() => {
  const root = new URL('../../', import.meta.url).pathname;
  const hash = createHash('sha256').update(readFileSync(join(root, 'package-lock.json')));
  for (const name of readdirSync(join(root, 'src/embed')).sort()) hash.update(name).update(readFileSync(join(root, 'src/embed', name)));
  return join(root, 'node_modules/.cache/toolsift/eval-vectors', `use-lite-${hash.digest('hex').slice(0, 16)}.vec`);
})();

async function evalCommand(datasetDir: string, extra: string[] = []): Promise<EvalRow> {
  const root = new URL('../../', import.meta.url).pathname;
  const env: NodeJS.ProcessEnv = { ...process.env, EMBED_MODEL: 'use-lite', LOG_LEVEL: 'warn' };
  delete env.REDIS_URL;
  const scratch = storeKind() === 'postgres' ? await scratchDatabase('postgres', 'eval') : undefined;
  if (scratch) {
    await scratch.database.close();
    env.DATABASE_URL = scratch.url;
  }
  try {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/eval.ts', '--dataset', datasetDir, '--json', '--vector-file', VECTOR_FILE, ...extra],
      {
        cwd: root,
        env,
        maxBuffer: 16 * 1024 * 1024,
        timeout: EVAL_TIMEOUT_MS - 10_000,
        killSignal: 'SIGKILL',
      },
    );
    return JSON.parse(stdout) as EvalRow;
  } finally {
    await scratch?.drop();
  }
}

interface Metrics {
  recall10: number;
  ndcg10: number;
  mrr10: number;
}
interface EvalRow {
  tools: number;
  model: string;
  modes: Record<string, Metrics>;
  typos?: { rate: number; seed: number; modes: Record<string, Metrics> };
}

/** Hybrid above its floors, within TOLERANCE of both of its inputs, and keeping `typoShare` under typos (the dense list DENSE_TYPO_SHARE). */
function expectQuality(report: EvalRow, floor: { recall10: number; ndcg10: number; typoShare: number }): void {
  expect(report.model).toBe('use-lite');
  const { hybrid, bm25, vector } = report.modes;
  const summary = JSON.stringify(report);
  expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(floor.recall10);
  expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(floor.ndcg10);
  for (const input of [bm25!, vector!]) {
    expect(hybrid!.recall10, summary).toBeGreaterThanOrEqual(input.recall10 - TOLERANCE);
    expect(hybrid!.ndcg10, summary).toBeGreaterThanOrEqual(input.ndcg10 - TOLERANCE);
  }
  expect(report.typos?.modes.hybrid?.ndcg10, summary).toBeGreaterThanOrEqual(floor.typoShare * hybrid!.ndcg10);
  expect(report.typos?.modes.vector?.ndcg10, summary).toBeGreaterThanOrEqual(DENSE_TYPO_SHARE * vector!.ndcg10);
}

describe('retrieval quality on the dev splits (npm run eval)', () => {
  for (const [dataset, floor] of Object.entries(FLOORS)) {
    it(`${dataset}: hybrid above its floors and within ${TOLERANCE} of both of its inputs, keeping ${floor.typoShare * 100}% under typos`, {
      timeout: EVAL_TIMEOUT_MS,
    }, async () => {
      const report = await evalCommand(new URL(`../../../shared/eval/${dataset}`, import.meta.url).pathname, ['--typos', '0.2', '--seed', '1']);
      expectQuality(report, floor);
      if (dataset === 'sealtools') {
        expect(report.tools, JSON.stringify(report)).toBe(4076);
        for (const key of ['recall10', 'ndcg10', 'mrr10'] as const) {
          expect(report.modes.bm25![key], JSON.stringify(report)).toBeGreaterThanOrEqual(SEALTOOLS_BM25_FLOOR[key]);
        }
      }
    });
  }
});

/**
 * Small catalogs of one-line descriptions drawn from two corpora (src/eval/small-catalog.ts, 200
 * tools): on bfcl's real user requests the dense list alone is the better list there (0.780 / 0.957
 * against BM25's 0.708 / 0.840), which a fusion fitted to large catalogs fell under (0.763 / 0.928
 * before the dense gap, docs/ranking.md); on sealtools BM25 stays the better one. Measured
 * 2026-11-28 (npm run eval): bfcl 0.790 / 0.962, typos 98.5%; sealtools 0.952 / 0.994, 98.1%.
 */
const SMALL_FLOORS: Record<string, { recall10: number; ndcg10: number; typoShare: number }> = {
  bfcl_noschema: { recall10: 0.95, ndcg10: 0.78, typoShare: 0.95 },
  sealtools_noschema: { recall10: 0.98, ndcg10: 0.94, typoShare: 0.95 },
};

describe('retrieval quality on small catalogs of one-line descriptions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolsift-small-'));
  writeSmallCatalogs(new URL('../../../shared/eval/', import.meta.url).pathname, dir, ['bfcl', 'sealtools']);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  for (const [dataset, floor] of Object.entries(SMALL_FLOORS)) {
    it(`${dataset}: hybrid above its floors and within ${TOLERANCE} of both of its inputs, keeping ${floor.typoShare * 100}% under typos`, {
      timeout: EVAL_TIMEOUT_MS,
    }, async () => {
      const out = join(dir, `${dataset}.rankings.jsonl`);
      const report = await evalCommand(join(dir, dataset), ['--typos', '0.2', '--seed', '1', '--out', out]);
      expect(report.tools).toBe(200);
      expectQuality(report, floor);
      // --out: the clean run's rankings, and the typo run's beside them, query by query.
      const read = (file: string) =>
        readFileSync(file, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { id: string; ranked: string[] });
      const clean = read(out);
      const typos = read(join(dir, `${dataset}.rankings.typos.jsonl`));
      expect(typos.map((row) => row.id)).toEqual(clean.map((row) => row.id));
      expect(clean.every((row) => row.ranked.length > 0)).toBe(true);
      expect(typos.some((row, i) => row.ranked.join() !== clean[i]!.ranked.join())).toBe(true);
    });
  }
});

/**
 * sealtools' BM25 list on its own (from the run above): it locks down the tokenizer, the BM25
 * maths and the exact-name rule at a scale the other sets lack: before a plain prose word
 * ("optimize") stopped naming a tool, this set scored nDCG@10 0.891 and MRR@10 0.956; 0.937 / 0.910 /
 * 0.979 (R@10 / nDCG@10 / MRR@10) since a parameter's words count half (R@10 / nDCG@10 0.930 / 0.900 before).
 */
const SEALTOOLS_BM25_FLOOR = { recall10: 0.93, ndcg10: 0.905, mrr10: 0.97 } as const;

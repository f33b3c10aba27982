/**
 * The rerank stage (RERANK_URL) against a real HTTP server of the suite speaking TEI's /rerank and
 * the Cohere-style /v1/rerank (test/fixtures/embedding-service.ts scores by word overlap): the
 * fused head is reordered and says so in `explain.rerank`; a late, failing or nonsensical reranker
 * leaves the fused order as it was and the answer says why; the gateway selector reranks its inline
 * tools too. The maths of the reorder and the answer's checks are unit-tested beside.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scoresOf } from '../../src/embed/reranker.js';
import { rerankHead } from '../../src/ranking/rerank.js';
import { startEmbeddingService, type EmbeddingService } from '../fixtures/embedding-service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const TOOLS = [
  { name: 'weather_report', description: 'Weather report. Weather data, weather alerts and weather maps for weather fans.' },
  { name: 'city_forecast', description: 'Tomorrow forecast for a city such as Paris: temperature and rain.' },
  { name: 'air_quality', description: 'Air quality index for a city.' },
  { name: 'currency_rates', description: 'Exchange rates between currencies.' },
  { name: 'read_file', description: 'Read a text file.' },
].map((tool) => ({ ...tool, inputSchema: { type: 'object', properties: {} } }));

describe('rerank maths and answers', () => {
  it('fuse lets the reranker decide where it disagrees, ties go to the first stage, and scores stay in order', () => {
    const head: [string, number][] = [
      ['a', 0.9],
      ['b', 0.8],
      ['c', 0.7],
    ];
    // The reranker's order reversed: it weighs twice, so it wins.
    const fused = rerankHead(head, [0.1, 0.2, 0.9], 'fuse', 60);
    expect(fused.reordered.map(([id]) => id)).toEqual(['c', 'b', 'a']);
    expect(fused.reordered.map(([, score]) => score)).toEqual([0.9, 0.8, 0.7]);
    expect(fused.at.get('c')).toEqual({ rank: 1, score: 0.9 });
    expect(rerankHead(head, [0.5, 0.5, 0.5], 'fuse', 60).reordered.map(([id]) => id)).toEqual(['a', 'b', 'c']);
    // Far down the first stage's list, the reranker's first place does not jump over its top.
    const long: [string, number][] = Array.from({ length: 30 }, (_, i) => [`t${i}`, 1 - i / 100]);
    const lastFirst = long.map((_, i) => (i === 29 ? 1 : i === 0 ? 0.99 : 0.5 - i / 100));
    expect(rerankHead(long, lastFirst, 'fuse', 60).reordered[0]![0]).toBe('t0');
    expect(rerankHead(head, [0.1, 0.9, 0.5], 'replace', 60).reordered.map(([id]) => id)).toEqual(['b', 'c', 'a']);
  });

  it("reads TEI's, Cohere's and Voyage's answers, and refuses a missing, repeated or non-numeric score", () => {
    expect(
      scoresOf(
        [
          { index: 1, score: 0.3 },
          { index: 0, score: 0.7 },
        ],
        2,
      ),
    ).toEqual([0.7, 0.3]);
    expect(
      scoresOf(
        {
          results: [
            { index: 0, relevance_score: 0.2 },
            { index: 1, relevance_score: 0.1 },
          ],
        },
        2,
      ),
    ).toEqual([0.2, 0.1]);
    expect(scoresOf({ data: [{ index: 0, relevance_score: 0.5 }] }, 1)).toEqual([0.5]);
    expect(() => scoresOf([{ index: 0, score: 1 }], 2)).toThrow(/scores 1 of 2/);
    expect(() =>
      scoresOf(
        [
          { index: 0, score: 1 },
          { index: 0, score: 1 },
        ],
        2,
      ),
    ).toThrow(/out of place/);
    expect(() => scoresOf([{ index: 0, score: 'x' }], 1)).toThrow(/not a number/);
    expect(() => scoresOf({ nothing: [] }, 1)).toThrow(/no list/);
  });
});

describe('toolsift with a rerank service', () => {
  let service: EmbeddingService;
  let plain: TestApp;
  const apps: TestApp[] = [];
  const catalog = uniqueName('rerank');
  const query = 'tomorrow forecast for paris weather';
  const start = async (env: Record<string, string>) => {
    const app = await startTestApp({ RERANK_DEADLINE_MS: '1000', ...env });
    apps.push(app);
    return app;
  };
  const search = async (app: TestApp) => {
    const answer = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 5, explain: true });
    expect(answer.status).toBe(200);
    return answer.body as { results: Array<{ name: string; explain: { rerank: { rank: number; score: number } | null } }>; rerank?: string };
  };

  beforeAll(async () => {
    service = await startEmbeddingService();
    plain = await startTestApp({});
    expect((await plain.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS })).status).toBe(200);
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    service.faults = [];
    service.delayMs = 0;
    service.requests = [];
  });
  afterAll(async () => {
    await plain?.close();
    await service?.close();
  });

  it("reorders the fused head by TEI's scores (replace), each tool's place in explain", async () => {
    const before = await search(plain);
    expect(before.rerank).toBeUndefined();
    expect(before.results.every((tool) => tool.explain.rerank === null)).toBe(true);
    const app = await start({ RERANK_URL: `${service.url}/rerank`, RERANK_MODE: 'replace' });
    const after = await search(app);
    expect(after.rerank).toBe('ok');
    expect(service.requests.at(-1)).toMatchObject({ path: '/rerank' });
    const ranks = after.results.map((tool) => tool.explain.rerank!.rank);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    // The reranker reads whole descriptions: the city forecast answers every word of the query.
    expect(after.results[0]!.name).toBe('city_forecast');
  });

  it('fuses with the Cohere-style /v1/rerank by default, and counts it in /metrics', async () => {
    const app = await start({ RERANK_URL: `${service.url}/v1/rerank`, RERANK_MODEL: 'rerank-test', RERANK_API_KEY: 'rk' });
    const after = await search(app);
    expect(after.rerank).toBe('ok');
    expect(service.requests.at(-1)).toMatchObject({ path: '/v1/rerank', model: 'rerank-test', authorization: 'Bearer rk' });
    expect(after.results[0]!.name).toBe('city_forecast');
    expect(after.results.every((tool) => tool.explain.rerank !== null)).toBe(true);
    expect((await app.request('GET', '/metrics')).text).toMatch(/toolsift_rerank_duration_seconds_count\{outcome="ok"\} [1-9]/);
  });

  for (const [name, setup, outcome] of [
    ['late', (s: EmbeddingService) => (s.delayMs = 600), 'timeout'],
    ['failing', (s: EmbeddingService) => (s.faults = [{ kind: 'status', status: 500 }]), 'error'],
    ['answering too few scores', (s: EmbeddingService) => (s.faults = [{ kind: 'malformed', what: 'count' }]), 'error'],
    ['answering no JSON', (s: EmbeddingService) => (s.faults = [{ kind: 'malformed', what: 'json' }]), 'error'],
  ] as const) {
    it(`keeps the fused order when the reranker is ${name}, and says so`, async () => {
      const app = await start({ RERANK_URL: `${service.url}/rerank`, RERANK_DEADLINE_MS: '150' });
      setup(service);
      const started = performance.now();
      const after = await search(app);
      expect(performance.now() - started).toBeLessThan(550);
      expect(after.rerank).toBe(outcome);
      expect(after.results.map((tool) => tool.name)).toEqual((await search(plain)).results.map((tool) => tool.name));
      expect(after.results.every((tool) => tool.explain.rerank === null)).toBe(true);
    });
  }

  it("reranks the gateway selector's inline tools", async () => {
    const app = await start({ RERANK_URL: `${service.url}/rerank`, RERANK_MODE: 'replace' });
    const answer = await app.request('POST', '/v1/tool-discovery/search', { pattern: query, top_k: 1, tools: TOOLS });
    expect(answer.status).toBe(200);
    expect(answer.body.selected_names).toEqual(['city_forecast']);
    expect(service.requests.some((request) => request.path === '/rerank')).toBe(true);
  });
});

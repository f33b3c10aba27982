/**
 * An embedding service over HTTP (EMBED_MODEL=openai:<model>): the real `openai` client against a
 * real server of the test suite speaking the same API (test/fixtures/embedding-service.ts). The
 * embedder on its own (batches, bounded requests, 429 with Retry-After, 500, slow and malformed
 * answers), then the service on the store the suite runs on, with the in-process queue and with
 * BullMQ: a catalog is embedded and searched by meaning, an outage or a slow service never fails a
 * search and /readyz says so, and a service answering another dimension re-embeds in the background.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceEmbedder, type ServiceEmbedderOptions } from '../../src/embed/service-embedder.js';
import { startEmbeddingService, type EmbeddingService } from '../fixtures/embedding-service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/assertions.js';
import { uniqueName } from '../helpers/database.js';
import { dropQueuePrefix, testRedisUrl } from '../helpers/queue.js';

const TOOLS = [
  { name: 'convert_currency', description: 'Convert an amount of money from one currency to another at the current exchange rate.' },
  { name: 'get_weather', description: 'Current weather and forecast for a city.' },
  { name: 'read_file', description: 'Read a text file from disk.' },
  { name: 'send_email', description: 'Send an email message to a recipient.' },
].map((tool) => ({ ...tool, inputSchema: { type: 'object', properties: {} } }));

describe('the embedding service embedder, through the openai client', () => {
  let service: EmbeddingService;
  const events: Array<{ kind: string; outcome: string; tokens: number }> = [];
  const options = (extra: Partial<ServiceEmbedderOptions> = {}): ServiceEmbedderOptions => ({
    model: 'test-embed',
    baseUrl: `${service.url}/v1`,
    apiKey: 'sk-test',
    batchSize: 4,
    concurrency: 2,
    timeoutMs: 2_000,
    maxRetries: 2,
    observe: (event) => events.push(event),
    ...extra,
  });
  beforeAll(async () => {
    service = await startEmbeddingService({ dimension: 48 });
  });
  afterAll(() => service?.close());
  afterEach(() => {
    service.faults = [];
    service.delayMs = 0;
    service.requests = [];
    service.peakInFlight = 0;
    events.length = 0;
  });

  it('learns the dimension, names the model with it, and sends floats with the key', async () => {
    const embedder = await ServiceEmbedder.connect(options());
    expect(embedder.dimension).toBe(48);
    expect(embedder.modelId).toBe('openai:test-embed@48');
    expect(service.requests[0]).toMatchObject({ path: '/v1/embeddings', model: 'test-embed', encoding: 'float', authorization: 'Bearer sk-test' });
    const [vector] = await embedder.embedDocuments(['hello world']);
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 6);
  });

  it('sends EMBED_DIMENSIONS as dimensions, and refuses a service that answers another size', async () => {
    const embedder = await ServiceEmbedder.connect(options({ dimensions: 16 }));
    expect(embedder.modelId).toBe('openai:test-embed@16');
    expect(service.requests.at(-1)?.dimensions).toBe(16);
    service.faults = [{ kind: 'malformed', what: 'dimension' }];
    await expect(ServiceEmbedder.connect(options({ dimensions: 16 }))).rejects.toThrow(/15 dimensions, not 16/);
  });

  it('batches to the service limit with at most `concurrency` document requests in flight', async () => {
    const embedder = await ServiceEmbedder.connect(options());
    service.requests = [];
    service.delayMs = 50;
    const vectors = await embedder.embedDocuments(Array.from({ length: 22 }, (_, i) => `text number ${i}`));
    expect(vectors).toHaveLength(22);
    expect(service.requests.map((request) => request.inputs)).toEqual([4, 4, 4, 4, 4, 2]);
    expect(service.peakInFlight).toBe(2);
    // The vectors come back in input order: the same text embedded alone gives the same vector.
    expect((await embedder.embedDocuments(['text number 7']))[0]).toEqual(vectors[7]);
    expect(events.filter((event) => event.kind === 'documents' && event.outcome === 'ok').length).toBe(7);
    expect(events.reduce((sum, event) => sum + event.tokens, 0)).toBeGreaterThan(0);
  });

  it('waits as a 429 Retry-After asks, and retries a 500', async () => {
    const embedder = await ServiceEmbedder.connect(options());
    service.requests = [];
    service.faults = [{ kind: 'status', status: 429, retryAfter: '0.3' }];
    const started = performance.now();
    await embedder.embedDocuments(['a']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect(service.requests).toHaveLength(2);
    service.faults = [{ kind: 'status', status: 500 }];
    await embedder.embedDocuments(['b']);
    expect(service.requests).toHaveLength(4);
    expect(embedder.lastFailure()).toBeUndefined();
  });

  it('fails clearly, and remembers it for /readyz, when the service keeps failing or answers nonsense', async () => {
    const embedder = await ServiceEmbedder.connect(options({ maxRetries: 0 }));
    service.faults = [{ kind: 'status', status: 503 }];
    await expect(embedder.embedDocuments(['a'])).rejects.toThrow(/embedding service .*\(test-embed\): HTTP 503/);
    expect(embedder.lastFailure()).toMatch(/HTTP 503/);
    for (const [what, expected] of [
      ['json', /JSON|Unexpected|parse/i],
      ['count', /expected 1 embeddings, got 0/],
      ['dimension', /47 dimensions, not 48/],
      ['nan', /not an array of finite numbers/],
    ] as const) {
      service.faults = [{ kind: 'malformed', what }];
      await expect(embedder.embedDocuments(['a']), what).rejects.toThrow(expected);
    }
    service.faults = [{ kind: 'malformed', what: 'index' }];
    await expect(embedder.embedDocuments(['a', 'b'])).rejects.toThrow(/out of place/);
    await embedder.embedDocuments(['fine again']);
    expect(embedder.lastFailure()).toBeUndefined();
  });

  it('gives up on a slow answer at its deadline', async () => {
    const embedder = await ServiceEmbedder.connect(options({ timeoutMs: 300, maxRetries: 0 }));
    // A query retries once: both tries are slow.
    service.faults = [
      { kind: 'delay', ms: 1_500 },
      { kind: 'delay', ms: 1_500 },
    ];
    const started = performance.now();
    await expect(embedder.embedQuery('slow')).rejects.toThrow(/timed out|timeout/i);
    expect(performance.now() - started).toBeLessThan(1_400);
  });

  it('refuses to start against a service that does not answer', async () => {
    await expect(ServiceEmbedder.connect(options({ baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 0, timeoutMs: 500 }))).rejects.toThrow(/embedding service/);
  });
});

describe('toolsift with an embedding service', () => {
  let service: EmbeddingService;
  const apps: TestApp[] = [];
  const prefixes: string[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const app = await startTestApp({
      EMBED_MODEL: 'openai:test-embed',
      EMBED_BASE_URL: `${service.url}/v1`,
      EMBED_API_KEY: 'sk-test',
      EMBED_SERVICE_RETRIES: '0',
      ...env,
    });
    apps.push(app);
    return app;
  };
  const pushAndEmbed = async (app: TestApp, catalog: string) => {
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS })).status).toBe(200);
    await until('the catalog embedded', async () => (await app.request('GET', `/v1/catalogs/${catalog}`)).body?.embedding?.done === TOOLS.length, 30_000);
  };
  const vectorSearch = (app: TestApp, catalog: string, query: string) =>
    app.request('POST', `/v1/catalogs/${catalog}/search`, { query, mode: 'hybrid', top_k: 2, explain: true });

  beforeAll(async () => {
    service = await startEmbeddingService({ dimension: 40 });
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const prefix of prefixes.splice(0)) await dropQueuePrefix(prefix);
    service.faults = [];
    service.delayMs = 0;
    service.dimension = 40;
  });
  afterAll(() => service?.close());

  for (const queue of ['in-process', 'bullmq'] as const) {
    it(`embeds a catalog through the service and ranks by its vectors (${queue} queue)`, async () => {
      const prefix = uniqueName('es');
      if (queue === 'bullmq') prefixes.push(prefix);
      const app = await start(queue === 'bullmq' ? { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix, EMBED_WORKER: 'inline' } : {});
      const catalog = uniqueName('svc');
      await pushAndEmbed(app, catalog);
      const ready = await app.request('GET', '/readyz');
      expect(ready.body.components.embedder).toMatchObject({ status: 'ok', model: 'openai:test-embed@40', dimension: 40 });
      const found = await vectorSearch(app, catalog, 'exchange rate money');
      expect(found.body.results[0].name).toBe('convert_currency');
      expect(found.body.results[0].explain.vector).not.toBeNull();
      expect(found.body.degraded).toBeUndefined();
      const metrics = await app.request('GET', '/metrics');
      expect(metrics.text).toMatch(/toolsift_embed_service_request_duration_seconds_count\{kind="documents",outcome="ok"\} [1-9]/);
      expect(metrics.text).toMatch(/toolsift_embed_service_tokens_total\{kind="query"\} [1-9]/);
    }, 60_000);
  }

  it('answers every search while the service fails or is slow, says so, and /readyz names the failure', async () => {
    const app = await start({ SELECTOR_BUDGET_MS: '200' });
    const catalog = uniqueName('svc-down');
    await pushAndEmbed(app, catalog);
    service.faults = Array.from({ length: 5 }, () => ({ kind: 'status' as const, status: 500 }));
    const down = await vectorSearch(app, catalog, 'send a message by email');
    expect(down.status).toBe(200);
    expect(down.body.degraded).toBe('embedder_error');
    expect(down.body.results[0].name).toBe('send_email');
    const ready = await app.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.stringify(ready.body.components.embedder)).toMatch(/embedding service is failing .*HTTP 500/);
    // A slow service: the gateway selector waits SELECTOR_BUDGET_MS, then BM25 answers.
    service.faults = [];
    service.delayMs = 1_500;
    const started = performance.now();
    const slow = await app.request('POST', '/v1/tool-discovery/search', { pattern: 'read a file from disk', top_k: 1, catalog });
    expect(slow.status).toBe(200);
    expect(slow.body.selected_names).toEqual(['read_file']);
    expect(performance.now() - started).toBeLessThan(1_400);
  }, 60_000);

  it('re-embeds in the background when the service answers another dimension after a restart', async () => {
    const first = await start();
    const catalog = uniqueName('svc-dim');
    await pushAndEmbed(first, catalog);
    await first.close();
    apps.splice(apps.indexOf(first), 1);
    service.dimension = 24;
    const second = await start();
    const progress = await second.request('GET', `/v1/catalogs/${catalog}`);
    expect(progress.body.embedding.model).toBe('openai:test-embed@24');
    await until('the catalog re-embedded', async () => (await second.request('GET', `/v1/catalogs/${catalog}`)).body?.embedding?.done === TOOLS.length, 30_000);
    const found = await vectorSearch(second, catalog, 'weather forecast city');
    expect(found.body.results[0].name).toBe('get_weather');
    expect(found.body.results[0].explain.vector).not.toBeNull();
  }, 60_000);

  it('ranks a query in another language with both lists when the service is said to be multilingual (EMBED_MULTILINGUAL)', async () => {
    // The test service stands in for a multilingual model: its vectors are hashed words, so a query
    // sharing a word with a tool is near it whatever its language.
    const app = await start({ EMBED_MULTILINGUAL: 'true' });
    const catalog = uniqueName('svc-lang');
    await pushAndEmbed(app, catalog);
    const answer = await vectorSearch(app, catalog, 'Wetter weather für morgen');
    expect(answer.body.query_language).toMatchObject({ understood: true });
    expect(answer.body.degraded).toBeUndefined();
    expect(answer.body.results[0].name).toBe('get_weather');
    expect(answer.body.results[0].explain.vector).not.toBeNull();
    // Said not to be, the same query is marked and ranked by BM25 first.
    const english = await start({ EMBED_MULTILINGUAL: 'false' });
    const marked = await vectorSearch(english, catalog, 'Wetter weather für morgen');
    expect(marked.body.degraded).toBe('query_language');
    expect(marked.body.query_language).toMatchObject({ understood: false });
  }, 60_000);

  it('starts on BM25 with a clear /readyz reason when the service is not there', async () => {
    const app = await start({ EMBED_BASE_URL: 'http://127.0.0.1:1/v1', EMBED_SERVICE_TIMEOUT_MS: '500' });
    const ready = await app.request('GET', '/readyz');
    // Unreachable is an outage, not a setting to fix: ready, ranking with BM25, and saying so.
    expect(ready.status).toBe(200);
    expect(ready.body.components.embedder.status).toBe('degraded');
    expect(JSON.stringify(ready.body.components.embedder)).toMatch(/openai:test-embed: unavailable .*embedding service/);
    const catalog = uniqueName('svc-none');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS })).status).toBe(200);
    const found = await vectorSearch(app, catalog, 'read a text file');
    expect(found.body.results[0].name).toBe('read_file');
    expect(found.body.degraded).toBe('embedder_unavailable');
  }, 60_000);

  it('is not ready, naming the model, when the service refuses it at start (a setting to fix), and still answers searches', async () => {
    service.faults = Array.from({ length: 4 }, () => ({ kind: 'status' as const, status: 401 }));
    const app = await start({});
    const ready = await app.request('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.components.embedder.status).toBe('down');
    expect(ready.body.components.embedder.reason).toMatch(/openai:test-embed: unavailable .*HTTP 401/);
    const catalog = uniqueName('svc-refused');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: TOOLS })).status).toBe(200);
    const found = await vectorSearch(app, catalog, 'read a text file');
    expect(found.body.results[0].name).toBe('read_file');
    expect(found.body.degraded).toBe('embedder_unavailable');
  }, 60_000);
});

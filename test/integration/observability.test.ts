import { Writable } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (wanted.every((pair) => line.includes(pair))) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

describe('metrics and logs', () => {
  let app: TestApp;
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    app = await startTestApp({}, { logger: pino({ level: 'info' }, sink) });
  });
  afterAll(() => app.close());

  it('GET /metrics reflects real traffic', async () => {
    const before = await (await fetch(`${app.url}/metrics`)).text();
    const tools = [
      { name: 'read_file', description: 'Read a file' },
      { name: 'send_email', description: 'Send an email' },
    ];
    await app.request('POST', '/v1/tool-discovery/search', { pattern: 'read a file', top_k: 1, tools });
    await app.request('POST', '/v1/tool-discovery/search', { pattern: '  ', top_k: 1, tools });
    const catalog = uniqueName('metrics');
    await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: tools.map((tool) => ({ ...tool, inputSchema: {} })) });
    await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'email' });
    const response = await fetch(`${app.url}/metrics`);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const after = await response.text();
    const selectorRoute = { route: '/v1/tool-discovery/search', status: '200' };
    expect(sample(after, 'toolsift_http_request_duration_seconds_count', selectorRoute)).toBe(
      sample(before, 'toolsift_http_request_duration_seconds_count', selectorRoute) + 2,
    );
    expect(sample(after, 'toolsift_selector_names_returned_count')).toBe(sample(before, 'toolsift_selector_names_returned_count') + 2);
    // Every answer's confidence is recorded, whatever it is (the gateway's answer is never empty).
    expect(sample(after, 'toolsift_selector_answer_confidence_count')).toBe(sample(before, 'toolsift_selector_answer_confidence_count') + 2);
    expect(sample(after, 'toolsift_selector_blank_patterns_total')).toBe(sample(before, 'toolsift_selector_blank_patterns_total') + 1);
    expect(sample(after, 'toolsift_selector_fallbacks_total', { reason: 'blank_pattern' })).toBeGreaterThanOrEqual(1);
    expect(sample(after, 'toolsift_search_stage_duration_seconds_count', { endpoint: 'catalog_search', stage: 'retrieval' })).toBeGreaterThan(
      sample(before, 'toolsift_search_stage_duration_seconds_count', { endpoint: 'catalog_search', stage: 'retrieval' }),
    );
    expect(sample(after, 'toolsift_model_state', { model: 'none', state: 'disabled' })).toBe(1);
    // The bounded indexes: what they hold (the catalog just searched is read into process) and their budgets.
    expect(sample(after, 'toolsift_index_memory_bytes', { kind: 'catalog_index', bound: 'budget' })).toBe(512 * 2 ** 20);
    expect(sample(after, 'toolsift_index_memory_bytes', { kind: 'learned_index', bound: 'budget' })).toBe(512 * 2 ** 20);
    expect(sample(after, 'toolsift_index_memory_bytes', { kind: 'learned_index', bound: 'held' })).toBe(app.deps.search.learned!.bytes);
    expect(after).toContain('toolsift_process_resident_memory_bytes');
  });

  it('every search endpoint records its stages, and its answers without the model as degraded', async () => {
    // EMBED_MODEL is none here: every hybrid search is BM25 alone, and says so.
    const tools = [
      { name: 'read_file', description: 'Read a file from the disk', inputSchema: { type: 'object' } },
      { name: 'send_email', description: 'Send an email to someone', inputSchema: { type: 'object' } },
    ];
    const catalog = uniqueName('stages');
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools })).status).toBe(200);
    const client = new Client({ name: 'toolsift-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`)));
    const before = await (await fetch(`${app.url}/metrics`)).text();
    expect((await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'send an email' })).body.degraded).toBe('embedder_unavailable');
    const inline = await app.request('POST', '/v1/tool-search', { query: 'send an email', tools });
    expect(inline.body.degraded).toBe('embedder_unavailable');
    for (let i = 0; i < 2; i++)
      expect((await app.request('POST', '/v1/tool-search', { query: 'read a file', catalog })).body.degraded).toBe('embedder_unavailable');
    const found = await client.callTool({ name: 'search_tools', arguments: { query: 'read a file' } });
    expect((found.structuredContent as { results: { name: string }[] }).results[0]!.name).toBe('read_file');
    await client.close();
    const after = await (await fetch(`${app.url}/metrics`)).text();
    const grew = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    const stages = 'toolsift_search_stage_duration_seconds_count';
    const degraded = 'toolsift_search_degraded_total';
    expect(grew(degraded, { endpoint: 'catalog_search', reason: 'embedder_unavailable' })).toBe(1);
    // tool-search: one inline call (the selector's stages), two over the catalog (the catalog search's).
    for (const stage of ['parse', 'ranking']) expect(grew(stages, { endpoint: 'tool_search', stage })).toBe(1);
    for (const stage of ['retrieval', 'fusion']) expect(grew(stages, { endpoint: 'tool_search', stage })).toBe(2);
    expect(grew(stages, { endpoint: 'tool_search', stage: 'query_embedding' })).toBe(3);
    expect(grew(degraded, { endpoint: 'tool_search', reason: 'embedder_unavailable' })).toBe(3);
    for (const stage of ['query_embedding', 'retrieval', 'fusion']) expect(grew(stages, { endpoint: 'mcp_search_tools', stage })).toBe(1);
    expect(grew(degraded, { endpoint: 'mcp_search_tools', reason: 'embedder_unavailable' })).toBe(1);
    const logged = lines.filter((line) => line.msg === 'tool search').at(-1)!;
    expect(logged).toMatchObject({ catalog, degraded: 'embedder_unavailable', timings: { retrieval_ms: expect.any(Number), fusion_ms: expect.any(Number) } });
    expect(lines.filter((line) => line.msg === 'mcp call').at(-1)).toMatchObject({ tool: 'search_tools', degraded: 'embedder_unavailable' });
  });

  it('puts the request id on every log line of a request, in the header and in error bodies', async () => {
    const response = await app.request('GET', `/v1/catalogs/${uniqueName('missing')}`, undefined, { 'X-Request-Id': 'trace-abc-123' });
    expect(response.headers.get('x-request-id')).toBe('trace-abc-123');
    expect(response.body.error.request_id).toBe('trace-abc-123');
    await app.request('POST', '/v1/tool-discovery/search', { pattern: 'x', tools: [{ name: 'x' }] }, { 'X-Request-Id': 'trace-sel-1' });
    // The selection line is written once the request's new tools are stored, after its answer.
    await app.deps.selector.background.settled();
    const forRequest = lines.filter((line) => line.requestId === 'trace-sel-1');
    expect(forRequest.map((line) => line.msg)).toEqual(expect.arrayContaining(['tool selection', 'request']));
    const access = lines.find((line) => line.requestId === 'trace-abc-123' && line.msg === 'request');
    expect(access).toMatchObject({ status: 404, method: 'GET' });
  });
});

describe('the spec and the docs page', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('serves openapi.yaml and a docs page whose assets come from the service itself', async () => {
    const spec = await fetch(`${app.url}/openapi.yaml`);
    expect(spec.status).toBe(200);
    expect(await spec.text()).toContain('openapi: 3.1.0');
    const page = await (await fetch(`${app.url}/docs`)).text();
    const assets = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect(asset.startsWith('/'), `${asset} must be served locally, not from a CDN`).toBe(true);
      const response = await fetch(`${app.url}${asset}`);
      expect(response.status, asset).toBe(200);
    }
  });

  it("points 'Try it out' at the instance that served the spec, whatever its host and port", async () => {
    const specUrl = `${app.url}/openapi.yaml`;
    const { parse } = await import('yaml');
    const spec = parse(await (await fetch(specUrl)).text()) as { servers: Array<{ url: string }> };
    expect(spec.servers.length).toBeGreaterThan(0);
    for (const server of spec.servers) {
      // Swagger UI and openapi clients resolve a relative server URL against the spec's own URL.
      const resolved = new URL(server.url, specUrl);
      expect(resolved.origin, server.url).toBe(new URL(app.url).origin);
      const health = await fetch(new URL('healthz', resolved.href.endsWith('/') ? resolved : `${resolved.href}/`));
      expect(health.status).toBe(200);
    }
  });
});

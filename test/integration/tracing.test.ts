/**
 * toolsift's own spans (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): exported over OTLP/HTTP as JSON to a
 * collector, here a small HTTP server decoding `resourceSpans`. An agent's call_tool continues the
 * agent's trace: toolsift's SERVER span is the child of the `_meta` traceparent (linked to the HTTP
 * request's span), the upstream call a CLIENT span within it, and the upstream (an SDK server
 * recording each request's `_meta`) receives the CLIENT span's context with the agent's tracestate.
 * An upstream's sync is a trace of its own, its tools/list a CLIENT span whose context the upstream
 * receives; toolsift's own tools/list, prompts/get and resources/read are SERVER spans. The last
 * spans leave on close; no span carries a query, an argument or a result; a collector that is down
 * fails no call. Runs on the store the environment selects.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestApp, TEST_SECRETS_KEY, type TestApp } from '../helpers/app.js';
import { testDatabase, uniqueName } from '../helpers/database.js';
import { loadConfig } from '../../src/config.js';
import { createDeps } from '../../src/deps.js';

const AGENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const AGENT_SPAN = '00f067aa0ba902b7';
const AGENT_PARENT = `00-${AGENT_TRACE}-${AGENT_SPAN}-01`;
const AGENT_STATE = 'congo=t61rcWkgMzE';
const HEADER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const HEADER_SPAN = 'b7ad6b7169203331';
const REST_TRACE = '5c6d7e8f90a1b2c3d4e5f60718293a4b';
const REST_SPAN = '1a2b3c4d5e6f7081';
const LIST_TRACE = '6e0c63257de34c926f9efcd03927272e';
const LIST_SPAN = '9f0a1b2c3d4e5f60';
/** Words that must never leave in a span: a query, an argument, a result, the collector's credential. */
const QUERY = 'harbour forecast quokkazebra';
const ARGUMENT = 'Brest-wombatlantis';
const RESULT = 'high water at 06:12 (narwhalpine)';
const COLLECTOR_TOKEN = 'collector-secret-81ad';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes: Record<string, unknown>;
  links?: { traceId: string; spanId: string }[];
  resource: Record<string, unknown>;
}

const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;

/** OTLP JSON attributes (`[{key, value: {stringValue | intValue | boolValue | doubleValue}}]`) as a plain object. */
const plain = (attributes: { key: string; value: Record<string, unknown> }[] = []) =>
  Object.fromEntries(attributes.map(({ key, value }) => [key, Object.values(value)[0]]));

/** A collector's OTLP/HTTP receiver: every export's headers and body, and the spans in them. */
async function startCollector(answer = 200) {
  const exports: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    exports.push({ headers: req.headers, body });
    res.writeHead(answer, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const spans = (): ExportedSpan[] =>
    exports.flatMap(({ body }) =>
      (JSON.parse(body).resourceSpans ?? []).flatMap((resourceSpan: any) =>
        resourceSpan.scopeSpans.flatMap((scope: any) =>
          scope.spans.map((span: any) => ({ ...span, attributes: plain(span.attributes), resource: plain(resourceSpan.resource?.attributes) })),
        ),
      ),
    );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    exports,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An upstream MCP server (the official SDK's) that records the `_meta` of each tools/call it runs, and the method and `_meta` of every request. */
async function startRecordingUpstream() {
  const metas: (Record<string, unknown> | undefined)[] = [];
  const requests: { method: string; meta?: Record<string, unknown> }[] = [];
  const serve = toNodeHandler(
    createMcpHandler(() => {
      const server = new McpServer({ name: 'tides', version: '1.0.0' });
      server.registerTool(
        'forecast_tides',
        { description: 'Forecast the tides of a harbour for a day.', inputSchema: z.object({ harbour: z.string() }) },
        async (_args, ctx) => {
          metas.push((ctx as { mcpReq?: { _meta?: Record<string, unknown> } }).mcpReq?._meta);
          return { content: [{ type: 'text', text: RESULT }] };
        },
      );
      return server;
    }),
  );
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = body ? JSON.parse(body) : undefined;
    for (const message of [parsed ?? []].flat()) if (message?.method) requests.push({ method: message.method, meta: message.params?._meta });
    await serve(req, res, parsed);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  return {
    url: `http://127.0.0.2:${(server.address() as AddressInfo).port}/mcp`,
    metas,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('OpenTelemetry spans over OTLP/HTTP', () => {
  let app: TestApp;
  let closed = false;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
  const clients: Client[] = [];
  const catalog = uniqueName('otel');

  async function mcp(headers: Record<string, string> = {}): Promise<Client> {
    const client = new Client({ name: 'tracing-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers } }));
    clients.push(client);
    return client;
  }
  const spanNamed = (name: string, traceId: string) => collector.spans().filter((span) => span.name === name && span.traceId === traceId);

  beforeAll(async () => {
    collector = await startCollector();
    upstream = await startRecordingUpstream();
    app = await startTestApp({
      UPSTREAM_ALLOW: '127.0.0.2/32',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: `authorization=Bearer%20${COLLECTOR_TOKEN}`,
      OTEL_SERVICE_NAME: 'toolsift-under-test',
    });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] })).status).toBe(200);
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/tides`, { url: upstream.url });
    expect(put.status, put.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    if (!closed) await app?.close();
    await upstream?.close();
    await collector?.close();
  });

  it('answers as without tracing while the spans are recorded', async () => {
    const agent = await mcp();
    const found = await agent.callTool({ name: 'search_tools', arguments: { query: QUERY } }, undefined);
    expect(found.isError ?? false).toBe(false);
    const called = await agent.callTool({
      name: 'call_tool',
      arguments: { name: 'forecast_tides', arguments: { harbour: ARGUMENT } },
      _meta: { traceparent: AGENT_PARENT, tracestate: AGENT_STATE },
    });
    expect(called.isError ?? false, JSON.stringify(called)).toBe(false);
    expect(JSON.stringify(called.content)).toContain(RESULT);
    // Only the HTTP request's traceparent: the call continues the request's span.
    const headerOnly = await mcp({ traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` });
    expect((await headerOnly.callTool({ name: 'call_tool', arguments: { name: 'forecast_tides', arguments: { harbour: ARGUMENT } } })).isError ?? false).toBe(
      false,
    );
    const searched = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: QUERY }, { traceparent: `00-${REST_TRACE}-${REST_SPAN}-01` });
    expect(searched.status, searched.text).toBe(200);
    // toolsift's own tools/list (naming its parent in _meta), a prompt given the query as its task, and a resource.
    const listed = await agent.listTools({ _meta: { traceparent: `00-${LIST_TRACE}-${LIST_SPAN}-01` } });
    expect(listed.tools.map((tool) => tool.name)).toContain('call_tool');
    const prompt = await agent.getPrompt({ name: 'find_tool', arguments: { task: QUERY } });
    expect(JSON.stringify(prompt.messages)).toContain(QUERY);
    const index = await agent.readResource({ uri: `toolsift://catalogs/${catalog}/index` });
    expect(JSON.stringify(index.contents)).toContain('forecast_tides');
  });

  it('sends the last spans on close, as JSON with the service name and the collector headers configured', async () => {
    await app.close();
    closed = true;
    expect(collector.exports.length).toBeGreaterThan(0);
    for (const sent of collector.exports) {
      expect(sent.headers['content-type']).toContain('application/json');
      expect(sent.headers.authorization).toBe(`Bearer ${COLLECTOR_TOKEN}`);
    }
    expect(collector.spans()[0]!.resource).toMatchObject({ 'service.name': 'toolsift-under-test' });
  });

  it("continues the agent's _meta trace: the call_tool SERVER span, the upstream's CLIENT span its child, whose context the upstream receives", () => {
    const [served] = spanNamed('tools/call call_tool', AGENT_TRACE);
    expect(served).toBeDefined();
    expect(served).toMatchObject({
      kind: SERVER,
      parentSpanId: AGENT_SPAN,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'call_tool',
        'gen_ai.operation.name': 'execute_tool',
        'toolsift.tenant': 'default',
        'toolsift.catalog': catalog,
        'toolsift.tool': 'forecast_tides',
        'toolsift.upstream': 'tides',
        'toolsift.outcome': 'ok',
      },
    });
    const [client] = spanNamed('tools/call forecast_tides', AGENT_TRACE);
    expect(client).toMatchObject({
      kind: CLIENT,
      parentSpanId: served!.spanId,
      attributes: { 'gen_ai.tool.name': 'forecast_tides', 'toolsift.upstream': 'tides', 'toolsift.catalog': catalog },
    });
    // The upstream saw toolsift's CLIENT span as its parent, in the agent's trace, the agent's tracestate kept.
    expect(upstream.metas).toContainEqual(expect.objectContaining({ traceparent: `00-${AGENT_TRACE}-${client!.spanId}-01`, tracestate: AGENT_STATE }));
  });

  it("links the call that named its parent in _meta to its HTTP request's span; a call within the request's span has no link", () => {
    const [served] = spanNamed('tools/call call_tool', AGENT_TRACE);
    expect(served?.links).toHaveLength(1);
    const [link] = served!.links!;
    // The request sent no traceparent header: its span began a trace of its own, now joined to the agent's.
    expect(link!.traceId).not.toBe(AGENT_TRACE);
    expect(collector.spans().find((span) => span.traceId === link!.traceId && span.spanId === link!.spanId)).toMatchObject({
      name: 'POST /mcp/:catalog',
      kind: SERVER,
    });
    const [withinRequest] = spanNamed('tools/call call_tool', HEADER_TRACE);
    expect(withinRequest).toBeDefined();
    expect(withinRequest!.links ?? []).toEqual([]);
  });

  it("records toolsift's own tools/list, prompts/get and resources/read as SERVER spans, parented as the meta-tools' are", () => {
    const [listed] = spanNamed('tools/list', LIST_TRACE);
    expect(listed).toMatchObject({
      kind: SERVER,
      parentSpanId: LIST_SPAN,
      attributes: { 'mcp.method.name': 'tools/list', 'toolsift.tenant': 'default', 'toolsift.catalog': catalog, 'toolsift.results': expect.any(Number) },
    });
    expect(listed!.attributes['toolsift.results']).toBeGreaterThanOrEqual(4);
    expect(listed!.links).toHaveLength(1);
    const requestOf = (span: ExportedSpan | undefined) =>
      collector.spans().find((request) => request.traceId === span?.traceId && request.spanId === span?.parentSpanId);
    const prompt = collector.spans().find((span) => span.name === 'prompts/get find_tool');
    expect(prompt).toMatchObject({
      kind: SERVER,
      attributes: { 'mcp.method.name': 'prompts/get', 'gen_ai.prompt.name': 'find_tool', 'toolsift.catalog': catalog },
    });
    expect(requestOf(prompt)).toMatchObject({ name: 'POST /mcp/:catalog', kind: SERVER });
    const read = collector.spans().find((span) => span.name === 'resources/read');
    expect(read).toMatchObject({
      kind: SERVER,
      attributes: { 'mcp.method.name': 'resources/read', 'toolsift.resource': 'catalog-index', 'toolsift.catalog': catalog },
    });
    expect(requestOf(read)).toMatchObject({ name: 'POST /mcp/:catalog', kind: SERVER });
  });

  it("records an upstream's sync as a trace of its own: an INTERNAL span, its tools/list a CLIENT span whose context the upstream receives", () => {
    const [sync] = collector.spans().filter((span) => span.name === 'sync upstream' && span.attributes['toolsift.catalog'] === catalog);
    expect(sync).toMatchObject({
      kind: INTERNAL,
      attributes: { 'toolsift.tenant': 'default', 'toolsift.catalog': catalog, 'toolsift.upstream': 'tides', 'toolsift.outcome': 'ok', 'toolsift.results': 1 },
    });
    expect(sync!.parentSpanId || undefined).toBeUndefined();
    const listing = collector.spans().find((span) => span.name === 'tools/list' && span.parentSpanId === sync!.spanId);
    expect(listing).toMatchObject({
      kind: CLIENT,
      traceId: sync!.traceId,
      attributes: { 'mcp.method.name': 'tools/list', 'toolsift.catalog': catalog, 'toolsift.upstream': 'tides', 'toolsift.results': 1 },
    });
    expect(upstream.requests).toContainEqual({
      method: 'tools/list',
      meta: expect.objectContaining({ traceparent: `00-${sync!.traceId}-${listing!.spanId}-01` }),
    });
  });

  it("continues the HTTP request's traceparent header through the request's span when the call's _meta names none", () => {
    const [served] = spanNamed('tools/call call_tool', HEADER_TRACE);
    // Each of the client's HTTP requests (initialize, tools/call) is a span of the header's trace; the call's is its parent.
    const request = collector.spans().find((span) => span.spanId === served?.parentSpanId);
    expect(request).toMatchObject({
      name: 'POST /mcp/:catalog',
      kind: SERVER,
      parentSpanId: HEADER_SPAN,
      attributes: { 'http.route': '/mcp/:catalog', 'http.response.status_code': 200, 'toolsift.tenant': 'default', 'toolsift.catalog': catalog },
    });
    const [client] = spanNamed('tools/call forecast_tides', HEADER_TRACE);
    expect(client).toMatchObject({ kind: CLIENT, parentSpanId: served!.spanId });
    expect(upstream.metas).toContainEqual(expect.objectContaining({ traceparent: `00-${HEADER_TRACE}-${client!.spanId}-01` }));
  });

  it('records a REST search as a SERVER span named by its route, and a search_tools call with its result count', () => {
    const [searched] = spanNamed('POST /v1/catalogs/:catalog/search', REST_TRACE);
    expect(searched).toMatchObject({
      kind: SERVER,
      parentSpanId: REST_SPAN,
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/v1/catalogs/:catalog/search',
        'http.response.status_code': 200,
        'toolsift.catalog': catalog,
        'toolsift.results': expect.any(Number),
      },
    });
    const search = collector.spans().find((span) => span.name === 'tools/call search_tools');
    expect(search).toMatchObject({ kind: SERVER, attributes: { 'gen_ai.tool.name': 'search_tools', 'toolsift.results': expect.any(Number) } });
  });

  it('no span carries the query, the arguments, the result or a credential', () => {
    const spans = collector.spans();
    expect(spans.length).toBeGreaterThanOrEqual(8);
    const exported = JSON.stringify(spans.map(({ name, attributes, resource }) => ({ name, attributes, resource })));
    for (const secret of [QUERY, 'quokkazebra', ARGUMENT, 'wombatlantis', RESULT, 'narwhalpine', COLLECTOR_TOKEN]) expect(exported).not.toContain(secret);
    // Nothing but names, counts, outcomes and routes: every attribute key is one the documentation lists.
    const keys = new Set(spans.flatMap((span) => Object.keys(span.attributes)));
    expect(
      [...keys].filter(
        (key) =>
          !/^(mcp\.method\.name|gen_ai\.(tool|operation|prompt)\.name|error\.type|http\.(request\.method|route|response\.status_code)|toolsift\.\w+)$/.test(
            key,
          ),
      ),
    ).toEqual([]);
  });
});

describe('OpenTelemetry with a collector that is down', () => {
  it('fails no call, and close does not wait for the collector', async () => {
    const gone = await startCollector();
    await gone.close();
    const upstream = await startRecordingUpstream();
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    const app = await startTestApp(
      {
        UPSTREAM_ALLOW: '127.0.0.2/32',
        OTEL_EXPORTER_OTLP_ENDPOINT: gone.url.replace('/v1/traces', ''),
        OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_TOKEN}`,
      },
      { logger },
    );
    const catalog = uniqueName('otel-down');
    const client = new Client({ name: 'tracing-test', version: '1.0.0' });
    try {
      expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] })).status).toBe(200);
      expect((await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/tides`, { url: upstream.url })).status).toBe(200);
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`)));
      const called = await client.callTool({
        name: 'call_tool',
        arguments: { name: 'forecast_tides', arguments: { harbour: ARGUMENT } },
        _meta: { traceparent: AGENT_PARENT },
      });
      expect(called.isError ?? false).toBe(false);
      expect(upstream.metas.at(-1)?.traceparent).toMatch(new RegExp(`^00-${AGENT_TRACE}-(?!${AGENT_SPAN})[0-9a-f]{16}-01$`));
    } finally {
      await client.close().catch(() => {});
      const closing = performance.now();
      await app.close();
      expect(performance.now() - closing).toBeLessThan(4_000);
      await upstream.close();
    }
    expect(logs.some((line) => line.msg === 'tracing: the last spans were not all exported at shutdown')).toBe(true);
    expect(JSON.stringify(logs)).not.toContain(COLLECTOR_TOKEN);
  });

  it('a collector that refuses every export is one warning line a minute, not one a batch, and never shows its credential', async () => {
    const refusing = await startCollector(400);
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    // One span a batch (the SDK's own OTEL_BSP_* variable, read as the processor is built): the close sends several.
    process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE = '1';
    let app: TestApp;
    try {
      app = await startTestApp(
        { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: refusing.url, OTEL_EXPORTER_OTLP_TRACES_HEADERS: `authorization=${COLLECTOR_TOKEN}` },
        { logger },
      );
    } finally {
      delete process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE;
    }
    try {
      for (let i = 0; i < 3; i += 1) expect((await app.request('GET', '/v1/catalogs')).status).toBe(200);
    } finally {
      await app.close();
      await refusing.close();
    }
    expect(refusing.exports.length).toBeGreaterThanOrEqual(3);
    const warnings = logs.filter((line) => String(line.msg).startsWith('tracing: spans could not be exported'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, collector: refusing.url, spansDropped: 1 });
    expect(JSON.stringify(logs)).not.toContain(COLLECTOR_TOKEN);
  });
});

describe('OpenTelemetry in a worker process', () => {
  it('records the syncs a worker runs (npm run worker answers no requests, but refreshes upstreams)', async () => {
    const collector = await startCollector();
    const upstream = await startRecordingUpstream();
    const config = loadConfig({
      EMBED_MODEL: 'none',
      EMBED_WORKER: 'off',
      CATALOG_WARMUP: 'false',
      SECRETS_KEY: TEST_SECRETS_KEY,
      UPSTREAM_ALLOW: '127.0.0.2/32',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.url,
    });
    // The worker's deps, as src/worker.ts builds them.
    const worker = await createDeps(config, { database: await testDatabase(), logger: pino({ level: 'silent' }), searches: false });
    const catalog = uniqueName('otel-worker');
    try {
      expect(worker.tracing.enabled).toBe(true);
      await worker.upstreams!.register('default', catalog, { name: 'tides', url: upstream.url, headers: {}, refreshSeconds: 300, trust: 'auto' });
    } finally {
      await worker.close();
      await upstream.close();
      await collector.close();
    }
    const [sync] = collector.spans().filter((span) => span.name === 'sync upstream' && span.attributes['toolsift.catalog'] === catalog);
    expect(sync, 'the sync span').toBeDefined();
    expect(sync!.attributes).toMatchObject({ 'toolsift.outcome': 'ok', 'toolsift.results': 1 });
    expect(collector.spans().filter((span) => span.name === 'tools/list' && span.traceId === sync!.traceId)).toHaveLength(1);
  });
});

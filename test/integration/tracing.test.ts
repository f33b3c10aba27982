/**
 * toolsift's own spans (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): exported over OTLP/HTTP as JSON to a
 * collector, here a small HTTP server decoding `resourceSpans`. An agent's call_tool continues the
 * agent's trace: toolsift's SERVER span is the child of the `_meta` traceparent, the upstream call
 * a CLIENT span within it, and the upstream (an SDK server recording each request's `_meta`)
 * receives the CLIENT span's context with the agent's tracestate. The last spans leave on close;
 * no span carries a query, an argument or a result; a collector that is down fails no call. Runs on
 * the store the environment selects.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const AGENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const AGENT_SPAN = '00f067aa0ba902b7';
const AGENT_PARENT = `00-${AGENT_TRACE}-${AGENT_SPAN}-01`;
const AGENT_STATE = 'congo=t61rcWkgMzE';
const HEADER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const HEADER_SPAN = 'b7ad6b7169203331';
const REST_TRACE = '5c6d7e8f90a1b2c3d4e5f60718293a4b';
const REST_SPAN = '1a2b3c4d5e6f7081';
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
  resource: Record<string, unknown>;
}

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

/** An upstream MCP server (the official SDK's) that records the `_meta` of each tools/call it runs. */
async function startRecordingUpstream() {
  const metas: (Record<string, unknown> | undefined)[] = [];
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
  const server = http.createServer((req, res) => void serve(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  return {
    url: `http://127.0.0.2:${(server.address() as AddressInfo).port}/mcp`,
    metas,
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
          !/^(mcp\.method\.name|gen_ai\.(tool|operation)\.name|error\.type|http\.(request\.method|route|response\.status_code)|toolsift\.\w+)$/.test(key),
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

/**
 * An agent's W3C trace context reaches the upstream with its call (the tools/call `_meta` keys
 * MCP gives it), from the call's own `_meta` or the HTTP request's headers, through call_tool and
 * a run_code program's calls; the audit line carries the trace id; a malformed value is not
 * forwarded. Runs on the store the environment selects.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostileUpstream } from '../fixtures/hostile-mcp-server.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE}-00f067aa0ba902b7-01`;
const HEADER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const HEADER_PARENT = `00-${HEADER_TRACE}-b7ad6b7169203331-01`;

describe('trace context through the gateway', () => {
  let app: TestApp;
  let upstream: Awaited<ReturnType<typeof startHostileUpstream>>;
  const logs: Record<string, unknown>[] = [];
  const clients: Client[] = [];
  const catalog = uniqueName('trace');

  async function mcp(headers: Record<string, string> = {}): Promise<Client> {
    const client = new Client({ name: 'trace-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers } }));
    clients.push(client);
    return client;
  }
  const lastMeta = () => upstream.calls.at(-1)?.meta;

  beforeAll(async () => {
    upstream = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'TRACED',
      tools: [
        { name: 'add', description: 'Adds two numbers.', inputSchema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } } },
      ],
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    app = await startTestApp({ UPSTREAM_ALLOW: '127.0.0.2/32', CODE_MODE: 'on', MCP_DRAFTS: 'on' }, { logger });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] })).status).toBe(200);
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/math`, { url: upstream.url() });
    expect(put.status, put.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await app?.close();
    await upstream?.close();
  });

  it("forwards a call's _meta traceparent and tracestate, and audits the trace id", async () => {
    const client = await mcp();
    const called = await client.callTool({
      name: 'call_tool',
      arguments: { name: 'add', arguments: { a: 1, b: 2 } },
      _meta: { traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE' },
    });
    expect(called.isError ?? false).toBe(false);
    expect(lastMeta()).toMatchObject({ traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE' });
    const audited = logs.filter((line) => line.audit === 'call' && line.tool === 'add');
    expect(audited.at(-1)).toMatchObject({ trace_id: TRACE });
  });

  it("takes the HTTP request's traceparent header when the call's _meta has none, and the call's over the header", async () => {
    const client = await mcp({ traceparent: HEADER_PARENT });
    await client.callTool({ name: 'call_tool', arguments: { name: 'add', arguments: { a: 1, b: 2 } } });
    expect(lastMeta()).toMatchObject({ traceparent: HEADER_PARENT });
    expect(lastMeta()?.tracestate).toBeUndefined();
    await client.callTool({ name: 'call_tool', arguments: { name: 'add', arguments: { a: 1, b: 2 } }, _meta: { traceparent: PARENT } });
    expect(lastMeta()).toMatchObject({ traceparent: PARENT });
  });

  it("carries the run_code request's context into each of the program's calls", async () => {
    const client = await mcp();
    const before = upstream.calls.length;
    const ran = await client.callTool({
      name: 'run_code',
      arguments: { code: 'await tools.add({ a: 1, b: 2 }); return await tools.add({ a: 3, b: 4 });' },
      _meta: { traceparent: PARENT },
    });
    expect(ran.isError ?? false).toBe(false);
    expect(upstream.calls.slice(before).map((call) => call.meta?.traceparent)).toEqual([PARENT, PARENT]);
  });

  it("forwards a draft tools/call by a catalog tool's address with its _meta's context", async () => {
    const client = await mcp();
    const called = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 }, _meta: { traceparent: PARENT } });
    expect(called.isError ?? false).toBe(false);
    expect(lastMeta()).toMatchObject({ traceparent: PARENT });
  });

  it('forwards nothing for a malformed traceparent, and no context without one', async () => {
    const client = await mcp();
    await client.callTool({
      name: 'call_tool',
      arguments: { name: 'add', arguments: { a: 1, b: 2 } },
      _meta: { traceparent: '00-not-a-trace-01\r\nx-injected: 1', tracestate: 'congo=1' },
    });
    expect(lastMeta()?.traceparent).toBeUndefined();
    expect(lastMeta()?.tracestate).toBeUndefined();
    await client.callTool({ name: 'call_tool', arguments: { name: 'add', arguments: { a: 1, b: 2 } } });
    expect(lastMeta()?.traceparent).toBeUndefined();
  });
});

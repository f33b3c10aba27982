/**
 * Two replicas over one database, each with its own caches (the tools call_tool resolved, the
 * connections it opened): an upstream re-registered or removed through one replica is what the
 * other calls on its next request. Real upstreams: two `server-everything` processes.
 */
import type { ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { freePort, startEverything } from '../helpers/process.js';

describe('upstreams seen across replicas', () => {
  let writer: TestApp;
  let reader: TestApp;
  let first: ChildProcess;
  let second: ChildProcess;
  let firstUrl: string;
  let secondUrl: string;
  let client: Client;
  const catalog = uniqueName('replicas');
  const tenant = uniqueName('replica-tenant');
  /** With API keys set, /metrics takes this token (it names tenants and upstreams). */
  const METRICS_TOKEN = 'replicas-metrics-token-0001';
  const auth = { authorization: 'Bearer rep1' };
  /** The reader's log lines. */
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const [firstPort, secondPort] = [await freePort(), await freePort()];
    [first, second] = await Promise.all([startEverything(firstPort), startEverything(secondPort)]);
    firstUrl = `http://127.0.0.1:${firstPort}/mcp`;
    secondUrl = `http://127.0.0.1:${secondPort}/mcp`;
    const env = { API_KEYS: `rep1:${tenant}`, UPSTREAM_CALL_TIMEOUT_MS: '5000', UPSTREAM_ALLOW: '127.0.0.1/32', METRICS_TOKEN };
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    [writer, reader] = [await startTestApp(env), await startTestApp(env, { logger: pino({ level: 'info' }, sink) })];
    expect((await writer.request('PUT', `/v1/catalogs/${catalog}`, { tools: [{ name: 'local_note', description: 'Write a local note.' }] }, auth)).status).toBe(
      200,
    );
    client = new Client({ name: 'replica-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${reader.url}/mcp/${catalog}`), { requestInit: { headers: auth } }));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await reader?.close();
    await writer?.close();
    first?.kill('SIGKILL');
    second?.kill('SIGKILL');
  });

  const echo = (message: string) => client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message } } });

  it('a call after another replica moved the upstream goes to its new address', async () => {
    expect((await writer.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url: firstUrl }, auth)).status).toBe(200);
    // The reader resolves the tool and opens a connection to the first server, and keeps both.
    const before = await echo('to the first');
    expect(before.isError).toBeFalsy();
    expect(JSON.stringify(before.content)).toContain('to the first');

    // Same tools at another address: the catalog's tools do not change, its upstream does.
    const moved = await writer.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url: secondUrl }, auth);
    expect(moved.status).toBe(200);
    expect(moved.body.upstream.last_sync).toEqual({ added: 0, changed: 0, removed: 0 });
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    const after = await echo('to the second');
    expect(after.isError, JSON.stringify(after.content)).toBeFalsy();
    expect(JSON.stringify(after.content)).toContain('to the second');
  });

  it("each call's log line splits its time: the lookup and the upstream; a search's ranking stages", async () => {
    lines.length = 0;
    expect((await echo('timed')).isError).toBeFalsy();
    await client.callTool({ name: 'search_tools', arguments: { query: 'echo a message' } });
    const call = lines.find((line) => line.msg === 'mcp call' && line.tool === 'call_tool')!;
    expect(call).toMatchObject({ upstream: 'everything', outcome: 'ok', catalog });
    expect(call.lookup_ms).toEqual(expect.any(Number));
    expect(call.upstream_ms).toBeGreaterThan(0);
    expect(call.upstream_ms as number).toBeLessThanOrEqual(call.ms as number);
    const search = lines.find((line) => line.msg === 'mcp call' && line.tool === 'search_tools')!;
    expect(Object.keys(search)).toEqual(expect.arrayContaining(['query_embedding_ms', 'retrieval_ms', 'fusion_ms']));
    expect(search.retrieval_ms).toBeGreaterThan(0);
    // The proxied-call histogram holds the upstream's time.
    const metrics = await (await fetch(`${reader.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(metrics).toMatch(/toolsift_mcp_upstream_call_duration_seconds_count\{upstream="everything",outcome="ok"\} [1-9]/);
  });

  it('a call after another replica removed the upstream says it has none', async () => {
    expect((await echo('still there')).isError).toBeFalsy();
    expect((await writer.request('DELETE', `/v1/catalogs/${catalog}/upstreams/everything`, undefined, auth)).status).toBe(204);
    // DELETE took the upstream's tools with it; register a REST tool of that server so the name
    // resolves and only the upstream's absence answers.
    expect(
      (await writer.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [{ name: 'echo', description: 'Echo a message.', server: 'everything' }] }, auth))
        .status,
    ).toBe(200);
    const gone = await echo('anyone?');
    expect(gone.isError).toBe(true);
    expect(JSON.stringify(gone.content)).toContain('has no upstream MCP server registered');
  });

  it('registering an upstream bumps the catalog row the cache keys on, and a bad registration changes nothing', async () => {
    const row = async () =>
      (await writer.deps.catalog.db.execute(sqlRevision(tenant, catalog))) as unknown as { rows: Array<{ revision: number; upstream_revision: number }> };
    // The REST tool the last test pushed holds the name echo: a sync would leave the upstream's out.
    expect((await writer.request('DELETE', `/v1/catalogs/${catalog}/tools/echo`, undefined, auth)).status).toBe(204);
    const start = (await row()).rows[0]!;
    expect((await writer.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url: secondUrl, headers: { 'X-Token': 'a' } }, auth)).status).toBe(
      200,
    );
    const registered = (await row()).rows[0]!;
    expect(registered.upstream_revision).toBe(start.upstream_revision + 1);
    // Rejected before the store: nothing bumped.
    expect((await writer.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url: 'not a url' }, auth)).status).toBe(400);
    expect((await row()).rows[0]!.upstream_revision).toBe(registered.upstream_revision);
    // The reader's connection was opened without the header: it reopens with it and calls through.
    const called = await echo('with a token');
    expect(called.isError, JSON.stringify(called.content)).toBeFalsy();
  });
});

const sqlRevision = (tenant: string, catalog: string) =>
  sql`select revision::int as revision, upstream_revision::int as upstream_revision from catalogs where tenant = ${tenant} and name = ${catalog}`;

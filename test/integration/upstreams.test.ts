/**
 * Upstream MCP servers as catalog sources, with a real server from npm
 * (`@modelcontextprotocol/server-everything` over Streamable HTTP): register, sync, find its tools
 * through toolsift's own MCP endpoint with the SDK client, call one through toolsift, and an
 * upstream that dies: a clear isError, an error in its sync state, previous tools kept, search on.
 */
import type { ChildProcess } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { freePort, startEverything } from '../helpers/process.js';

describe('upstream MCP servers', () => {
  let app: TestApp;
  let everything: ChildProcess;
  let url: string;
  let client: Client;
  const catalog = uniqueName('upstreams');
  const auth = { authorization: 'Bearer up1' };

  beforeAll(async () => {
    const port = await freePort();
    everything = await startEverything(port);
    url = `http://127.0.0.1:${port}/mcp`;
    // server-everything listens on loopback, which the address policy refuses unless opened.
    app = await startTestApp({
      API_KEYS: `up1:${uniqueName('up-tenant')},up2:${uniqueName('up-other')}`,
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      UPSTREAM_ALLOW: '127.0.0.1/32',
    });
    // A tool pushed over REST lives beside the synced ones and survives every sync.
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [{ name: 'local_note', description: 'Write a local note.' }] }, auth)).status).toBe(
      200,
    );
    client = new Client({ name: 'upstream-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: auth } }));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await app?.close();
    everything?.kill('SIGKILL');
  });

  it('registers and syncs every tool of a Streamable HTTP server, never returning header values', async () => {
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${catalog}/upstreams/everything`,
      { url, headers: { 'X-Secret-Token': 's3cr3t' }, refresh_seconds: 60 },
      auth,
    );
    expect(put.status).toBe(200);
    expect(put.body.upstream).toMatchObject({ name: 'everything', url, header_names: ['X-Secret-Token'], last_error: null });
    expect(put.body.upstream.tool_count).toBeGreaterThan(5);
    expect(put.body.upstream.last_sync).toMatchObject({ added: put.body.upstream.tool_count, changed: 0, removed: 0 });
    expect(put.text).not.toContain('s3cr3t');
    const listed = await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, auth);
    expect(listed.body.upstreams.map((upstream: { name: string }) => upstream.name)).toEqual(['everything']);
    expect(listed.text).not.toContain('s3cr3t');
    // The catalog itself shows each upstream's last sync.
    const shown = await app.request('GET', `/v1/catalogs/${catalog}`, undefined, auth);
    expect(shown.body.upstreams).toEqual(listed.body.upstreams);
    expect(shown.text).not.toContain('s3cr3t');
    const echo = await app.request('GET', `/v1/catalogs/${catalog}/tools/echo`, undefined, auth);
    expect(echo.body).toMatchObject({ name: 'echo', server: 'everything' });
    expect((await app.request('GET', `/v1/catalogs/${catalog}/tools/local_note`, undefined, auth)).status).toBe(200);
    // Other tenants see none of it.
    expect((await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, { authorization: 'Bearer up2' })).status).toBe(404);
    // A second sync with nothing new changes nothing.
    const again = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url, refresh_seconds: 60 }, auth);
    expect(again.body.upstream.last_sync).toEqual({ added: 0, changed: 0, removed: 0 });
  });

  it('a sync never undoes a write of other tools that lands while it runs', async () => {
    for (let round = 0; round < 8; round++) {
      const name = `local_${round}`;
      const [sync, post] = await Promise.all([
        app.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url, refresh_seconds: 60 }, auth),
        app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [{ name, description: `A local tool written during sync ${round}.` }] }, auth),
      ]);
      expect([sync.status, post.status]).toEqual([200, 200]);
      expect((await app.request('GET', `/v1/catalogs/${catalog}/tools/${name}`, undefined, auth)).status).toBe(200);
    }
    expect((await app.request('GET', `/v1/catalogs/${catalog}/tools/echo`, undefined, auth)).status).toBe(200);
  });

  it('an MCP client finds an upstream tool with search_tools, reads it and calls it through toolsift', async () => {
    const search = await client.callTool({ name: 'search_tools', arguments: { query: 'echo back a message', limit: 3 } });
    const results = (search.structuredContent as { results: Array<{ name: string; server: string }> }).results;
    expect(results.map((tool) => tool.name)).toContain('echo');
    const details = await client.callTool({ name: 'get_tool_details', arguments: { names: ['echo'] } });
    expect(JSON.stringify(details.structuredContent)).toContain('"message"');
    const called = await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'hello through toolsift' } } });
    expect(called.isError).toBeFalsy();
    expect(JSON.stringify(called.content)).toContain('hello through toolsift');
    // A tool pushed over REST has no upstream: a clear isError.
    const local = await client.callTool({ name: 'call_tool', arguments: { name: 'local_note', arguments: {} } });
    expect(local.isError).toBe(true);
    expect(JSON.stringify(local.content)).toContain('has no upstream MCP server registered');
    // A tool that names a server no upstream of this catalog is: the same, naming the server.
    expect(
      (await app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [{ name: 'ghost_tool', description: 'Haunts.', server: 'ghost' }] }, auth)).status,
    ).toBe(200);
    const ghost = await client.callTool({ name: 'call_tool', arguments: { name: 'ghost_tool', arguments: {} } });
    expect(ghost.isError).toBe(true);
    expect(JSON.stringify(ghost.content)).toContain('its server is \\"ghost\\"');
  });

  it('an upstream that dies gives isError on call and an error in its sync state; its tools stay searchable', async () => {
    everything.kill('SIGKILL');
    await new Promise((resolve) => everything.once('exit', resolve));
    const called = await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'anyone there?' } } });
    expect(called.isError).toBe(true);
    expect(JSON.stringify(called.content)).toContain('everything');
    const resync = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url, refresh_seconds: 60 }, auth);
    expect(resync.status).toBe(200);
    expect(resync.body.upstream.last_error).toBeTruthy();
    expect(resync.body.upstream.tool_count).toBeGreaterThan(5);
    const search = await client.callTool({ name: 'search_tools', arguments: { query: 'echo back a message' } });
    expect((search.structuredContent as { results: Array<{ name: string }> }).results.map((tool) => tool.name)).toContain('echo');
  });

  it('a registration racing the deletion of its catalog answers 200 or 404, never 5xx', async () => {
    // Port 1 refuses at once: the sync fails fast and records its error (200), unless the catalog
    // is gone first. Before: 500 in most rounds (the state read back after the sync, or the
    // upstream row's catalog, missing).
    for (let round = 0; round < 12; round++) {
      const raced = uniqueName('raced');
      expect((await app.request('PUT', `/v1/catalogs/${raced}`, { tools: [{ name: 'a', description: 'A tool.' }] }, auth)).status).toBe(200);
      const [put, del] = await Promise.all([
        app.request('PUT', `/v1/catalogs/${raced}/upstreams/gone`, { url: 'http://127.0.0.1:1/mcp' }, auth),
        new Promise((resolve) => setTimeout(resolve, round % 4)).then(() => app.request('DELETE', `/v1/catalogs/${raced}`, undefined, auth)),
      ]);
      expect([200, 404], put.text).toContain(put.status);
      expect(del.status).toBe(204);
    }
  });

  it('rejects stdio commands and bad bodies, and DELETE removes the upstream with its tools', async () => {
    expect((await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/x`, { url: 'file:///bin/sh' }, auth)).status).toBe(400);
    expect((await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/x`, { url, command: 'sh' }, auth)).status).toBe(400);
    expect((await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/bad%20name`, { url }, auth)).status).toBe(400);
    expect((await app.request('DELETE', `/v1/catalogs/${catalog}/upstreams/everything`, undefined, auth)).status).toBe(204);
    expect((await app.request('GET', `/v1/catalogs/${catalog}/tools/echo`, undefined, auth)).status).toBe(404);
    expect((await app.request('GET', `/v1/catalogs/${catalog}/tools/local_note`, undefined, auth)).status).toBe(200);
    expect((await app.request('DELETE', `/v1/catalogs/${catalog}/upstreams/everything`, undefined, auth)).status).toBe(404);
  });
});

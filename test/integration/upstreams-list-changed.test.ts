/**
 * An upstream whose tool list changes while it runs: toolsift re-syncs on the server's
 * notifications/tools/list_changed, without waiting for the refresh period, and the new tool is
 * searchable and callable through toolsift (a real SDK server over stdio, test/fixtures).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const fixture = new URL('../fixtures/changing-mcp-server.mjs', import.meta.url).pathname;

describe('an upstream that announces a changed tool list', () => {
  let app: TestApp;
  let client: Client;
  let folder: string;
  const catalog = uniqueName('changing');
  const tenant = uniqueName('changing-tenant');
  const auth = { authorization: 'Bearer ch-key' };
  const state = async () => (await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, auth)).body?.upstreams?.[0];

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'toolsift-changing-'));
    const file = join(folder, 'upstreams.json');
    // A refresh period far beyond the test: only the notification can bring the new tool in.
    writeFileSync(file, JSON.stringify({ mcpServers: { changing: { command: process.execPath, args: [fixture], catalog, tenant, refresh_seconds: 86_400 } } }));
    app = await startTestApp({ API_KEYS: `ch-key:${tenant}`, UPSTREAMS_FILE: file });
    for (let tries = 0; !((await state())?.tool_count > 0); tries++) {
      if (tries > 300) throw new Error(`the fixture did not sync: ${JSON.stringify(await state())}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    client = new Client({ name: 'list-changed-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: auth } }));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await app?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('re-syncs on list_changed: the added tool waits for approval, then is found and called through toolsift', async () => {
    expect((await state()).tool_count).toBe(2);
    const added = await client.callTool({ name: 'call_tool', arguments: { name: 'add_tool', arguments: { name: 'tide_forecast' } } });
    expect(added.isError, JSON.stringify(added)).toBeFalsy();
    for (let tries = 0; (await state()).pending !== 1; tries++) {
      if (tries > 100) throw new Error(`no re-sync after list_changed: ${JSON.stringify(await state())}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Pinned (the default): a tool that appears after the registration is not served until approved.
    expect((await state()).tool_count).toBe(2);
    const waiting = await client.callTool({ name: 'call_tool', arguments: { name: 'tide_forecast', arguments: {} } });
    expect(waiting.isError).toBe(true);
    const approved = await app.request('POST', `/v1/catalogs/${catalog}/upstreams/changing/approve`, { tools: ['tide_forecast'] }, auth);
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toMatchObject({ approved: ['tide_forecast'], upstream: { tool_count: 3, pending: 0 } });
    const search = await client.callTool({ name: 'search_tools', arguments: { query: 'forecast the tides of a harbour' } });
    expect((search.structuredContent as { results: Array<{ name: string }> }).results[0]!.name).toBe('tide_forecast');
    const called = await client.callTool({ name: 'call_tool', arguments: { name: 'tide_forecast', arguments: {} } });
    expect(JSON.stringify(called.content)).toContain('tide_forecast ran');
  });

  it('a local server that exits is started again on its own, with backoff, and synced', async () => {
    const before = (await state()).last_sync_at;
    const crashed = await client.callTool({ name: 'call_tool', arguments: { name: 'crash', arguments: {} } });
    expect(crashed.isError, JSON.stringify(crashed)).toBeFalsy();
    // No call reaches it: only the supervisor can start it again (first restart after 1 s).
    for (let tries = 0; (await state()).last_sync_at === before; tries++) {
      if (tries > 100) throw new Error(`not restarted: ${JSON.stringify(await state())}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // A new process: the tool added at runtime is gone, and the sync says so.
    expect(await state()).toMatchObject({ last_error: null, tool_count: 2, last_sync: { removed: 1 } });
    const called = await client.callTool({ name: 'call_tool', arguments: { name: 'add_tool', arguments: { name: 'again' } } });
    expect(JSON.stringify(called.content)).toContain('added again');
  });
});

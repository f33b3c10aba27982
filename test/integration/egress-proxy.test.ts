/**
 * The service behind an operator's egress proxy (UPSTREAM_PROXY): a real upstream
 * (`@modelcontextprotocol/server-everything`) registered, synced and called through a CONNECT
 * proxy, by the address toolsift judged; an internal address the policy refuses never reaches the
 * proxy; a bad proxy setting stops the start naming it.
 */
import type { ChildProcess } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { uniqueName } from '../helpers/database.js';
import { freePort, startEverything } from '../helpers/process.js';

describe('upstreams through the egress proxy (UPSTREAM_PROXY)', () => {
  let everything: ChildProcess;
  let port: number;
  let proxy: ConnectProxy;
  let app: TestApp;

  beforeAll(async () => {
    port = await freePort();
    everything = await startEverything(port);
    proxy = await startConnectProxy('egress:pa55');
    app = await startTestApp({ UPSTREAM_ALLOW: '127.0.0.1/32', UPSTREAM_PROXY: proxy.url });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    everything?.kill('SIGKILL');
  });

  it('syncs and calls a remote upstream through the proxy, asking it for the checked address', async () => {
    const catalog = uniqueName('egress');
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/everything`, { url: `http://127.0.0.1:${port}/mcp`, trust: 'auto' });
    expect(put.status, put.text).toBe(200);
    expect(put.body.upstream.tool_count).toBeGreaterThan(0);
    const client = new Client({ name: 'egress-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`)));
    try {
      const echoed = (await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'via the proxy' } } })) as {
        content: { text?: string }[];
      };
      expect(echoed.content[0]!.text).toBe('Echo: via the proxy');
    } finally {
      await client.close();
    }
    expect(proxy.asked.length).toBeGreaterThan(0);
    expect(new Set(proxy.asked)).toEqual(new Set([`127.0.0.1:${port}`]));
  });

  it('refuses an internal address the policy does not open before the proxy hears of it', async () => {
    const asked = proxy.asked.length;
    const put = await app.request('PUT', `/v1/catalogs/${uniqueName('egress')}/upstreams/metadata`, { url: 'http://169.254.169.254/latest/meta-data/' });
    expect(put.status).toBe(400);
    expect(put.body.error.message).toMatch(/refused by the address policy \(link-local\)/);
    expect(proxy.asked.length).toBe(asked);
  });

  it('stops the start on a proxy setting it cannot use, naming it', () => {
    expect(() => loadConfig({ UPSTREAM_PROXY: 'socks5://proxy:1080' })).toThrow(/UPSTREAM_PROXY must be an http:\/\/ or https:\/\/ proxy/);
    expect(loadConfig({ UPSTREAM_PROXY: 'https://proxy.internal:8443' }).UPSTREAM_PROXY).toBe('https://proxy.internal:8443');
    expect(() => loadConfig({ UPSTREAM_PROXY_CONNECT: 'dns' })).toThrow(/UPSTREAM_PROXY_CONNECT/);
  });
});

/**
 * Per-key rate limits on the real app (http/rate-limit.ts): a key of API_KEYS_FILE with its own
 * `requests_per_minute`, the RATE_LIMIT_PER_MINUTE default for the others, REST and /mcp alike;
 * health and readiness are never limited.
 */
import type { ChildProcess } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { keysFile } from '../helpers/keys-file.js';
import { freePort, startEverything } from '../helpers/process.js';
import { startRedisProxy } from '../helpers/queue.js';

const METRICS = 'metrics-token-0123456789';

describe('per-key rate limits', () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  const tenant = uniqueName('rate');
  const keys = { tight: `tight-${tenant}-0123456789`, open: `open-${tenant}-0123456789`, plain: `plain-${tenant}-0123456789` };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.tight, id: 'tight', tenant, requests_per_minute: 3 },
      { key: keys.open, id: 'roomy', tenant, requests_per_minute: 1000 },
    ]);
    app = await startTestApp({ API_KEYS_FILE: keysOf.path, API_KEYS: `${keys.plain}:${tenant}`, RATE_LIMIT_PER_MINUTE: '2', METRICS_TOKEN: METRICS });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    keysOf?.remove();
  });

  it('answers a key past its minute 429 with Retry-After, before anything else, and leaves other keys alone', async () => {
    const listed = [];
    for (let i = 0; i < 3; i++) listed.push(await app.request('GET', '/v1/catalogs', undefined, as(keys.tight)));
    expect(listed.map((response) => response.status)).toEqual([200, 200, 200]);
    expect(listed.map((response) => response.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0']);
    expect(listed[0]!.headers.get('ratelimit-limit')).toBe('3');
    const refused = await app.request('GET', '/v1/catalogs', undefined, as(keys.tight));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      code: 'rate_limited',
      message: expect.stringMatching(/^key "tight" is limited to 3 requests a minute: retry in \d+ s$/),
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(20);
    // Refused before its body is read or anything written: a push is not stored.
    const push = await app.request(
      'PUT',
      `/v1/catalogs/${uniqueName('limited')}`,
      { tools: [{ name: 'never_written', description: 'Not stored.' }] },
      as(keys.tight),
    );
    expect(push.status).toBe(429);
    expect((await app.request('GET', '/v1/catalogs', undefined, as(keys.open))).body.catalogs.map((c: { name: string }) => c.name)).not.toContain(
      expect.stringMatching(/^limited/),
    );
    // Another key of the same tenant has its own minute; health and readiness are not limited.
    for (let i = 0; i < 5; i++) expect((await app.request('GET', '/v1/catalogs', undefined, as(keys.open))).status).toBe(200);
    expect((await app.request('GET', '/healthz')).status).toBe(200);
    expect((await app.request('GET', '/readyz')).status).toBe(200);
    expect((await app.request('GET', '/metrics', undefined, { authorization: `Bearer ${METRICS}` })).text).toMatch(
      /toolsift_rate_limited_total\{key="tight"\} [1-9]/,
    );
  });

  it('gives keys without their own limit RATE_LIMIT_PER_MINUTE, on /mcp too', async () => {
    expect((await app.request('GET', '/v1/catalogs', undefined, as(keys.plain))).status).toBe(200);
    expect((await app.request('GET', '/v1/catalogs', undefined, as(keys.plain))).headers.get('ratelimit-limit')).toBe('2');
    const client = new Client({ name: 'rate-test', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: as(keys.plain) } }))).rejects.toThrow(
      /429|rate_limited|limited to 2 requests a minute/,
    );
    await client.close().catch(() => {});
  });
});

describe('rate limits shared by replicas through Redis (REDIS_URL)', () => {
  const apps: TestApp[] = [];
  let redis: Awaited<ReturnType<typeof startRedisProxy>>;
  const tenant = uniqueName('rate-shared');
  const key = `shared-${tenant}-0123456789`;
  const as = { authorization: `Bearer ${key}` };

  beforeAll(async () => {
    redis = await startRedisProxy();
    // Two replicas of one deployment: the same key, the same Redis.
    for (let i = 0; i < 2; i++)
      apps.push(await startTestApp({ API_KEYS: `${key}:${tenant}`, RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: redis.url, METRICS_TOKEN: METRICS }));
  }, 60_000);

  afterAll(async () => {
    for (const app of apps) await app.close();
    await redis?.close();
  });

  it('lets a key through its minute once across the replicas, and counts alone (never failing a request) while Redis is away', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await apps[i % 2]!.request('GET', '/v1/catalogs', undefined, as)).status);
    // Per process each replica would have let four through: eight in all.
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    await redis.cut();
    // Redis gone: each replica decides by its own bucket, which this key has not used.
    const alone = await apps[0]!.request('GET', '/v1/catalogs', undefined, as);
    expect(alone.status).toBe(200);
    expect((await apps[0]!.request('GET', '/metrics', undefined, { authorization: `Bearer ${METRICS}` })).text).toMatch(
      /toolsift_rate_limit_fallbacks_total [1-9]/,
    );
  });
});

describe("a run_code program's tool calls count against its key's requests a minute", () => {
  let app: TestApp;
  let everything: ChildProcess;
  const tenant = uniqueName('rate-code');
  const key = `code-${tenant}-0123456789`;
  const catalog = uniqueName('rate-code');

  beforeAll(async () => {
    const port = await freePort();
    everything = await startEverything(port);
    app = await startTestApp({ API_KEYS: `${key}:${tenant}`, RATE_LIMIT_PER_MINUTE: '6', CODE_MODE: 'on', UPSTREAM_ALLOW: '127.0.0.1/32' });
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${catalog}/upstreams/everything`,
      { url: `http://127.0.0.1:${port}/mcp`, trust: 'auto' },
      {
        authorization: `Bearer ${key}`,
      },
    );
    expect(put.status, put.text).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    everything?.kill('SIGKILL');
  });

  it('refuses the calls past the minute inside the program (ToolError), never more upstream calls than the limit allows', async () => {
    // Six a minute: the PUT took one; a stateless MCP client sends two requests to connect and one to call run_code.
    const client = new Client({ name: 'rate-code-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    );
    try {
      const run = (await client.callTool({
        name: 'run_code',
        arguments: {
          code: `const done = []; for (let i = 0; i < 5; i++) { try { await tools.echo({ message: 'hi ' + i }); done.push('ok'); } catch (error) { done.push(String(error.message)); } } return done;`,
        },
      })) as { content: { text?: string }[] };
      const text = run.content.map((block) => block.text ?? '').join('\n');
      const done = JSON.parse(text.split('\n')[0]!) as string[];
      const passed = done.filter((entry) => entry === 'ok').length;
      // What the requests before it left of the minute, and no more.
      expect(passed).toBeGreaterThanOrEqual(1);
      expect(passed).toBeLessThan(5);
      expect(
        done
          .slice(passed)
          .every((entry) => /was not called: key ".+" is limited to 6 requests a minute: retry in \d+ s \(each tool call of a program counts/.test(entry)),
      ).toBe(true);
    } finally {
      await client.close().catch(() => {});
    }
  });
});

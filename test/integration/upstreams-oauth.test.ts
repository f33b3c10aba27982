/**
 * OAuth to upstream MCP servers, end to end against a server built from the official SDK's
 * server-side auth support (test/fixtures/oauth-mcp-server.ts): registration -> the server's 401
 * -> protected-resource and authorization-server discovery -> dynamic client registration ->
 * authorization code with PKCE, the browser step done by an HTTP client following the redirects
 * -> toolsift's callback -> tokens stored sealed -> sync -> call_tool with the bearer -> the token
 * renewed before it expires -> a revoked refresh token shown in the upstream's status and metrics,
 * never in the agent's answer. Then client_credentials, bad input, two replicas renewing one
 * rotating refresh token at once, the step-up on a 403 insufficient_scope (SEP-2350) within a
 * configured scope's ceiling, and metadata that points toolsift at internal addresses.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/lib/secret-box.js';
import { queryRows } from '../../src/store/database.js';
import { boundPlaintext, readBound, sealStoredSecrets } from '../../src/store/stored-secrets.js';
import { tenantClientId } from '../../src/upstream/client-metadata.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, storeKind, uniqueName, type ScratchDatabase } from '../helpers/database.js';
import {
  SCOPED_TOOL,
  startImpostorAuthServer,
  startOAuthMcpServer,
  TOOL_SCOPE,
  type ImpostorAuthServer,
  type OAuthMcpServer,
} from '../fixtures/oauth-mcp-server.js';

const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (result: { content?: unknown }) => JSON.stringify(result.content);

/** Keys for private_key_jwt: the test server knows the public halves of the first two, not the third's. */
const pkcs8 = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;
const RSA_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EC_KEY = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const RSA_PEM = pkcs8(RSA_KEY.privateKey);
const EC_PEM = pkcs8(EC_KEY.privateKey);
const UNKNOWN_RSA_PEM = pkcs8(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
/** The full base64 lines of a PEM: any of them in an answer, the store or a log line is the key shown. */
const keyLines = (pem: string) => pem.split('\n').filter((line) => line.length === 64);
const expectNoKey = (haystack: string, where: string) => {
  for (const pem of [RSA_PEM, EC_PEM, UNKNOWN_RSA_PEM]) for (const line of keyLines(pem)) expect(haystack.includes(line), where).toBe(false);
};

/** An access token lives this long at the test server: renewed from 3/4 of it on. */
const ACCESS_SECONDS = 4;

/**
 * The operator's browser: starts the authorization (`startPath`), opens the authorization URL and
 * follows every redirect back to toolsift's callback.
 */
async function authorizeThroughBrowser(
  app: TestApp,
  upstream: OAuthMcpServer,
  startPath: string,
  key: Record<string, string>,
): Promise<{ status: number; page: string; url: string; authorizationUrl: URL }> {
  const started = await app.request('POST', startPath, {}, key);
  expect(started.status).toBe(200);
  const authorizationUrl = new URL(started.body.authorization_url);
  expect(authorizationUrl.origin).toBe(upstream.origin);
  expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorizationUrl.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(`${app.url}/oauth/callback`);
  expect(authorizationUrl.searchParams.get('resource')).toBe(upstream.url);
  const browser = await fetch(authorizationUrl, { redirect: 'follow' });
  return { status: browser.status, page: await browser.text(), url: browser.url, authorizationUrl };
}

/** Registrations with a private key that are a 400, each with what the message says (never the key). */
function keyCases(url: string): [unknown, string][] {
  const signer = { type: 'oauth', grant: 'client_credentials', client_id: 'signer' };
  const truncated = [...RSA_PEM.split('\n').slice(0, 4), '-----END PRIVATE KEY-----'].join('\n');
  const pkcs1 = RSA_KEY.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string;
  return [
    [{ url, auth: { ...signer, client_secret: 'x', private_key: RSA_PEM } }, 'auth.private_key: give client_secret or private_key, not both'],
    [{ url, auth: { ...signer, client_id: undefined, private_key: RSA_PEM } }, 'auth.private_key: private_key needs client_id'],
    [{ url, auth: { ...signer, grant: 'authorization_code', private_key: RSA_PEM } }, 'auth.private_key: private_key signs client_credentials'],
    [{ url, auth: { ...signer, private_key: 'not a key' } }, 'auth.private_key: private_key is a PEM PKCS#8 private key'],
    [{ url, auth: { ...signer, private_key: pkcs1 } }, 'auth.private_key: private_key is a PEM PKCS#8 private key'],
    [{ url, auth: { ...signer, private_key: truncated } }, 'auth.private_key: private_key does not read as a PKCS#8 private key'],
    [{ url, auth: { ...signer, private_key: pkcs8(generateKeyPairSync('ed25519').privateKey) } }, 'auth.private_key: private_key is neither an RSA key'],
    [{ url, auth: { ...signer, private_key: RSA_PEM, algorithm: 'ES256' } }, 'auth.algorithm: algorithm ES256 does not sign with an RSA key'],
    [
      { url, auth: { ...signer, private_key: EC_PEM, algorithm: 'RS256' } },
      'auth.algorithm: algorithm RS256 does not sign with a P-256 key: it signs with ES256',
    ],
    [{ url, auth: { ...signer, private_key: RSA_PEM, algorithm: 'HS256' } }, 'auth.algorithm'],
    [{ url, auth: { ...signer, client_secret: 'x', algorithm: 'RS256' } }, 'auth.algorithm: algorithm needs private_key'],
  ];
}

describe('OAuth upstreams', () => {
  let app: TestApp;
  let upstream: OAuthMcpServer;
  let client: Client;
  const catalog = uniqueName('oauth');
  const key = { authorization: 'Bearer oa1' };
  const path = (name: string, rest = '') => `/v1/catalogs/${catalog}/upstreams/${name}${rest}`;
  const status = async (name: string) => (await app.request('GET', path(name), undefined, key)).body.upstream;
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name: 'call_tool', arguments: { name, arguments: args } });

  const authorizeInBrowser = (name: string) => authorizeThroughBrowser(app, upstream, path(name, '/oauth/start'), key);

  beforeAll(async () => {
    upstream = await startOAuthMcpServer();
    upstream.provider.accessSeconds = ACCESS_SECONDS;
    // The test server listens on loopback, which the address policy refuses unless opened.
    app = await startTestApp({
      API_KEYS: `oa1:${uniqueName('oauth-tenant')}`,
      UPSTREAM_ALLOW: '127.0.0.1/32',
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      SECRETS_KEY,
      METRICS_TOKEN: 'metrics-oauth-token-0123',
    });
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] }, key)).status).toBe(200);
    client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: key } }));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await app?.close();
    await upstream?.close();
  });

  it('authorization code with PKCE: 401 -> discovery -> dynamic registration -> browser -> callback -> tokens -> sync -> calls with the bearer', async () => {
    const put = await app.request('PUT', path('protected'), { url: upstream.url, auth: { type: 'oauth' } }, key);
    expect(put.status).toBe(200);
    // The server's 401 started discovery; a browser flow needs an operator.
    expect(put.body.upstream).toMatchObject({ tool_count: 0, auth: { type: 'oauth', grant: 'authorization_code', status: 'authorization_required' } });
    expect(put.body.upstream.last_error).toContain('authorization required');
    expect(upstream.seen.unauthenticated).toBeGreaterThan(0);

    const browser = await authorizeInBrowser('protected');
    expect(browser.status).toBe(200);
    expect(browser.url.startsWith(`${app.url}/oauth/callback?`)).toBe(true);
    expect(browser.page).toContain('is authorized (2 tools served');
    expect(upstream.provider.counts.codeExchanges).toBe(1);

    const state = await status('protected');
    expect(state).toMatchObject({ tool_count: 2, last_error: null, auth: { status: 'authorized', client: 'registered', last_error: null } });
    expect(Date.parse(state.auth.expires_at)).toBeGreaterThan(Date.now());

    const called = await call('whoami');
    expect(called.isError).toBeFalsy();
    const [registered] = upstream.seen.calls;
    expect(registered?.clientId).toMatch(/^[0-9a-f-]{36}$/);
    expect(text(called)).toContain(`client ${registered!.clientId}`);
    // The callback's state is single use: the same URL again is refused and changes nothing.
    const replay = await fetch(browser.url);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('unknown or expired authorization state');
    expect((await status('protected')).auth.status).toBe('authorized');
  });

  it('renews the access token before it expires: the server never sees an expired bearer', async () => {
    const refreshes = upstream.provider.counts.refreshes;
    const before = (await status('protected')).auth.expires_at;
    await sleep(ACCESS_SECONDS * 750 + 300);
    const called = await call('add_numbers', { a: 2, b: 3 });
    expect(called.isError).toBeFalsy();
    expect(text(called)).toContain('5');
    expect(upstream.provider.counts.refreshes).toBe(refreshes + 1);
    expect(upstream.seen.rejectedBearers).toBe(0);
    expect(Date.parse((await status('protected')).auth.expires_at)).toBeGreaterThan(Date.parse(before));
  });

  it('tokens and client secrets are stored sealed: the table holds none of them', async () => {
    const rows = await queryRows<Record<string, unknown>>(app.deps.catalog.db, sql`select * from upstream_oauth`);
    const pending = await queryRows<Record<string, unknown>>(app.deps.catalog.db, sql`select * from upstream_oauth_pending`);
    const dump = JSON.stringify([rows, pending]);
    const live = [...upstream.provider.refreshTokens.keys(), ...upstream.seen.calls.map((seen) => seen.clientId)];
    const accessTokens = [...(upstream.provider as unknown as { tokens: Map<string, unknown> }).tokens.keys()];
    expect(live.length + accessTokens.length).toBeGreaterThan(2);
    // A registered client's id is public; its secret, and every token, must not appear.
    // Nor encoded: base64 of the tokens JSON would carry each token's encoding at one of three alignments.
    const encodings = (value: string) => [
      value,
      ...[0, 1, 2].map((shift) =>
        Buffer.from(`${'x'.repeat(shift)}${value}`)
          .toString('base64')
          .slice(4 + shift, -4),
      ),
    ];
    for (const token of [...upstream.provider.refreshTokens.keys(), ...accessTokens]) for (const form of encodings(token)) expect(dump).not.toContain(form);
    const registered = await upstream.provider.clientsStore.getClient(upstream.seen.calls[0]!.clientId);
    expect(registered?.client_secret).toBeTruthy();
    expect(dump).not.toContain(registered!.client_secret!);
  });

  it('a revoked refresh token shows in the upstream status and metrics, never in the agent answer; authorizing again mends it', async () => {
    upstream.provider.revokeAll();
    await sleep(ACCESS_SECONDS * 1000 + 300);
    const called = await call('whoami');
    expect(called.isError).toBe(true);
    expect(text(called)).toContain('upstream \\"protected\\" is unavailable');
    expect(text(called)).not.toMatch(/invalid_grant|refresh|oauth|authoriz|token/i);
    expect(upstream.provider.counts.refreshRefused).toBeGreaterThan(0);

    const state = await status('protected');
    expect(state.auth).toMatchObject({ status: 'refresh_failed' });
    expect(state.auth.last_error).toContain('refused the refresh token (invalid_grant)');
    expect(state.last_error).toContain('oauth: the authorization server refused the refresh token');
    const metrics = await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-oauth-token-0123' } });
    expect(await metrics.text()).toMatch(/toolsift_upstream_oauth_total\{action="refresh",outcome="error"\} [1-9]/);

    const again = await authorizeInBrowser('protected');
    expect(again.status).toBe(200);
    expect((await status('protected')).auth).toMatchObject({ status: 'authorized', last_error: null });
    expect((await call('whoami')).isError).toBeFalsy();
  });

  it('client_credentials with a configured client: tokens without a browser, renewed before expiry; the secret never shown', async () => {
    await upstream.addClient({ client_id: 'machine', client_secret: 'machine-secret-value' });
    const machine = `/v1/catalogs/${catalog}-m/upstreams/machine`;
    const body = { url: upstream.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'machine', client_secret: 'machine-secret-value' } };
    const put = await app.request('PUT', machine, body, key);
    expect(put.status).toBe(200);
    expect(put.body.upstream).toMatchObject({
      tool_count: 2,
      last_error: null,
      auth: { grant: 'client_credentials', status: 'authorized', client: 'configured' },
    });
    expect(put.text).not.toContain('machine-secret-value');
    const grants = upstream.provider.counts.clientCredentials;
    expect(grants).toBeGreaterThan(0);
    const machineClient = new Client({ name: 'oauth-test-m', version: '1.0.0' });
    await machineClient.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}-m`), { requestInit: { headers: key } }));
    try {
      expect(text(await machineClient.callTool({ name: 'call_tool', arguments: { name: 'whoami', arguments: {} } }))).toContain('client machine');
      await sleep(ACCESS_SECONDS * 750 + 300);
      const renewed = await machineClient.callTool({ name: 'call_tool', arguments: { name: 'whoami', arguments: {} } });
      expect(text(renewed)).toContain('client machine');
    } finally {
      await machineClient.close();
    }
    expect(upstream.provider.counts.clientCredentials).toBe(grants + 1);
    expect(upstream.seen.rejectedBearers).toBe(0);
    // Registering again with the same settings keeps the token; only a changed setting forgets it.
    expect((await app.request('PUT', machine, body, key)).body.upstream.auth.status).toBe('authorized');
    expect(upstream.provider.counts.clientCredentials).toBe(grants + 1);
    const rows = await queryRows<Record<string, unknown>>(app.deps.catalog.db, sql`select * from upstream_oauth`);
    expect(JSON.stringify(rows)).not.toContain('machine-secret-value');
  });

  it('a wrong client secret is the status, in the gateway words', async () => {
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${catalog}-m/upstreams/wrong-secret`,
      { url: upstream.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'machine', client_secret: 'not-the-secret' } },
      key,
    );
    expect(put.status).toBe(200);
    expect(put.body.upstream.auth).toMatchObject({ status: 'authorization_required', last_error: 'the authorization server refused (invalid_client)' });
    expect(put.body.upstream.last_error).toBe('oauth: the authorization server refused (invalid_client)');
  });

  it('bad input: a clear 400 naming what was wrong, nothing stored', async () => {
    const cases: [unknown, string][] = [
      [{ url: upstream.url, auth: { type: 'oauth', client_secret: 'x' } }, 'client_secret needs client_id'],
      [{ url: upstream.url, auth: { type: 'oauth', grant: 'password' } }, 'auth.grant'],
      [{ url: upstream.url, auth: { type: 'basic' } }, 'auth.type'],
      [{ url: upstream.url, headers: { Authorization: 'Bearer x' }, auth: { type: 'oauth' } }, 'both set the bearer'],
      [{ url: upstream.url, auth: { type: 'oauth', scope: 'a  b' } }, 'auth.scope'],
      [{ url: upstream.url, auth: { type: 'oauth', issuer: 'http://auth.example.com' } }, 'auth.issuer: issuer is the authorization server'],
      [{ url: upstream.url, auth: { type: 'oauth', issuer: 'https://auth.example.com/?tenant=1' } }, 'auth.issuer'],
      [{ url: upstream.url, auth: { type: 'oauth', issuer: 'auth.example.com' } }, 'auth.issuer'],
      ...keyCases(upstream.url),
    ];
    for (const [body, message] of cases) {
      const put = await app.request('PUT', path('bad'), body, key);
      expect(put.status, JSON.stringify(body)).toBe(400);
      expect(put.body.error.message).toContain(message);
      expectNoKey(put.text, `the refusal of ${message}`);
    }
    expect((await app.request('GET', path('bad'), undefined, key)).status).toBe(404);
    expect((await app.request('POST', `/v1/catalogs/${catalog}-m/upstreams/machine/oauth/start`, {}, key)).body.error.message).toContain('client_credentials');
    expect((await app.request('POST', path('nothing-here', '/oauth/start'), {}, key)).status).toBe(404);
    expect((await app.request('POST', path('protected', '/oauth/start'), { extra: 1 }, key)).status).toBe(400);
    const bogus = await fetch(`${app.url}/oauth/callback?state=forged&code=x`);
    expect(bogus.status).toBe(400);
    expect(bogus.headers.get('content-security-policy')).toBe("default-src 'none'");
    expect(await bogus.text()).toContain('unknown or expired authorization state');
  });

  it('a denied authorization is the status; the authorization server text is not repeated', async () => {
    const started = await app.request('POST', path('protected', '/oauth/start'), {}, key);
    const state = new URL(started.body.authorization_url).searchParams.get('state')!;
    const denied = await fetch(`${app.url}/oauth/callback?state=${state}&error=access_denied&error_description=${encodeURIComponent('<script>x</script>')}`);
    expect(denied.status).toBe(400);
    const page = await denied.text();
    expect(page).toContain('not granted (access_denied)');
    expect(page).not.toContain('<script>');
    expect((await status('protected')).auth.last_error).toContain('not granted (access_denied)');
  });
});

/**
 * Two replicas over one database (two services, each with its own held tokens and renewals) whose
 * access token falls due at the same moment, against an authorization server that rotates refresh
 * tokens, refuses a spent one (invalid_grant) and takes its time answering (both renewals are sent
 * before either lands): one of them renews, the other uses what it got.
 */
describe('OAuth renewals across replicas', () => {
  let replicas: TestApp[] = [];
  let upstream: OAuthMcpServer;
  const agents: Client[] = [];
  const tenant = uniqueName('oauth-replica-tenant');
  const catalog = uniqueName('oauth-replicas');
  const key = { authorization: 'Bearer or1' };
  const path = (rest = '') => `/v1/catalogs/${catalog}/upstreams/rotating${rest}`;
  const add = (agent: Client, a: number) => agent.callTool({ name: 'call_tool', arguments: { name: 'add_numbers', arguments: { a, b: 1 } } });

  beforeAll(async () => {
    upstream = await startOAuthMcpServer();
    upstream.provider.accessSeconds = ACCESS_SECONDS;
    const env = { API_KEYS: `or1:${tenant}`, UPSTREAM_ALLOW: '127.0.0.1/32', UPSTREAM_CALL_TIMEOUT_MS: '5000', SECRETS_KEY };
    replicas = [await startTestApp(env), await startTestApp(env)];
    const [first] = replicas as [TestApp, TestApp];
    expect((await first.request('PUT', `/v1/catalogs/${catalog}`, { tools: [] }, key)).status).toBe(200);
    expect((await first.request('PUT', path(), { url: upstream.url, auth: { type: 'oauth' } }, key)).status).toBe(200);
    expect((await authorizeThroughBrowser(first, upstream, path('/oauth/start'), key)).status).toBe(200);
    for (const replica of replicas) {
      const agent = new Client({ name: 'oauth-replica', version: '1.0.0' });
      await agent.connect(new StreamableHTTPClientTransport(new URL(`${replica.url}/mcp/${catalog}`), { requestInit: { headers: key } }));
      agents.push(agent);
      // Each replica holds the token and a connection to the upstream.
      expect((await add(agent, 0)).isError).toBeFalsy();
    }
    upstream.provider.refreshDelayMs = 300;
  }, 60_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.close()));
    for (const replica of replicas) await replica.close();
    await upstream?.close();
  });

  it('renewing one rotating refresh token together: one refresh per rotation, never a spent token; both calls served, the status authorized', async () => {
    for (const round of [1, 2]) {
      await sleep(ACCESS_SECONDS * 750 + 300);
      const presented = upstream.provider.presentedRefreshTokens.length;
      const called = await Promise.all(agents.map((agent) => add(agent, round)));
      for (const result of called) {
        expect(result.isError, text(result)).toBeFalsy();
        expect(text(result)).toContain(String(round + 1));
      }
      expect(upstream.provider.presentedRefreshTokens.length - presented, `round ${round}`).toBe(1);
      expect(upstream.provider.counts, `round ${round}`).toMatchObject({ refreshes: round, refreshRefused: 0 });
    }
    // Each rotation's token presented once: the second round's is the one the first round got.
    const tokens = upstream.provider.presentedRefreshTokens;
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(upstream.seen.rejectedBearers).toBe(0);
    for (const replica of replicas) {
      const state = (await replica.request('GET', path(), undefined, key)).body.upstream;
      expect(state.auth).toMatchObject({ status: 'authorized', last_error: null });
      expect(state.last_error).toBeNull();
    }
  });

  it('a renewal lease left by a replica that died renewing holds renewals back only until it expires', async () => {
    await sleep(ACCESS_SECONDS * 750 + 300);
    const [first] = replicas as [TestApp, TestApp];
    await first.deps.catalog.db.execute(sql`update upstream_oauth set renewal_holder = 'died-renewing', renewal_lease_until = now() + interval '2 seconds'
      where upstream = 'rotating' and catalog_id = (select id from catalogs where tenant = ${tenant} and name = ${catalog})`);
    const refreshes = upstream.provider.counts.refreshes;
    const started = Date.now();
    const called = await add(agents[0]!, 5);
    expect(called.isError, text(called)).toBeFalsy();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(upstream.provider.counts).toMatchObject({ refreshes: refreshes + 1, refreshRefused: 0 });
    expect((await first.request('GET', path(), undefined, key)).body.upstream.auth.status).toBe('authorized');
  });

  it("an operator's authorization on one replica waits for a renewal under way on another (its lease), then stands", async () => {
    const [first, second] = replicas as [TestApp, TestApp];
    await first.deps.catalog.db.execute(sql`update upstream_oauth set renewal_holder = 'renewing-elsewhere', renewal_lease_until = now() + interval '2 seconds'
      where upstream = 'rotating' and catalog_id = (select id from catalogs where tenant = ${tenant} and name = ${catalog})`);
    const started = Date.now();
    expect((await authorizeThroughBrowser(second, upstream, path('/oauth/start'), key)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    const called = await add(agents[0]!, 7);
    expect(called.isError, text(called)).toBeFalsy();
    expect((await first.request('GET', path(), undefined, key)).body.upstream.auth).toMatchObject({ status: 'authorized', last_error: null });
  });
});

/** `value` sealed as oauth.ts seals an upstream's OAuth state: with its row and URL (what only one holding SECRETS_KEY can do). */
async function sealForRow(app: TestApp, catalog: string, upstream: string, value: unknown): Promise<string> {
  const [row] = await queryRows<{ tenant: string; catalogId: number; url: string }>(
    app.deps.catalog.db,
    sql`select c.tenant, u.catalog_id as "catalogId", u.url from mcp_upstreams u join catalogs c on c.id = u.catalog_id where c.name = ${catalog} and u.name = ${upstream}`,
  );
  return createSecretBox(SECRETS_KEY).seal(boundPlaintext({ tenant: row!.tenant, catalogId: row!.catalogId, upstream, url: row!.url }, JSON.stringify(value)));
}

/**
 * Registers upstream `name` in a catalog of its own (the fixture's tools would collide in one), and
 * an agent connected to that catalog (closed by the caller, from `agents`).
 */
async function registerWithAgent(
  at: { app: TestApp; key: Record<string, string>; url: string; agents: Client[]; prefix: string },
  name: string,
  auth: Record<string, unknown>,
) {
  const { app, key } = at;
  const catalog = uniqueName(at.prefix);
  const path = (rest = '') => `/v1/catalogs/${catalog}/upstreams/${name}${rest}`;
  const put = await app.request('PUT', path(), { url: at.url, auth }, key);
  expect(put.status).toBe(200);
  const agent = new Client({ name: `${at.prefix}-${name}`, version: '1.0.0' });
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: key } }));
  at.agents.push(agent);
  return {
    catalog,
    registered: put.body.upstream,
    answer: put.text,
    path,
    status: async () => (await app.request('GET', path(), undefined, key)).body.upstream,
    call: (tool: string, args: Record<string, unknown> = {}) => agent.callTool({ name: 'call_tool', arguments: { name: tool, arguments: args } }),
  };
}

describe('OAuth step-up on 403 insufficient_scope', () => {
  let app: TestApp;
  let upstream: OAuthMcpServer;
  const agents: Client[] = [];
  const key = { authorization: 'Bearer su1' };
  const machine = { type: 'oauth', grant: 'client_credentials', client_id: 'stepper', client_secret: 'stepper-secret-value' };
  /** What the server advertises (its protected-resource metadata): what a token is first asked for without a configured scope. */
  const ADVERTISED = 'mcp:tools';
  const asked = () => upstream.provider.clientCredentialScopes;
  const metric = async (outcome: string) => {
    const page = await (await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-stepup-token-0123' } })).text();
    return Number(new RegExp(`toolsift_upstream_oauth_total\\{action="step_up",outcome="${outcome}"\\} (\\d+)`).exec(page)?.[1] ?? 0);
  };

  const register = (name: string, auth: Record<string, unknown>) => registerWithAgent({ app, key, url: upstream.url, agents, prefix: 'stepup' }, name, auth);

  /** The agent's answer to a call that needed a scope it was not given: the generic one, nothing of the OAuth exchange. */
  const expectGenericFailure = (name: string, result: { isError?: unknown; content?: unknown }) => {
    expect(result.isError).toBe(true);
    expect(text(result)).toContain(`upstream \\"${name}\\" is unavailable`);
    expect(text(result)).not.toMatch(/scope|files:read|oauth|authoriz|token|403|stepper-secret/i);
  };

  beforeAll(async () => {
    upstream = await startOAuthMcpServer({ scopedTool: true });
    await upstream.addClient({ client_id: 'stepper', client_secret: 'stepper-secret-value' });
    app = await startTestApp({
      API_KEYS: `su1:${uniqueName('stepup-tenant')}`,
      UPSTREAM_ALLOW: '127.0.0.1/32',
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      SECRETS_KEY,
      METRICS_TOKEN: 'metrics-stepup-token-0123',
    });
  }, 60_000);

  afterAll(async () => {
    for (const agent of agents) await agent.close();
    await app?.close();
    await upstream?.close();
  });

  it('client_credentials without a configured scope: a token for the union scope, the call retried once and served; renewals keep the scope', async () => {
    const machineUpstream = await register('machine', machine);
    expect(machineUpstream.registered).toMatchObject({ tool_count: 3, auth: { status: 'authorized' } });
    expect(asked().at(-1)).toBe(ADVERTISED);
    const before = { asked: asked().length, refusals: upstream.seen.insufficientScope, stepUps: await metric('ok') };
    // Short-lived from here on: the renewal below is due within the test.
    upstream.provider.accessSeconds = 4;
    try {
      const called = await machineUpstream.call(SCOPED_TOOL, { path: 'notes.txt' });
      expect(called.isError).toBeFalsy();
      expect(text(called)).toContain('contents of notes.txt');
      expect(asked().slice(before.asked)).toEqual([`${ADVERTISED} ${TOOL_SCOPE}`]);
      expect(upstream.seen.insufficientScope).toBe(before.refusals + 1);
      expect(await metric('ok')).toBe(before.stepUps + 1);
      expect((await machineUpstream.status()).auth).toMatchObject({ status: 'authorized', last_error: null });

      // The renewal asks for what the step-up won: the next call is served with no 403 and no step-up.
      await sleep(4 * 750 + 300);
      expect(text(await machineUpstream.call(SCOPED_TOOL, { path: 'later.txt' }))).toContain('contents of later.txt');
      expect(asked().slice(before.asked)).toEqual([`${ADVERTISED} ${TOOL_SCOPE}`, `${ADVERTISED} ${TOOL_SCOPE}`]);
      expect(upstream.seen.insufficientScope).toBe(before.refusals + 1);
    } finally {
      upstream.provider.accessSeconds = 3600;
    }
  });

  it('a configured scope is the ceiling: a challenge beyond it is not asked for, the agent gets the generic error, the status names the scope', async () => {
    const configured = `${ADVERTISED} tickets:read`;
    const ceiling = await register('ceiling', { ...machine, scope: configured });
    // Asked as configured, not as the server advertises.
    expect(asked().at(-1)).toBe(configured);
    const before = asked().length;
    const refused = await ceiling.call(SCOPED_TOOL, { path: 'secret.txt' });
    expectGenericFailure('ceiling', refused);
    expect(asked().slice(before)).toEqual([]);
    const state = await ceiling.status();
    expect(state.auth.status).toBe('authorized');
    expect(state.auth.last_error).toBe(
      `the upstream asked for scope "${TOOL_SCOPE}" beyond the configured scope "${configured}": not requested (widen auth.scope to allow it)`,
    );
    expect(state.last_error).toBe(`oauth: ${state.auth.last_error}`);
    expect(await metric('error')).toBeGreaterThan(0);
    // The token still serves what it may.
    expect(text(await ceiling.call('whoami'))).toContain('client stepper');
    expect(asked().slice(before)).toEqual([]);
  });

  it('authorization_code: the grant cannot widen itself; the status asks an operator, and the next start asks for the union scope', async () => {
    const delegated = await register('delegated', { type: 'oauth' });
    const first = await authorizeThroughBrowser(app, upstream, delegated.path('/oauth/start'), key);
    expect(first.status).toBe(200);
    expect(first.authorizationUrl.searchParams.get('scope')).toBe(ADVERTISED);
    const exchanges = upstream.provider.counts.codeExchanges;

    const refused = await delegated.call(SCOPED_TOOL, { path: 'plan.md' });
    expectGenericFailure('delegated', refused);
    expect(upstream.provider.counts.codeExchanges).toBe(exchanges);
    const state = await delegated.status();
    expect(state.auth.status).toBe('authorization_required');
    expect(state.auth.last_error).toBe(
      `the upstream asked for scope "${TOOL_SCOPE}", which the authorization does not grant: an operator authorizes it again with POST /v1/catalogs/{catalog}/upstreams/{name}/oauth/start (the next start asks for it)`,
    );
    // The token still serves the other tools.
    expect((await delegated.call('whoami')).isError).toBeFalsy();

    const again = await authorizeThroughBrowser(app, upstream, delegated.path('/oauth/start'), key);
    expect(again.authorizationUrl.searchParams.get('scope')).toBe(`${ADVERTISED} ${TOOL_SCOPE}`);
    expect(again.status).toBe(200);
    expect((await delegated.status()).auth).toMatchObject({ status: 'authorized', last_error: null });
    expect(text(await delegated.call(SCOPED_TOOL, { path: 'plan.md' }))).toContain('contents of plan.md');
  });

  it('a step-up the authorization server refuses leaves the token serving the other calls, and renewals asking what they did', async () => {
    const limited = await register('limited', machine);
    upstream.provider.refusedScopes.add(TOOL_SCOPE);
    try {
      const before = asked().length;
      expectGenericFailure('limited', await limited.call(SCOPED_TOOL, { path: 'x' }));
      expect(asked().slice(before)).toEqual([`${ADVERTISED} ${TOOL_SCOPE}`]);
      expect((await limited.status()).auth).toMatchObject({
        status: 'authorized',
        last_error: `the step-up to scope "${ADVERTISED} ${TOOL_SCOPE}" failed: the authorization server refused (invalid_scope)`,
      });
      expect(text(await limited.call('whoami'))).toContain('client stepper');
      // Not kept for renewals: each would be refused, and the upstream left with no token at all.
      const [kept] = await queryRows<{ scope: string | null }>(
        app.deps.catalog.db,
        sql`select o.step_up_scope as scope from upstream_oauth o join catalogs c on c.id = o.catalog_id where c.name = ${limited.catalog} and o.upstream = 'limited'`,
      );
      expect(kept).toEqual({ scope: null });
    } finally {
      upstream.provider.refusedScopes.clear();
    }
  });

  it('an upstream that answers 403 insufficient_scope after the step-up is not asked again: one step-up per request', async () => {
    const stubborn = await register('stubborn', machine);
    upstream.scoped.stubborn = true;
    try {
      const before = { asked: asked().length, refusals: upstream.seen.insufficientScope };
      expectGenericFailure('stubborn', await stubborn.call(SCOPED_TOOL, { path: 'x' }));
      // The first answer, then the one retry with the stepped-up token.
      expect(upstream.seen.insufficientScope).toBe(before.refusals + 2);
      expect(asked().slice(before.asked)).toEqual([`${ADVERTISED} ${TOOL_SCOPE}`]);
      expect((await stubborn.status()).auth.last_error).toBe(
        'the upstream answered 403 insufficient_scope again after the step-up: the request was not retried again',
      );

      // The token holds the scope now: the next refusal asks the authorization server for nothing.
      expectGenericFailure('stubborn', await stubborn.call(SCOPED_TOOL, { path: 'y' }));
      expect(upstream.seen.insufficientScope).toBe(before.refusals + 3);
      expect(asked().length).toBe(before.asked + 1);
      expect((await stubborn.status()).auth).toMatchObject({
        status: 'authorized',
        last_error: `the upstream answered 403 insufficient_scope for scope "${TOOL_SCOPE}", which its token holds: not requested again`,
      });
    } finally {
      upstream.scoped.stubborn = false;
    }
  });
});

/** A listener that counts what reaches it: an internal service OAuth metadata must not make toolsift call. */
async function internalService(host: string): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A hostile MCP server on 127.0.0.2 (opened by UPSTREAM_ALLOW) whose 401 and metadata point toolsift
 * at other addresses: every OAuth request goes through the guarded fetch, so none is reached.
 */
async function hostileAuthServer(host: string, point: { resourceMetadata?: string; authorizationServer?: string }) {
  const server = http.createServer((req, res) => {
    const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
    if (req.url?.startsWith('/.well-known/oauth-protected-resource')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: [point.authorizationServer ?? origin] }));
      return;
    }
    if (req.url === '/mcp') {
      const metadata = point.resourceMetadata ?? `${origin}/.well-known/oauth-protected-resource/mcp`;
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${metadata}"` }).end();
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('OAuth metadata pointing at internal addresses', () => {
  let app: TestApp;
  let internal: Awaited<ReturnType<typeof internalService>>;
  const closing: (() => Promise<void>)[] = [];
  const catalog = uniqueName('oauth-ssrf');
  const key = { authorization: 'Bearer os1' };

  beforeAll(async () => {
    internal = await internalService('127.0.0.1');
    // Only the hostile server's address is opened; 127.0.0.1 and 169.254.169.254 stay refused.
    app = await startTestApp({ API_KEYS: `os1:${uniqueName('oauth-ssrf-tenant')}`, UPSTREAM_ALLOW: '127.0.0.2/32', SECRETS_KEY });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    for (const close of closing) await close();
    await internal?.close();
  });

  const cases: [string, () => { resourceMetadata?: string; authorizationServer?: string }, string][] = [
    ['the 401 names protected-resource metadata on loopback', () => ({ resourceMetadata: `${internal.url}/.well-known/oauth-protected-resource` }), 'loopback'],
    [
      'the 401 names protected-resource metadata at the cloud metadata address',
      () => ({ resourceMetadata: 'http://169.254.169.254/latest/meta-data/' }),
      'link-local',
    ],
    ['the protected-resource metadata names an authorization server on loopback', () => ({ authorizationServer: `${internal.url}/` }), 'loopback'],
    [
      'the protected-resource metadata names the cloud metadata address as authorization server',
      () => ({ authorizationServer: 'http://169.254.169.254/' }),
      'link-local',
    ],
  ];

  for (const [title, point, reason] of cases) {
    it(`refuses when ${title}`, async () => {
      const hostile = await hostileAuthServer('127.0.0.2', point());
      closing.push(hostile.close);
      const name = `hostile-${reason}-${closing.length}`;
      const put = await app.request(
        'PUT',
        `/v1/catalogs/${catalog}/upstreams/${name}`,
        { url: hostile.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'c', client_secret: 'client-secret-value' } },
        key,
      );
      expect(put.status).toBe(200);
      expect(put.body.upstream.auth.last_error).toContain(`refused by policy (${reason})`);
      expect(put.body.upstream.last_error).toContain(`refused by policy (${reason})`);
      expect(internal.hits()).toBe(0);
    });
  }

  it("answers a metadata name that resolves inside as one that does not resolve (the tenant does not learn the inside's names)", async () => {
    const errors: string[] = [];
    for (const [index, host] of [hostname(), 'no-such-name.invalid'].entries()) {
      const hostile = await hostileAuthServer('127.0.0.2', { authorizationServer: `http://${host}:${new URL(internal.url).port}/` });
      closing.push(hostile.close);
      const put = await app.request(
        'PUT',
        `/v1/catalogs/${catalog}/upstreams/named-${index}`,
        { url: hostile.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'c', client_secret: 'client-secret-value' } },
        key,
      );
      expect(put.status).toBe(200);
      errors.push(`${put.body.upstream.auth.last_error} | ${put.body.upstream.last_error}`);
    }
    expect(errors[0]).not.toContain('refused');
    expect(errors[0]).toBe(errors[1]);
    expect(internal.hits()).toBe(0);
  });

  it('refuses the operator start the same way', async () => {
    const hostile = await hostileAuthServer('127.0.0.2', { authorizationServer: `${internal.url}/` });
    closing.push(hostile.close);
    expect((await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/start-hostile`, { url: hostile.url, auth: { type: 'oauth' } }, key)).status).toBe(200);
    const started = await app.request('POST', `/v1/catalogs/${catalog}/upstreams/start-hostile/oauth/start`, {}, key);
    expect(started.status).toBe(502);
    expect(started.body.error.message).toContain('refused by policy (loopback)');
    expect(internal.hits()).toBe(0);
  });
});

describe('OAuth: the authorization server an operator names (auth.issuer)', () => {
  let app: TestApp;
  let upstream: OAuthMcpServer;
  let impostor: ImpostorAuthServer;
  const agents: Client[] = [];
  const key = { authorization: 'Bearer is1' };
  const tenant = uniqueName('issuer-tenant');
  const SECRET = 'named-client-secret-value';
  const machine = (settings: Record<string, unknown> = {}) => ({
    type: 'oauth',
    grant: 'client_credentials',
    client_id: 'named',
    client_secret: SECRET,
    ...settings,
  });
  const register = (name: string, auth: Record<string, unknown>) => registerWithAgent({ app, key, url: upstream.url, agents, prefix: 'issuer' }, name, auth);
  const tokenErrors = async () => {
    const page = await (await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-issuer-token-0123' } })).text();
    return Number(/toolsift_upstream_oauth_total\{action="token",outcome="error"\} (\d+)/.exec(page)?.[1] ?? 0);
  };

  beforeAll(async () => {
    upstream = await startOAuthMcpServer();
    await upstream.addClient({ client_id: 'named', client_secret: SECRET });
    // Both on loopback, which UPSTREAM_ALLOW opens: the address policy lets the impostor be reached, so only auth.issuer keeps it out.
    impostor = await startImpostorAuthServer();
    app = await startTestApp({
      API_KEYS: `is1:${tenant}`,
      UPSTREAM_ALLOW: '127.0.0.1/32',
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      SECRETS_KEY,
      METRICS_TOKEN: 'metrics-issuer-token-0123',
    });
  }, 60_000);

  afterEach(() => {
    upstream.advertise(undefined);
    impostor.requests.length = 0;
    impostor.metadataIssuer = impostor.issuer;
  });

  afterAll(async () => {
    for (const agent of agents) await agent.close();
    await app?.close();
    await impostor?.close();
    await upstream?.close();
  });

  it("without issuer the upstream's metadata decides: the configured secret goes to the server it names on first use (why issuer exists)", async () => {
    upstream.advertise([impostor.issuer]);
    const unnamed = await register('unnamed', machine());
    expect(unnamed.registered.auth).toMatchObject({ status: 'authorization_required', last_error: 'the authorization server refused (invalid_client)' });
    const tokenRequests = impostor.requests.filter((request) => request.method === 'POST' && request.path === '/token');
    expect(tokenRequests.length).toBeGreaterThan(0);
    // client_secret_basic: the id and secret in the Authorization header.
    expect(Buffer.from(tokenRequests[0]!.authorization.replace(/^Basic /, ''), 'base64').toString()).toBe(`named:${SECRET}`);
  });

  it('with issuer, metadata naming another authorization server is refused before anything is sent to it; the agent gets the generic error', async () => {
    const named = await register('named', machine({ issuer: upstream.issuer }));
    expect(named.registered).toMatchObject({ tool_count: 2, auth: { status: 'authorized', client: 'configured' } });
    // The upstream names another server from now on: the discovery stored keeps toolsift at the one named.
    upstream.advertise([impostor.issuer]);
    expect(text(await named.call('whoami'))).toContain('client named');

    // Registered again (another scope): discovery anew, and the metadata is refused before anything is sent.
    const grants = upstream.provider.counts.clientCredentials;
    const errors = await tokenErrors();
    const again = await app.request('PUT', named.path(), { url: upstream.url, auth: machine({ issuer: upstream.issuer, scope: 'mcp:tools' }) }, key);
    const why = `the upstream's metadata names authorization server ${impostor.issuer}, not the configured issuer ${upstream.issuer}`;
    expect(again.body.upstream).toMatchObject({ tool_count: 2, last_error: `oauth: ${why}`, auth: { status: 'authorization_required', last_error: why } });
    // Not even its metadata is asked: discovery starts from the issuer named.
    expect(impostor.requests).toEqual([]);
    expect(upstream.provider.counts.clientCredentials).toBe(grants);
    expect(await tokenErrors()).toBeGreaterThan(errors);

    const refused = await named.call('whoami');
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('upstream \\"named\\" is unavailable');
    expect(text(refused)).not.toMatch(/127\.0\.0\.1|issuer|authoriz|oauth|token|secret/i);
    expect(impostor.requests).toEqual([]);

    // The refused discovery was not kept: once the metadata names the issuer again, tokens come from it.
    upstream.advertise(undefined);
    expect(text(await named.call('whoami'))).toContain('client named');
    expect((await named.status()).auth).toMatchObject({ status: 'authorized', client: 'configured', last_error: null });
    expect(upstream.provider.counts.clientCredentials).toBe(grants + 1);
  });

  it("an operator's start is refused the same way: the browser is never sent to the server the upstream names", async () => {
    upstream.advertise([impostor.issuer]);
    const delegated = await register('delegated', { type: 'oauth', issuer: upstream.issuer });
    expect(delegated.registered.auth.status).toBe('authorization_required');
    const refused = await app.request('POST', delegated.path('/oauth/start'), {}, key);
    expect(refused.status).toBe(502);
    expect(refused.body.error.message).toContain(`names authorization server ${impostor.issuer}, not the configured issuer ${upstream.issuer}`);
    expect(impostor.requests).toEqual([]);
    upstream.advertise(undefined);
    const started = await app.request('POST', delegated.path('/oauth/start'), {}, key);
    expect(started.status).toBe(200);
    expect(new URL(started.body.authorization_url).origin).toBe(upstream.origin);
  });

  it('metadata naming several authorization servers, the configured one among them: only that one is asked', async () => {
    // Without issuer the SDK takes the first named.
    upstream.advertise([impostor.issuer, upstream.issuer]);
    const chosen = await register('chosen', machine({ issuer: upstream.issuer }));
    expect(chosen.registered).toMatchObject({ tool_count: 2, auth: { status: 'authorized', last_error: null } });
    expect(text(await chosen.call('whoami'))).toContain('client named');
    expect(impostor.requests).toEqual([]);
  });

  it("the issuer's own metadata must name it (RFC 8414): metadata naming another issuer is refused, and no credential sent", async () => {
    // An issuer the operator named whose metadata claims to be another server (whose assertions' audience it would get).
    impostor.metadataIssuer = upstream.issuer;
    upstream.advertise([impostor.issuer]);
    const mismatched = await register('mismatched', machine({ issuer: impostor.issuer }));
    expect(mismatched.registered.auth).toMatchObject({
      status: 'authorization_required',
      last_error: 'the authorization server metadata does not match its issuer',
    });
    expect(impostor.requests.length).toBeGreaterThan(0);
    expect(impostor.requests.filter((request) => request.method !== 'GET')).toEqual([]);
  });

  it('a stored discovery naming another server (sealed for the row, as if discovered so) is refused at the last gate before a credential is sent', async () => {
    const stored = await register('stored', machine({ issuer: upstream.issuer }));
    expect(stored.registered.auth.status).toBe('authorized');
    const discovery = {
      authorizationServerUrl: impostor.issuer,
      authorizationServerMetadata: {
        issuer: impostor.issuer,
        authorization_endpoint: `${impostor.issuer}authorize`,
        token_endpoint: `${impostor.issuer}token`,
        response_types_supported: ['code'],
      },
    };
    // Without SECRETS_KEY a database writer cannot seal one (the next tests): this is the gate behind that.
    const sealed = await sealForRow(app, stored.catalog, 'stored', discovery);
    await app.deps.catalog.db.execute(
      sql`update upstream_oauth o set discovery_sealed = ${sealed}, tokens = null from catalogs c
          where c.id = o.catalog_id and c.name = ${stored.catalog} and o.upstream = 'stored'`,
    );
    // The same registration again keeps the (altered) discovery; the sync needs a token.
    const again = await app.request('PUT', stored.path(), { url: upstream.url, auth: machine({ issuer: upstream.issuer }) }, key);
    expect(again.body.upstream.auth).toMatchObject({
      status: 'authorization_required',
      last_error: `the authorization server in use is ${impostor.issuer}, not the configured issuer ${upstream.issuer}`,
    });
    expect(impostor.requests).toEqual([]);
  });

  /**
   * A database writer without SECRETS_KEY who points the upstream's OAuth at their own server: the
   * issuer column set to it (`impostor`) or cleared (null), the plaintext discovery column an
   * earlier release read pointing there, the tokens gone; once the token held runs out a new one is
   * needed. The client secret was sealed with the issuer registered: nothing is sent to any
   * authorization server, the sync and the OAuth state say why.
   */
  for (const [label, moved] of [
    ['changed to another server', 'impostor'],
    ['cleared', null],
  ] as const) {
    it(`an issuer ${label} in the database (the secret sealed with the registered one): refused, no request to any authorization server`, async () => {
      const name = `moved-${moved ?? 'cleared'}`;
      upstream.provider.accessSeconds = 1;
      const registered = await register(name, machine({ issuer: upstream.issuer })).finally(() => {
        upstream.provider.accessSeconds = 3600;
      });
      expect(registered.registered.auth).toMatchObject({ status: 'authorized', client: 'configured' });
      const discovery = {
        authorizationServerUrl: impostor.issuer,
        resourceMetadata: { resource: upstream.url, authorization_servers: [impostor.issuer] },
        authorizationServerMetadata: {
          issuer: impostor.issuer,
          authorization_endpoint: `${impostor.issuer}authorize`,
          token_endpoint: `${impostor.issuer}token`,
          response_types_supported: ['code'],
        },
      };
      await app.deps.database.db.execute(
        sql`update upstream_oauth o set issuer = ${moved === null ? null : impostor.issuer}, discovery = ${JSON.stringify(discovery)}::json, tokens = null
            from catalogs c where c.id = o.catalog_id and c.name = ${registered.catalog} and o.upstream = ${name}`,
      );
      const grants = upstream.provider.counts.clientCredentials;
      await sleep(1_100);

      const synced = await app.deps.upstreams.sync(tenant, registered.catalog, name);
      // Without the binding the secret went to the impostor's token endpoint here.
      expect(impostor.requests.filter((request) => request.path === '/token')).toEqual([]);
      const why =
        moved === null
          ? /was sealed for another issuer than the upstream's auth\.issuer \(cleared since\): nothing was sent/
          : /was sealed for another issuer than the upstream's auth\.issuer: nothing was sent/;
      expect(synced.last_error).toMatch(/^credentials: auth\.client_secret was sealed for another issuer/);
      expect(synced.last_error).toMatch(why);
      expect(synced.last_error).toContain("register the upstream's auth again");
      expect(synced.tool_count).toBe(2);
      expect(synced.last_error).not.toContain(SECRET);
      const status = await registered.status();
      expect(status.auth).toMatchObject({ status: 'authorization_required', last_error: synced.last_error });
      const refused = await registered.call('whoami');
      expect(refused.isError).toBe(true);
      expect(text(refused)).not.toContain(SECRET);
      // Not a token request, not even a metadata read: neither server was asked anything.
      expect(impostor.requests).toEqual([]);
      expect(upstream.provider.counts.clientCredentials).toBe(grants);

      // Registering the auth again seals the secret with the issuer given: tokens from it, calls served.
      const again = await app.request('PUT', registered.path(), { url: upstream.url, auth: machine({ issuer: upstream.issuer }) }, key);
      expect(again.body.upstream).toMatchObject({ last_error: null, auth: { status: 'authorized', last_error: null } });
      expect(text(await registered.call('whoami'))).toContain('client named');
      expect(impostor.requests).toEqual([]);
    });
  }

  /** The access token an upstream's row holds, opened as only SECRETS_KEY can. */
  const heldToken = async (catalog: string, name: string) => {
    const [row] = await queryRows<{ tokens: string | null }>(
      app.deps.catalog.db,
      sql`select o.tokens from upstream_oauth o join catalogs c on c.id = o.catalog_id where c.name = ${catalog} and o.upstream = ${name}`,
    );
    if (!row?.tokens) return null;
    return (JSON.parse(readBound(createSecretBox(SECRETS_KEY).open(row.tokens))!.value) as { access_token: string }).access_token;
  };
  const stateErrors = async () => {
    const page = await (await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer metrics-issuer-token-0123' } })).text();
    return Number(/toolsift_upstream_oauth_total\{action="state",outcome="error"\} (\d+)/.exec(page)?.[1] ?? 0);
  };
  const bearersTo = (server: ImpostorAuthServer, token: string) => server.requests.filter((request) => request.authorization === `Bearer ${token}`);

  /**
   * A database writer without SECRETS_KEY copies one upstream's sealed tokens into the OAuth row of
   * an upstream of their own (the impostor, posing as an MCP server): the tokens were sealed with
   * the row and URL they were got for, so the other row forgets them and its server never sees them.
   */
  it("tokens copied into another upstream's row (the database altered) are forgotten there: its server never gets the bearer", async () => {
    const owner = await register('tokens-owner', machine({ issuer: upstream.issuer }));
    expect(owner.registered.auth.status).toBe('authorized');
    const token = await heldToken(owner.catalog, 'tokens-owner');
    expect(token).toMatch(/.{16,}/);
    const thiefCatalog = uniqueName('issuer-thief');
    const thief = await app.request(
      'PUT',
      `/v1/catalogs/${thiefCatalog}/upstreams/tokens-thief`,
      { url: `${impostor.issuer}mcp`, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'thief', client_secret: 'thief-secret' } },
      key,
    );
    expect(thief.status).toBe(200);
    expect(thief.body.upstream.auth.status).toBe('authorization_required');
    await app.deps.catalog.db.execute(
      sql`update upstream_oauth t set tokens = o.tokens, issued_at = now(), expires_at = now() + interval '1 hour', status = 'authorized'
          from upstream_oauth o join catalogs oc on oc.id = o.catalog_id, catalogs tc
          where oc.name = ${owner.catalog} and o.upstream = 'tokens-owner' and tc.id = t.catalog_id and tc.name = ${thiefCatalog} and t.upstream = 'tokens-thief'`,
    );
    const refusedBefore = await stateErrors();
    impostor.requests.length = 0;

    const synced = await app.deps.upstreams.sync(tenant, thiefCatalog, 'tokens-thief');
    expect(synced.last_error).not.toBeNull();
    // Without the binding the impostor received the owner's bearer here.
    expect(bearersTo(impostor, token!)).toEqual([]);
    expect(await heldToken(thiefCatalog, 'tokens-thief')).toBeNull();
    expect(await stateErrors()).toBe(refusedBefore + 1);
    // The owner's own row still holds and uses them.
    expect(text(await owner.call('whoami'))).toContain('client named');
    expect(await heldToken(owner.catalog, 'tokens-owner')).toBe(token);
  });

  /**
   * A database writer without SECRETS_KEY changes an upstream's URL to a server of their own (the
   * impostor, which serves authorization server metadata naming itself): the access token got for
   * the old URL (held in memory, and stored) is not sent there, nor is the client secret, with an
   * issuer configured or without one (then the new URL's metadata would name where it goes).
   */
  for (const issuer of [true, false]) {
    it(`an upstream's URL changed in the database (${issuer ? 'issuer configured' : 'no issuer'}): neither the token got for the old URL nor the client secret goes to the new one`, async () => {
      const name = `url-moved-${issuer ? 'issuer' : 'none'}`;
      const moved = await register(name, machine(issuer ? { issuer: upstream.issuer } : {}));
      expect(text(await moved.call('whoami'))).toContain('client named');
      const token = await heldToken(moved.catalog, name);
      expect(token).toMatch(/.{16,}/);
      await app.deps.catalog.db.execute(
        sql`update mcp_upstreams u set url = ${`${impostor.issuer}mcp`} from catalogs c where c.id = u.catalog_id and c.name = ${moved.catalog} and u.name = ${name}`,
      );
      impostor.requests.length = 0;

      const synced = await app.deps.upstreams.sync(tenant, moved.catalog, name);
      // Without the binding the impostor received the held bearer here (from memory, and from the store),
      // and without an issuer the client secret at its token endpoint.
      expect(bearersTo(impostor, token!)).toEqual([]);
      expect(impostor.requests.filter((request) => request.body.includes(SECRET) || request.authorization.startsWith('Basic'))).toEqual([]);
      expect(synced.last_error).toMatch(/^credentials: auth\.client_secret was sealed for another URL than the upstream's: nothing was sent/);
      expect(await heldToken(moved.catalog, name)).toBeNull();
      expect((await moved.status()).auth).toMatchObject({ status: 'authorization_required' });
    });
  }
});

/**
 * Client secrets an earlier release stored alone (sealed, or plaintext before SECRETS_KEY): the
 * next start binds each to the issuer and upstream its row names, and they keep working. Over a
 * store of its own: the start binds every row of the store it opens.
 */
describe(`OAuth client secrets an earlier release stored without their issuer (${storeKind()})`, () => {
  let scratch: ScratchDatabase;
  let upstream: OAuthMcpServer;
  let app: TestApp | undefined;
  const box = createSecretBox(SECRETS_KEY);
  const tenant = uniqueName('legacy-tenant');
  const key = { authorization: 'Bearer lg1' };
  /** Each upstream in a catalog of its own (they list the same tools). */
  const catalog = (name: string) => `legacy-${name}`;
  const SECRET = 'legacy-client-secret-value';
  const start = () => startTestApp({ API_KEYS: `lg1:${tenant}`, UPSTREAM_ALLOW: '127.0.0.1/32', SECRETS_KEY }, { database: scratch.database });
  const stored = async (name: string) =>
    (
      await queryRows<{ clientSecret: string; issuer: string | null; catalogId: number }>(
        scratch.database.db,
        sql`select client_secret as "clientSecret", issuer, catalog_id as "catalogId" from upstream_oauth where upstream = ${name}`,
      )
    )[0]!;

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'oauthlegacy');
    upstream = await startOAuthMcpServer();
    await upstream.addClient({ client_id: 'legacy', client_secret: SECRET });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await scratch?.drop();
    await upstream?.close();
  });

  it('a sealed secret and a plaintext one are bound to their issuer at the next start, once, and still used', async () => {
    app = await start();
    for (const [name, issuer] of [
      ['sealed-alone', upstream.issuer],
      ['plaintext', undefined],
      ['without-url', upstream.issuer],
    ] as const) {
      const put = await app.request(
        'PUT',
        `/v1/catalogs/${catalog(name)}/upstreams/${name}`,
        { url: upstream.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'legacy', client_secret: SECRET, ...(issuer ? { issuer } : {}) } },
        key,
      );
      expect(put.body.upstream).toMatchObject({ last_error: null, auth: { status: 'authorized' } });
    }
    await app.close();
    app = undefined;
    // What an earlier release wrote: the secret sealed alone, or not sealed at all; no tokens, so the next use needs the secret.
    await scratch.database.db.execute(
      sql`update upstream_oauth set client_secret = ${box.seal(SECRET)}, tokens = null, client = null where upstream = 'sealed-alone'`,
    );
    await scratch.database.db.execute(sql`update upstream_oauth set client_secret = ${SECRET}, tokens = null, client = null where upstream = 'plaintext'`);
    // Sealed with its issuer, catalog and upstream, not its tenant and URL (the release of 2026-12-07).
    const withoutUrl = await stored('without-url');
    await scratch.database.db.execute(
      sql`update upstream_oauth set client_secret = ${box.seal(JSON.stringify([upstream.issuer, withoutUrl.catalogId, 'without-url', SECRET]))},
          tokens = null, client = null where upstream = 'without-url'`,
    );

    app = await start();
    for (const name of ['sealed-alone', 'plaintext', 'without-url']) {
      const row = await stored(name);
      expect(row.clientSecret).toMatch(/^ts1:/);
      // The format oauth.ts opens: [issuer (null: none configured), tenant, catalog id, upstream, URL, value].
      expect(JSON.parse(box.open(row.clientSecret))).toEqual([row.issuer, tenant, row.catalogId, name, upstream.url, SECRET]);
    }
    expect((await stored('sealed-alone')).issuer).toBe(upstream.issuer);
    expect((await stored('plaintext')).issuer).toBeNull();
    const grants = upstream.provider.counts.clientCredentials;
    for (const name of ['sealed-alone', 'plaintext', 'without-url']) {
      const synced = await app.deps.upstreams.sync(tenant, catalog(name), name);
      expect(synced).toMatchObject({ last_error: null, tool_count: 2, auth: { status: 'authorized' } });
    }
    expect(upstream.provider.counts.clientCredentials).toBe(grants + 3);

    // Bound values are not bound again: another start finds nothing to do, and the secrets open as they did.
    const names = ['sealed-alone', 'plaintext', 'without-url'];
    const before = await Promise.all(names.map(stored));
    expect(await sealStoredSecrets(scratch.database.db, box)).toEqual({ sealed: 0, resealed: 0, unreadable: 0 });
    await app.close();
    app = await start();
    expect(await Promise.all(names.map(stored))).toEqual(before);
  }, 60_000);

  it('tokens an earlier release sealed alone, with its plaintext discovery dropped (migration 0027): bound to their row and URL at the next start, used without a new grant', async () => {
    app ??= await start();
    const name = 'tokens-alone';
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${catalog(name)}/upstreams/${name}`,
      { url: upstream.url, auth: { type: 'oauth', grant: 'client_credentials', client_id: 'legacy', client_secret: SECRET } },
      key,
    );
    expect(put.body.upstream).toMatchObject({ last_error: null, auth: { status: 'authorized' } });
    await app.close();
    app = undefined;
    const [row] = await queryRows<{ tokens: string; catalogId: number }>(
      scratch.database.db,
      sql`select tokens, catalog_id as "catalogId" from upstream_oauth where upstream = ${name}`,
    );
    const value = readBound(box.open(row!.tokens))!.value;
    // What an earlier release wrote: the tokens sealed alone; its discovery (plaintext) the migration dropped.
    await scratch.database.db.execute(sql`update upstream_oauth set tokens = ${box.seal(value)}, discovery_sealed = null where upstream = ${name}`);

    app = await start();
    const [bound] = await queryRows<{ tokens: string }>(scratch.database.db, sql`select tokens from upstream_oauth where upstream = ${name}`);
    expect(JSON.parse(box.open(bound!.tokens))).toEqual([tenant, row!.catalogId, name, upstream.url, value]);
    const grants = upstream.provider.counts.clientCredentials;
    const synced = await app.deps.upstreams.sync(tenant, catalog(name), name);
    expect(synced).toMatchObject({ last_error: null, tool_count: 2, auth: { status: 'authorized', last_error: null } });
    expect(upstream.provider.counts.clientCredentials).toBe(grants);
  }, 60_000);
});

describe('OAuth private_key_jwt (RFC 7523)', () => {
  let app: TestApp;
  let upstream: OAuthMcpServer;
  const agents: Client[] = [];
  const logged: string[] = [];
  const answers: string[] = [];
  const key = { authorization: 'Bearer pk1' };
  const signer = (settings: Record<string, unknown>) => ({ type: 'oauth', grant: 'client_credentials', client_id: 'signer', ...settings });
  const register = async (name: string, auth: Record<string, unknown>) => {
    const registered = await registerWithAgent({ app, key, url: upstream.url, agents, prefix: 'pkjwt' }, name, auth);
    answers.push(registered.answer);
    return registered;
  };

  beforeAll(async () => {
    upstream = await startOAuthMcpServer();
    await upstream.addKeyClient({ client_id: 'signer', public_key: RSA_KEY.publicKey });
    await upstream.addKeyClient({ client_id: 'signer-ec', public_key: EC_KEY.publicKey });
    // Every log line, the audit's among them, at every level: the key must be in none.
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logged.push(String(chunk));
        done();
      },
    });
    app = await startTestApp(
      { API_KEYS: `pk1:${uniqueName('pkjwt-tenant')}`, UPSTREAM_ALLOW: '127.0.0.1/32', UPSTREAM_CALL_TIMEOUT_MS: '5000', SECRETS_KEY },
      { logger: pino({ level: 'trace' }, sink) },
    );
  }, 60_000);

  afterAll(async () => {
    for (const agent of agents) await agent.close();
    await app?.close();
    await upstream?.close();
  });

  it('a configured client with an RSA key: signed assertions for tokens, a tool called through the MCP endpoint', async () => {
    const body = signer({ private_key: RSA_PEM, issuer: upstream.issuer });
    const rsa = await register('rsa', body);
    expect(rsa.registered).toMatchObject({ tool_count: 2, last_error: null, auth: { status: 'authorized', client: 'configured', last_error: null } });
    expect(text(await rsa.call('whoami'))).toContain('client signer');

    const [first] = upstream.assertions.verified;
    expect(first!.header).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    expect(first!.claims).toMatchObject({ iss: 'signer', sub: 'signer', aud: upstream.issuer });
    // Short-lived: the SDK's five minutes.
    expect(Number(first!.claims.exp) - Number(first!.claims.iat)).toBe(300);
    expect(first!.params.sort()).toEqual(['client_assertion', 'client_assertion_type', 'client_id', 'grant_type', 'resource', 'scope']);

    // The same registration keeps the token; another key is another client and asks again.
    const verified = upstream.assertions.verified.length;
    expect((await app.request('PUT', rsa.path(), { url: upstream.url, auth: body }, key)).body.upstream.auth.status).toBe('authorized');
    expect(upstream.assertions.verified.length).toBe(verified);
    const rekeyed = await app.request('PUT', rsa.path(), { url: upstream.url, auth: { ...body, private_key: UNKNOWN_RSA_PEM } }, key);
    answers.push(rekeyed.text);
    expect(rekeyed.body.upstream.auth.status).toBe('authorization_required');
  });

  it('an EC key signs with ES256 unless told otherwise', async () => {
    const ec = await register('ec', signer({ client_id: 'signer-ec', private_key: EC_PEM }));
    expect(ec.registered.auth).toMatchObject({ status: 'authorized', client: 'configured' });
    expect(upstream.assertions.verified.at(-1)!.header.alg).toBe('ES256');
    expect(text(await ec.call('whoami'))).toContain('client signer-ec');
  });

  it('a key the authorization server does not know is refused (invalid_client), in the gateway words; the agent gets the generic error', async () => {
    const refusedBefore = upstream.assertions.refused.length;
    const wrong = await register('wrong', signer({ private_key: UNKNOWN_RSA_PEM, algorithm: 'PS256' }));
    expect(wrong.registered.auth).toMatchObject({ status: 'authorization_required', last_error: 'the authorization server refused (invalid_client)' });
    expect(wrong.registered.last_error).toBe('oauth: the authorization server refused (invalid_client)');
    expect(upstream.assertions.refused.slice(refusedBefore)).toContain('signature');
    const called = await wrong.call('whoami');
    expect(called.isError).toBe(true);
    expect(text(called)).not.toMatch(/invalid_client|assertion|oauth|token|key/i);
  });

  it('the private key is never shown: not in an answer, the store, a log line or the audit', async () => {
    expect(answers.length).toBeGreaterThan(2);
    const views = [...answers, ...(await listed())];
    const rows = await queryRows<Record<string, unknown>>(app.deps.catalog.db, sql`select * from upstream_oauth`);
    const keys = await queryRows<{ key: string }>(app.deps.catalog.db, sql`select private_key as key from upstream_oauth where private_key is not null`);
    expect(keys.length).toBeGreaterThan(0);
    for (const { key: sealed } of keys) expect(sealed).toMatch(/^ts1:/);
    expect(logged.some((line) => line.includes('"audit":"oauth"'))).toBe(true);
    expectNoKey(views.join('\n'), 'the status views');
    expectNoKey(JSON.stringify(rows), 'the store');
    expectNoKey(logged.join('\n'), 'the logs and audit');
  });

  /** Every upstream's status and list view, as the REST API shows them. */
  async function listed(): Promise<string[]> {
    const catalogs = await queryRows<{ name: string; upstream: string }>(
      app.deps.catalog.db,
      sql`select c.name, o.upstream from upstream_oauth o join catalogs c on c.id = o.catalog_id where c.name like 'pkjwt%'`,
    );
    const views: string[] = [];
    for (const { name, upstream: upstreamName } of catalogs) {
      views.push((await app.request('GET', `/v1/catalogs/${name}/upstreams/${upstreamName}`, undefined, key)).text);
      views.push((await app.request('GET', `/v1/catalogs/${name}/upstreams`, undefined, key)).text);
    }
    return views;
  }
});

describe('OAuth client ID metadata documents (OAUTH_CLIENT_METADATA_URL)', () => {
  /** toolsift as authorization servers and browsers reach it; in the test that name leads to the app. */
  const PUBLIC = 'https://toolsift.test';
  const BASE = `${PUBLIC}/oauth/client-metadata`;
  const CALLBACK = `${PUBLIC}/oauth/callback`;
  let app: TestApp;
  /** Its authorization server takes URL client ids; the other only registers clients. */
  let supporting: OAuthMcpServer;
  let registering: OAuthMcpServer;
  let viaDocument: Awaited<ReturnType<typeof registerWithAgent>>;
  const agents: Client[] = [];
  const key = { authorization: 'Bearer md1' };
  const tenant = uniqueName('metadata-tenant');
  /** The tenant's client id: its document's URL under OAUTH_CLIENT_METADATA_URL. */
  const METADATA_URL = tenantClientId({ base: BASE, redirectUri: CALLBACK }, tenant);
  const documentPath = (clientId: string) => new URL(clientId).pathname;
  const onApp = (url: URL) => (url.origin === PUBLIC ? `${app.url}${url.pathname}${url.search}` : 'http://unreachable.invalid/');
  const register = (server: OAuthMcpServer, name: string, auth: Record<string, unknown> = { type: 'oauth' }) =>
    registerWithAgent({ app, key, url: server.url, agents, prefix: 'metadata' }, name, auth);

  /** An operator's start, and the browser's approval, back at toolsift's public callback. Answers the authorization URL and the page. */
  async function authorize(upstream: Awaited<ReturnType<typeof registerWithAgent>>): Promise<{ authorizationUrl: URL; status: number; page: string }> {
    const started = await app.request('POST', upstream.path('/oauth/start'), {}, key);
    expect(started.status).toBe(200);
    const authorizationUrl = new URL(started.body.authorization_url);
    expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(CALLBACK);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    const approved = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(approved.status).toBe(302);
    const back = await fetch(onApp(new URL(approved.headers.get('location')!)));
    return { authorizationUrl, status: back.status, page: await back.text() };
  }

  beforeAll(async () => {
    supporting = await startOAuthMcpServer({ clientMetadataDocuments: onApp });
    supporting.provider.accessSeconds = ACCESS_SECONDS;
    registering = await startOAuthMcpServer();
    app = await startTestApp({
      API_KEYS: `md1:${tenant}`,
      UPSTREAM_ALLOW: '127.0.0.1/32',
      UPSTREAM_CALL_TIMEOUT_MS: '5000',
      SECRETS_KEY,
      OAUTH_REDIRECT_URL: CALLBACK,
      OAUTH_CLIENT_METADATA_URL: BASE,
    });
  }, 60_000);

  afterAll(async () => {
    for (const agent of agents) await agent.close();
    await app?.close();
    await supporting?.close();
    await registering?.close();
  });

  it('a server that supports them: the URL is the client id, nothing registered; the callback completes and calls go through', async () => {
    viaDocument = await register(supporting, 'docs');
    expect(viaDocument.registered.auth).toMatchObject({ status: 'authorization_required' });
    const browser = await authorize(viaDocument);
    expect(browser.authorizationUrl.searchParams.get('client_id')).toBe(METADATA_URL);
    expect(browser.status).toBe(200);
    expect(browser.page).toContain('is authorized (2 tools served');
    expect(supporting.seen.registrations).toBe(0);
    // The server read the document at its authorization and its token endpoint, and refused none.
    expect(supporting.documents.refused).toEqual([]);
    expect(supporting.documents.read.length).toBeGreaterThanOrEqual(2);
    expect(new Set(supporting.documents.read)).toEqual(new Set([METADATA_URL]));

    const called = await viaDocument.call('whoami');
    expect(called.isError).toBeFalsy();
    expect(text(called)).toContain(`client ${METADATA_URL}`);
    expect(await viaDocument.status()).toMatchObject({ tool_count: 2, last_error: null, auth: { status: 'authorized', last_error: null } });
  });

  it('renews the token with the URL as the client id, without a secret', async () => {
    const refreshes = supporting.provider.counts.refreshes;
    await sleep(ACCESS_SECONDS * 750 + 300);
    const called = await viaDocument.call('add_numbers', { a: 2, b: 5 });
    expect(called.isError).toBeFalsy();
    expect(text(called)).toContain('7');
    expect(supporting.provider.counts.refreshes).toBe(refreshes + 1);
    expect(supporting.seen.rejectedBearers).toBe(0);
    expect(supporting.seen.registrations).toBe(0);
  });

  it("serves each tenant's document without an API key: its own client id and the callback, nothing else; the Host / Origin guard still applies", async () => {
    expect(METADATA_URL).toMatch(/^https:\/\/toolsift\.test\/oauth\/client-metadata\/[0-9a-f]{32}\.json$/);
    const served = await app.request('GET', documentPath(METADATA_URL));
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^application\/json/);
    expect(served.body).toEqual({
      client_id: METADATA_URL,
      client_name: 'toolsift',
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    // Neither the Host nor a query changes it: it is the configuration's, not the request's (fetch would not send another Host).
    const asked = await new Promise<string>((resolve, reject) => {
      const url = `${app.url}${documentPath(METADATA_URL)}?client_id=https://evil.example/x`;
      http
        .get(url, { headers: { host: 'evil.example' } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
    expect(JSON.parse(asked)).toEqual(served.body);
    // The exemption is this route alone: the API beside it still wants a key.
    expect((await app.request('GET', '/v1/catalogs')).status).toBe(401);
    expect((await app.request('GET', documentPath(METADATA_URL), undefined, { origin: 'https://evil.example' })).status).toBe(403);
    // Another tenant has a client id of its own (consent given to one is not another's), and a name no client id has is a 404.
    const other = tenantClientId({ base: BASE, redirectUri: CALLBACK }, uniqueName('other-tenant'));
    expect(other).not.toBe(METADATA_URL);
    expect((await app.request('GET', documentPath(other))).body.client_id).toBe(other);
    for (const name of ['tenant.json', `${'0'.repeat(32)}.txt`, `${'g'.repeat(32)}.json`])
      expect((await app.request('GET', `/oauth/client-metadata/${name}`)).status).toBe(404);
  });

  it('a server that does not support them: dynamic registration as before, beside the upstream that keeps the URL', async () => {
    const registered = await register(registering, 'wiki');
    const browser = await authorize(registered);
    const clientId = browser.authorizationUrl.searchParams.get('client_id');
    expect(clientId).toMatch(/^[0-9a-f-]{36}$/);
    expect(browser.page).toContain('is authorized (2 tools served');
    expect(registering.seen.registrations).toBe(1);
    expect(text(await registered.call('whoami'))).toContain(`client ${clientId}`);
    expect(text(await viaDocument.call('whoami'))).toContain(`client ${METADATA_URL}`);
  });

  it('client_credentials without a configured client registers, even where URL client ids are taken: the document describes the browser client', async () => {
    const registrations = supporting.seen.registrations;
    const read = supporting.documents.read.length;
    const machine = await register(supporting, 'machine', { type: 'oauth', grant: 'client_credentials' });
    expect(machine.registered).toMatchObject({ tool_count: 2, auth: { status: 'authorized', client: 'registered' } });
    expect(supporting.seen.registrations).toBe(registrations + 1);
    expect(supporting.documents.read.length).toBe(read);
    expect(text(await machine.call('whoami'))).toMatch(/client [0-9a-f-]{36}/);
  });

  it('a URL client id stored under an earlier setting is not presented again: without the setting the next start registers', async () => {
    // The same store and tenant, OAUTH_CLIENT_METADATA_URL since removed: no document is served.
    const without = await startTestApp({ API_KEYS: `md1:${tenant}`, UPSTREAM_ALLOW: '127.0.0.1/32', SECRETS_KEY, OAUTH_REDIRECT_URL: CALLBACK });
    try {
      expect((await without.request('GET', documentPath(METADATA_URL))).status).toBe(404);
      const registrations = supporting.seen.registrations;
      const started = await without.request('POST', viaDocument.path('/oauth/start'), {}, key);
      expect(started.status).toBe(200);
      expect(new URL(started.body.authorization_url).searchParams.get('client_id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(supporting.seen.registrations).toBe(registrations + 1);
    } finally {
      await without.close();
    }
  });
});

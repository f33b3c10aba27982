/**
 * Secrets at rest (issue 76 item 3), on the store the environment selects (PGlite, or PostgreSQL
 * with DATABASE_URL), each scenario over a scratch database of its own: an upstream registered
 * with an Authorization header (a real MCP server of the official SDK that answers 401 without
 * it) syncs and is called through toolsift, and a dump of the whole store (pg_dump on PostgreSQL,
 * and every row of every table on both) holds the secret in no form. Plaintext an older release
 * stored is sealed at the next start; a start with `new,old` keys re-seals every value with the new
 * one; a start without SECRETS_KEY, or without the key the values are sealed with, is refused
 * naming it; an altered value does not open (GCM tag) and the sync says so in its own words; a
 * value moved to another URL (a database writer without the key) is not sent there.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSecretBox } from '../../src/lib/secret-box.js';
import { queryRows } from '../../src/store/database.js';
import { headerValueFor, sealStoredSecrets, type UpstreamBinding } from '../../src/store/stored-secrets.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, storeKind, uniqueName, type ScratchDatabase } from '../helpers/database.js';

const TOKEN = `sk-vault-${uniqueName('tok')}`;
const BEARER = `Bearer ${TOKEN}`;
const API_TOKEN = `api-${uniqueName('key')}`;
/** An OAuth client's private key (private_key_jwt): a line of its PEM body is what a dump must not show. */
const PRIVATE_KEY = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const key = (id: string, fill: number) => `${id}:${Buffer.alloc(32, fill).toString('base64')}`;
const K1 = key('k1', 11);
const K2 = key('k2', 22);

/** Every form a secret could be written in: as given, base64, base64url, hex. */
function forms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [secret, bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex')];
}
const SECRET_FORMS = [...forms(TOKEN), ...forms(BEARER), ...forms(API_TOKEN), ...forms(PRIVATE_KEY.split('\n')[1]!)];

/** An MCP server of the official SDK on 127.0.0.2 that answers 401 to any request without the bearer token. */
async function startVault() {
  const seen: (string | undefined)[] = [];
  const serve = toNodeHandler(
    createMcpHandler(() => {
      const server = new McpServer({ name: 'vault', version: '1.0.0' });
      server.registerTool(
        'vault_lookup',
        { description: 'Look up an entry in the vault.', inputSchema: z.object({ entry: z.string() }) },
        async ({ entry }) => ({
          content: [{ type: 'text', text: `entry ${entry}: found` }],
        }),
      );
      return server;
    }),
  );
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== BEARER || req.headers['x-api-key'] !== API_TOKEN) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    void serve(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  return {
    url: `http://127.0.0.2:${(server.address() as AddressInfo).port}/mcp`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The whole store as text: pg_dump of the database on PostgreSQL, and on both stores every row of every table. */
async function dumpStore(scratch: ScratchDatabase): Promise<string> {
  const parts: string[] = [];
  if (scratch.url) {
    const { stdout } = await promisify(execFile)('pg_dump', ['--no-owner', scratch.url], { maxBuffer: 256 * 2 ** 20 });
    expect(stdout).toContain('mcp_upstreams');
    parts.push(stdout);
  }
  const db = scratch.database.db;
  const tables = await queryRows<{ schema: string; name: string }>(
    db,
    sql`select table_schema as schema, table_name as name from information_schema.tables
        where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') order by 1, 2`,
  );
  expect(tables.map((table) => table.name)).toEqual(expect.arrayContaining(['mcp_upstreams', 'upstream_oauth', 'upstream_tools', 'catalog_tools']));
  for (const table of tables) {
    const rows = await queryRows<{ row: string }>(db, sql`select t::text as row from ${sql.identifier(table.schema)}.${sql.identifier(table.name)} t`);
    parts.push(`-- ${table.schema}.${table.name}\n${rows.map((row) => row.row).join('\n')}`);
  }
  return parts.join('\n');
}

function expectNoSecret(text: string, where: string): void {
  for (const form of SECRET_FORMS) expect(text.includes(form), `${where} holds a form of the secret`).toBe(false);
}

/** What upstream `name`'s credentials are sealed for (stored-secrets.ts, UpstreamBinding): its tenant, catalog, name and URL as the row says. */
async function bindingOf(scratch: ScratchDatabase, name: string): Promise<UpstreamBinding> {
  const [row] = await queryRows<UpstreamBinding>(
    scratch.database.db,
    sql`select c.tenant, u.catalog_id as "catalogId", u.name as upstream, u.url from mcp_upstreams u join catalogs c on c.id = u.catalog_id where u.name = ${name}`,
  );
  return row!;
}

async function storedHeaders(scratch: ScratchDatabase, name: string): Promise<Record<string, string>> {
  const rows = await queryRows<{ headers: string }>(scratch.database.db, sql`select headers::text as headers from mcp_upstreams where name = ${name}`);
  return JSON.parse(rows[0]!.headers) as Record<string, string>;
}

describe(`secrets at rest (${storeKind()})`, () => {
  const apiKey = `secrets-${uniqueName('k')}`;
  const tenant = uniqueName('sec-tenant');
  const auth = { authorization: `Bearer ${apiKey}` };
  const catalog = 'vaulted';
  let vault: Awaited<ReturnType<typeof startVault>>;
  let scratch: ScratchDatabase;
  const apps: TestApp[] = [];
  const start = async (secretsKey: string, database = scratch) => {
    const app = await startTestApp(
      { API_KEYS: `${apiKey}:${tenant}`, UPSTREAM_ALLOW: '127.0.0.2/32', SECRETS_KEY: secretsKey, UPSTREAM_CONNECT_TIMEOUT_MS: '5000' },
      { database: database.database },
    );
    apps.push(app);
    return app;
  };
  const stop = async (app: TestApp) => {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  const callThrough = async (app: TestApp) => {
    const client = new Client({ name: 'secrets-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: auth } }));
    try {
      return await client.callTool({ name: 'call_tool', arguments: { name: 'vault_lookup', arguments: { entry: 'alpha' } } });
    } finally {
      await client.close();
    }
  };
  const register = (app: TestApp, headers: Record<string, string> = { Authorization: BEARER, 'X-Api-Key': API_TOKEN }) =>
    app.request('PUT', `/v1/catalogs/${catalog}/upstreams/vault`, { url: vault.url, headers, trust: 'auto' }, auth);

  beforeAll(async () => {
    vault = await startVault();
    scratch = await scratchDatabase(storeKind(), 'secrets');
  }, 60_000);

  afterAll(async () => {
    for (const app of [...apps]) await app.close();
    await scratch?.drop();
    await vault?.close();
  });

  it('stores header values sealed: the upstream syncs and answers calls with them, and a dump of the store shows none', async () => {
    const app = await start(K1);
    const put = await register(app);
    expect(put.status).toBe(200);
    expect(put.body.upstream).toMatchObject({ header_names: ['Authorization', 'X-Api-Key'], last_error: null, tool_count: 1 });
    expect(vault.seen).toContain(BEARER);
    const stored = await storedHeaders(scratch, 'vault');
    expect(Object.keys(stored).sort()).toEqual(['Authorization', 'X-Api-Key']);
    for (const value of Object.values(stored)) expect(value).toMatch(/^ts1:k1:/);

    const called = await callThrough(app);
    expect(called.isError).toBeFalsy();
    expect(JSON.stringify(called.content)).toContain('entry alpha: found');

    // Reads over the API name the headers, never their values (sealed or not).
    for (const path of [`/v1/catalogs/${catalog}/upstreams`, `/v1/catalogs/${catalog}/upstreams/vault`, `/v1/catalogs/${catalog}`]) {
      const read = await app.request('GET', path, undefined, auth);
      expect(read.status).toBe(200);
      expectNoSecret(read.text, path);
      expect(read.text).not.toContain('ts1:');
    }
    expectNoSecret(await dumpStore(scratch), 'the dump');
    await stop(app);
  }, 60_000);

  it('a start without SECRETS_KEY, or without the key the values are sealed with, is refused naming it', async () => {
    await expect(start('')).rejects.toThrow(/SECRETS_KEY is not set.*"k1"/);
    await expect(start(key('k9', 99))).rejects.toThrow(/SECRETS_KEY does not hold key id "k1" \(2 stored credentials/);
    // The refused starts changed nothing.
    for (const value of Object.values(await storedHeaders(scratch, 'vault'))) expect(value).toMatch(/^ts1:k1:/);
  }, 60_000);

  it('rotation: a start with new,old re-seals every value with the new key; the old key alone is then refused', async () => {
    const before = await storedHeaders(scratch, 'vault');
    const app = await start(`${K2},${K1}`);
    const after = await storedHeaders(scratch, 'vault');
    for (const value of Object.values(after)) expect(value).toMatch(/^ts1:k2:/);
    const binding = await bindingOf(scratch, 'vault');
    expect(headerValueFor(binding, createSecretBox(K2).open(after.Authorization!))).toBe(BEARER);
    expect(headerValueFor(binding, createSecretBox(K1).open(before.Authorization!))).toBe(BEARER);
    const called = await callThrough(app);
    expect(called.isError).toBeFalsy();
    expectNoSecret(await dumpStore(scratch), 'the dump after rotation');
    await stop(app);
    // The old key is no longer needed; alone it cannot open what the store now holds.
    await expect(start(K1)).rejects.toThrow(/SECRETS_KEY does not hold key id "k2"/);
    const newOnly = await start(K2);
    const synced = await newOnly.deps.upstreams.sync(tenant, catalog, 'vault');
    expect(synced).toMatchObject({ last_error: null, tool_count: 1 });
    await stop(newOnly);
  }, 60_000);

  it('an altered value does not open: the sync fails in its own words, the call is refused, nothing reaches the upstream', async () => {
    const app = await start(K2);
    const stored = await storedHeaders(scratch, 'vault');
    const parts = stored.Authorization!.split(':');
    parts[4] = (parts[4]![0] === 'A' ? 'B' : 'A') + parts[4]!.slice(1);
    await scratch.database.db.execute(
      sql`update mcp_upstreams set headers = ${JSON.stringify({ ...stored, Authorization: parts.join(':') })}::json where name = 'vault'`,
    );
    const requests = vault.seen.length;
    const synced = await app.deps.upstreams.sync(tenant, catalog, 'vault');
    expect(synced.last_error).toMatch(/^credentials: .*key id "k2" does not authenticate/);
    expect(synced.tool_count).toBe(1);
    const called = await callThrough(app);
    expect(called.isError).toBe(true);
    expect(vault.seen.length).toBe(requests);
    // Registering again stores the values afresh.
    expect((await register(app)).body.upstream.last_error).toBeNull();
    await stop(app);
  }, 60_000);

  it('a database writer without the key who points the upstream elsewhere gets no credential sent there', async () => {
    const app = await start(K2);
    const thief = { seen: [] as (string | undefined)[] };
    const server = http.createServer((req, res) => {
      thief.seen.push(req.headers.authorization);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    try {
      const elsewhere = `http://127.0.0.2:${(server.address() as AddressInfo).port}/mcp`;
      await scratch.database.db.execute(sql`update mcp_upstreams set url = ${elsewhere} where name = 'vault'`);
      const synced = await app.deps.upstreams.sync(tenant, catalog, 'vault');
      expect(synced.last_error).toMatch(/^credentials: header (Authorization|X-Api-Key) was sealed for another URL/);
      expect((await callThrough(app)).isError).toBe(true);
      expect(thief.seen).toEqual([]);
      await scratch.database.db.execute(sql`update mcp_upstreams set url = ${vault.url} where name = 'vault'`);
      expect((await app.deps.upstreams.sync(tenant, catalog, 'vault')).last_error).toBeNull();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await stop(app);
    }
  }, 60_000);

  /**
   * A database writer without the key copies the upstream's sealed header values into an upstream
   * of their own at the same URL (another catalog), or moves the catalog to another tenant: the
   * values were sealed with their tenant, catalog and upstream, so neither sends them.
   */
  it('header values copied into another upstream at the same URL, or a catalog moved to another tenant: refused, nothing sent', async () => {
    const app = await start(K2);
    try {
      const copycat = await app.request('PUT', '/v1/catalogs/copycat/upstreams/vault-too', { url: vault.url, trust: 'auto' }, auth);
      expect(copycat.body.upstream.last_error).toBe('HTTP 401');
      await scratch.database.db.execute(
        sql`update mcp_upstreams set headers = (select headers from mcp_upstreams where name = 'vault') where name = 'vault-too'`,
      );
      const bearers = vault.seen.filter((seen) => seen === BEARER).length;
      const copied = await app.deps.upstreams.sync(tenant, 'copycat', 'vault-too');
      expect(copied.last_error).toMatch(/^credentials: header (Authorization|X-Api-Key) was sealed for another upstream: nothing was sent/);
      // Without the binding the vault answered the copy with the owner's credentials here.
      expect(vault.seen.filter((seen) => seen === BEARER).length).toBe(bearers);

      const moved = uniqueName('other-tenant');
      await scratch.database.db.execute(sql`update catalogs set tenant = ${moved} where tenant = ${tenant} and name = ${catalog}`);
      const elsewhere = await app.deps.upstreams.sync(moved, catalog, 'vault');
      expect(elsewhere.last_error).toMatch(/^credentials: header (Authorization|X-Api-Key) was sealed for another tenant than the catalog's/);
      expect(vault.seen.filter((seen) => seen === BEARER).length).toBe(bearers);
      await scratch.database.db.execute(sql`update catalogs set tenant = ${tenant} where tenant = ${moved} and name = ${catalog}`);
      expect((await app.deps.upstreams.sync(tenant, catalog, 'vault')).last_error).toBeNull();
    } finally {
      await app.request('DELETE', '/v1/catalogs/copycat', undefined, auth);
      await stop(app);
    }
  }, 60_000);

  it('header values an earlier release sealed with their URL alone are bound to their upstream at the next start; one for another URL stays refused', async () => {
    const binding = await bindingOf(scratch, 'vault');
    const box = createSecretBox(K2);
    await scratch.database.db.execute(
      sql`update mcp_upstreams set headers = ${JSON.stringify({
        Authorization: box.seal(JSON.stringify([vault.url, BEARER])),
        'X-Api-Key': box.seal(JSON.stringify([vault.url, API_TOKEN])),
      })}::json where name = 'vault'`,
    );
    const app = await start(K2);
    const stored = await storedHeaders(scratch, 'vault');
    expect(JSON.parse(box.open(stored.Authorization!))).toEqual([binding.tenant, binding.catalogId, 'vault', vault.url, BEARER]);
    expect((await callThrough(app)).isError).toBeFalsy();
    await stop(app);
    // One sealed for another URL than the row's is left as it was, and refused.
    const elsewhere = box.seal(JSON.stringify(['http://127.0.0.2:1/mcp', BEARER]));
    await scratch.database.db.execute(
      sql`update mcp_upstreams set headers = ${JSON.stringify({ ...stored, Authorization: elsewhere })}::json where name = 'vault'`,
    );
    const again = await start(K2);
    expect((await storedHeaders(scratch, 'vault')).Authorization).toBe(elsewhere);
    expect((await again.deps.upstreams.sync(tenant, catalog, 'vault')).last_error).toMatch(
      /^credentials: header Authorization was sealed without the upstream it is for/,
    );
    expect((await register(again)).body.upstream.last_error).toBeNull();
    await stop(again);
  }, 60_000);

  it('plaintext an older release stored is sealed at the next start, and still used', async () => {
    await scratch.database.db.execute(
      sql`update mcp_upstreams set headers = ${JSON.stringify({ Authorization: BEARER, 'X-Api-Key': API_TOKEN })}::json where name = 'vault'`,
    );
    await expect(start('')).rejects.toThrow(/the store holds 2 credentials .* SECRETS_KEY is not set/);
    const app = await start(K2);
    const stored = await storedHeaders(scratch, 'vault');
    for (const value of Object.values(stored)) expect(value).toMatch(/^ts1:k2:/);
    expect(headerValueFor(await bindingOf(scratch, 'vault'), createSecretBox(K2).open(stored['X-Api-Key']!))).toBe(API_TOKEN);
    expect((await callThrough(app)).isError).toBeFalsy();
    expectNoSecret(await dumpStore(scratch), 'the dump after sealing plaintext');
    await stop(app);
  }, 60_000);

  it('OAuth columns are re-sealed on rotation too; a value that does not authenticate is left, not a refused start', async () => {
    const db = scratch.database.db;
    const [row] = await queryRows<{ catalogId: number }>(db, sql`select catalog_id as "catalogId" from mcp_upstreams where name = 'vault'`);
    const old = createSecretBox(K2);
    const tokens = JSON.stringify({ access_token: TOKEN, token_type: 'Bearer' });
    await db.execute(sql`insert into upstream_oauth (catalog_id, upstream, grant_type, client_id, client_secret, private_key, private_key_alg, tokens)
      values (${row!.catalogId}, 'vault', 'client_credentials', 'cid', ${old.seal(API_TOKEN)}, ${old.seal(PRIVATE_KEY)}, 'RS256', ${old.seal(tokens)})`);
    await db.execute(sql`insert into upstream_oauth_pending (state_hash, catalog_id, upstream, code_verifier, redirect_uri, expires_at)
      values (${uniqueName('state')}, ${row!.catalogId}, 'vault', ${old.seal('verifier-0123')}, 'http://127.0.0.1/cb', now() + interval '5 minutes')`);
    const k3 = key('k3', 33);
    const rotated = createSecretBox(`${k3},${K2}`);
    const report = await sealStoredSecrets(db, rotated);
    expect(report).toEqual({ sealed: 0, resealed: 6, unreadable: 0 });
    const [oauth] = await queryRows<{ clientSecret: string; privateKey: string; tokens: string }>(
      db,
      sql`select client_secret as "clientSecret", private_key as "privateKey", tokens from upstream_oauth where catalog_id = ${row!.catalogId}`,
    );
    expect(oauth!.clientSecret).toMatch(/^ts1:k3:/);
    // Sealed alone by an earlier release: bound now to their row's issuer (none), upstream and URL, as oauth.ts opens them.
    const { tenant: owner, url } = await bindingOf(scratch, 'vault');
    expect(JSON.parse(rotated.open(oauth!.privateKey))).toEqual([null, owner, row!.catalogId, 'vault', url, PRIVATE_KEY]);
    expect(JSON.parse(rotated.open(oauth!.clientSecret))).toEqual([null, owner, row!.catalogId, 'vault', url, API_TOKEN]);
    // The tokens too, to their tenant, row and URL (where they may go).
    expect(JSON.parse(rotated.open(oauth!.tokens))).toEqual([owner, row!.catalogId, 'vault', url, tokens]);
    const [pending] = await queryRows<{ codeVerifier: string }>(db, sql`select code_verifier as "codeVerifier" from upstream_oauth_pending`);
    expect(rotated.open(pending!.codeVerifier)).toBe('verifier-0123');
    expectNoSecret(await dumpStore(scratch), 'the dump with OAuth rows');
    // Again: nothing left to do.
    expect(await sealStoredSecrets(db, rotated)).toEqual({ sealed: 0, resealed: 0, unreadable: 0 });
    // An altered value under a key in hand is left as it is (its upstream's sync says why); the start goes on.
    const altered = `${oauth!.tokens.slice(0, -2)}${oauth!.tokens.endsWith('AA') ? 'BB' : 'AA'}`;
    await db.execute(sql`update upstream_oauth set tokens = ${altered} where catalog_id = ${row!.catalogId}`);
    expect(await sealStoredSecrets(db, createSecretBox(`${key('k4', 44)},${k3}`))).toEqual({ sealed: 0, resealed: 5, unreadable: 1 });
    await db.execute(sql`delete from upstream_oauth where catalog_id = ${row!.catalogId}`);
    await db.execute(sql`delete from upstream_oauth_pending where catalog_id = ${row!.catalogId}`);
  }, 60_000);

  it('without SECRETS_KEY, a registration with headers or OAuth is a 400 naming it, and nothing is stored; one without is served', async () => {
    const empty = await scratchDatabase(storeKind(), 'nosecrets');
    try {
      const app = await start('', empty);
      const refused = await register(app);
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('validation_failed');
      expect(refused.body.error.message).toMatch(/^headers: .*SECRETS_KEY is not set/);
      expectNoSecret(refused.text, 'the refusal');
      const oauth = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/vault`, { url: vault.url, auth: { type: 'oauth' } }, auth);
      expect(oauth.status).toBe(400);
      expect(oauth.body.error.message).toMatch(/^auth: .*SECRETS_KEY/);
      expect(await queryRows(empty.database.db, sql`select 1 from mcp_upstreams`)).toEqual([]);
      // Without credentials: registered (the vault answers 401, which its sync state says).
      const plain = await register(app, {});
      expect(plain.status).toBe(200);
      expect(plain.body.upstream.last_error).toBe('HTTP 401');
      expectNoSecret(await dumpStore(empty), 'the dump without SECRETS_KEY');
      await stop(app);
    } finally {
      await empty.drop();
    }
  }, 60_000);
});

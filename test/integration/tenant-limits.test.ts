/**
 * TENANT_MAX_TOOLS, TENANT_MAX_CATALOGS, TENANT_MAX_UPSTREAMS and TENANT_MAX_BYTES: one tenant of a shared service cannot fill it. A write
 * that would take the tenant past either is a 403 `quota_exceeded` and writes nothing; a write that
 * keeps or shrinks the count is taken; other tenants are not touched; two writes racing to the
 * last places cannot both take them; an upstream's sync past the bound keeps what it served and says
 * why. Runs on the store the environment selects (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/store/database.js';
import { startHostileUpstream } from '../fixtures/hostile-mcp-server.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const tools = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, index) => ({ name: `${prefix}_${index}`, description: `Tool ${prefix} ${index}.` }));

describe('tenant limits', () => {
  let app: TestApp;
  let upstream: Awaited<ReturnType<typeof startHostileUpstream>>;
  const keys = { a: `ka-${uniqueName('q')}-0123456789`, b: `kb-${uniqueName('q')}-0123456789`, c: `kc-${uniqueName('q')}-0123456789` };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const name = (label: string) => uniqueName(`quota-${label}`);

  beforeAll(async () => {
    upstream = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'Q',
      tools: tools('synced', 3).map((tool) => ({ ...tool, inputSchema: { type: 'object', properties: {} } })),
    });
    app = await startTestApp({
      API_KEYS: `${keys.a}:${uniqueName('ta')},${keys.b}:${uniqueName('tb')},${keys.c}:${uniqueName('tc')}`,
      TENANT_MAX_TOOLS: '5',
      TENANT_MAX_CATALOGS: '2',
      TENANT_MAX_UPSTREAMS: '1',
      UPSTREAM_ALLOW: '127.0.0.2/32',
    });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await upstream?.close();
  });

  it('refuses a write past either bound, writing nothing; takes writes that keep or shrink; leaves other tenants alone', async () => {
    const a = as(keys.a);
    const [one, two] = [name('one'), name('two')];
    expect((await app.request('PUT', `/v1/catalogs/${one}`, { tools: tools('one', 3) }, a)).status).toBe(200);
    expect((await app.request('PUT', `/v1/catalogs/${two}`, { tools: tools('two', 2) }, a)).status).toBe(200);
    const more = await app.request('POST', `/v1/catalogs/${two}/tools`, { tools: tools('more', 1) }, a);
    expect(more.status).toBe(403);
    expect(more.body.error).toMatchObject({ code: 'quota_exceeded' });
    expect(more.body.error.message).toBe(
      "this write would hold 6 tools over this tenant's catalogs, more than TENANT_MAX_TOOLS allows (5): nothing was written",
    );
    expect((await app.request('GET', `/v1/catalogs/${two}`, undefined, a)).body.tool_count).toBe(2);
    const third = await app.request('PUT', `/v1/catalogs/${name('three')}`, { tools: [] }, a);
    expect(third.status).toBe(403);
    expect(third.body.error.message).toMatch(/this tenant has 2 catalogs, the most TENANT_MAX_CATALOGS allows \(2\)/);
    expect((await app.request('GET', '/v1/catalogs', undefined, a)).body.catalogs).toHaveLength(2);
    // The same count in other tools, then fewer: taken; the places freed are the tenant's again.
    expect((await app.request('PUT', `/v1/catalogs/${one}`, { tools: tools('other', 3) }, a)).status).toBe(200);
    expect((await app.request('PUT', `/v1/catalogs/${one}`, { tools: tools('other', 1) }, a)).status).toBe(200);
    expect((await app.request('POST', `/v1/catalogs/${two}/tools`, { tools: tools('more', 2) }, a)).status).toBe(200);
    // Deleting a catalog frees its place.
    expect((await app.request('DELETE', `/v1/catalogs/${one}`, undefined, a)).status).toBe(204);
    expect((await app.request('PUT', `/v1/catalogs/${name('four')}`, { tools: tools('four', 1) }, a)).status).toBe(200);
    // Another tenant has its own bounds.
    expect((await app.request('PUT', `/v1/catalogs/${name('b')}`, { tools: tools('b', 5) }, as(keys.b))).status).toBe(200);
    // What each holds, beside the bounds.
    const usage = await app.request('GET', '/v1/usage', undefined, a);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({
      catalogs: { used: 2, limit: 2 },
      tools: { used: 5, limit: 5 },
      upstreams: { used: 0, limit: 1 },
      definition_bytes: { limit: null },
    });
    expect(usage.body.definition_bytes.used).toBeGreaterThan(0);
    expect((await app.request('GET', '/v1/usage', undefined, as(keys.b))).body).toMatchObject({ catalogs: { used: 1 }, tools: { used: 5 } });
  });

  it('lets only one of two writes racing to the last places take them', async () => {
    const c = as(keys.c);
    const [first, second] = [name('race1'), name('race2')];
    expect((await app.request('PUT', `/v1/catalogs/${first}`, { tools: tools('base', 3) }, c)).status).toBe(200);
    const statuses = await Promise.all([
      app.request('POST', `/v1/catalogs/${first}/tools`, { tools: tools('left', 2) }, c).then((answer) => answer.status),
      app.request('PUT', `/v1/catalogs/${second}`, { tools: tools('right', 2) }, c).then((answer) => answer.status),
    ]);
    expect(statuses.sort()).toEqual([200, 403]);
    const listed = (await app.request('GET', '/v1/catalogs', undefined, c)).body.catalogs as { tool_count: number }[];
    expect(listed.reduce((sum, catalog) => sum + catalog.tool_count, 0)).toBe(5);
  });

  it("keeps an upstream's sync within the bound: nothing served past it, the upstream says why, and serves once there is room", async () => {
    const b = as(keys.b);
    const held = (await app.request('GET', '/v1/catalogs', undefined, b)).body.catalogs as { name: string; tool_count: number }[];
    expect(held.map((catalog) => catalog.tool_count)).toEqual([5]);
    // Tenant b holds 5 of 5: the upstream's 3 tools do not fit.
    const catalog = name('b-up');
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/q`, { url: upstream.url() }, b);
    expect(put.status, put.text).toBe(200);
    expect(put.body.upstream).toMatchObject({ tool_count: 0 });
    expect(put.body.upstream.last_error).toBe(
      "this write would hold 8 tools over this tenant's catalogs, more than TENANT_MAX_TOOLS allows (5): nothing was written",
    );
    // Room made (5 -> 2): the next sync serves them.
    expect((await app.request('PUT', `/v1/catalogs/${held[0]!.name}`, { tools: tools('b', 2) }, b)).status).toBe(200);
    const again = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/q`, { url: upstream.url() }, b);
    expect(again.body.upstream).toMatchObject({ tool_count: 3, last_error: null });
    // One upstream is this tenant's bound: a second is refused, registered again the first is not.
    const second = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/q2`, { url: upstream.url() }, b);
    expect(second.status).toBe(403);
    expect(second.body.error.message).toMatch(/this tenant has 1 upstreams, the most TENANT_MAX_UPSTREAMS allows \(1\)/);
    expect((await app.request('GET', `/v1/catalogs/${catalog}/upstreams`, undefined, b)).body.upstreams).toHaveLength(1);
  });
});

describe('tenant limits in bytes', () => {
  let app: TestApp;
  let upstream: Awaited<ReturnType<typeof startHostileUpstream>>;
  const keys = { d: `kd-${uniqueName('qb')}-0123456789`, e: `ke-${uniqueName('qb')}-0123456789` };
  const tenant = uniqueName('td');
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const name = (label: string) => uniqueName(`bytes-${label}`);
  // A tool whose definition takes about `size` bytes.
  const sized = (toolName: string, size: number) => ({ name: toolName, description: `${toolName} ${'x'.repeat(size)}` });
  const refused =
    /^this write would hold (\d+) bytes of tool definitions over this tenant's catalogs, more than TENANT_MAX_BYTES allows \(4096\): nothing was written$/;

  /** Each of the tenant's catalogs: the bytes its row sums, and what its tools' stored definitions take. */
  const bookkeeping = () =>
    queryRows<{ name: string; kept: number; measured: number }>(
      app.deps.database.db,
      sql`select c.name, c.definition_bytes::float8 as kept,
                 coalesce((select sum(octet_length(ct.definition::text)) from catalog_tools ct where ct.catalog_id = c.id), 0)::float8 as measured
          from catalogs c where c.tenant = ${tenant} order by c.name`,
    );

  /** A tool's description as its catalog stores it (the API's answers shorten long ones). */
  const storedDescription = async (catalog: string, toolName: string) =>
    (
      await queryRows<{ description: string }>(
        app.deps.database.db,
        sql`select ct.definition->>'description' as description from catalog_tools ct join catalogs c on c.id = ct.catalog_id
            where c.tenant = ${tenant} and c.name = ${catalog} and ct.name = ${toolName}`,
      )
    )[0]?.description;

  beforeAll(async () => {
    upstream = await startHostileUpstream({
      host: '127.0.0.2',
      label: 'B',
      tools: [{ ...sized('synced_small', 200), inputSchema: { type: 'object', properties: {} } }],
    });
    app = await startTestApp({
      API_KEYS: `${keys.d}:${tenant},${keys.e}:${uniqueName('te')}`,
      TENANT_MAX_BYTES: '4kb',
      UPSTREAM_ALLOW: '127.0.0.2/32',
    });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await upstream?.close();
  });

  it('counts the bytes of definitions: a write growing past the bound is refused whole, even at the same tool count; room made is the tenant again', async () => {
    const d = as(keys.d);
    const [one, two] = [name('one'), name('two')];
    expect((await app.request('PUT', `/v1/catalogs/${one}`, { tools: [sized('a', 900), sized('b', 900)] }, d)).status).toBe(200);
    // The same two tools, larger: no more tools, but past the bytes.
    const larger = await app.request('PUT', `/v1/catalogs/${one}`, { tools: [sized('a', 2500), sized('b', 2500)] }, d);
    expect(larger.status).toBe(403);
    expect(larger.body.error).toMatchObject({ code: 'quota_exceeded' });
    expect(larger.body.error.message).toMatch(refused);
    expect(Number(refused.exec(larger.body.error.message)![1])).toBeGreaterThan(5000);
    expect(await storedDescription(one, 'a')).toHaveLength('a '.length + 900);
    // Another catalog counts with it; one tool added past the bound is refused, the catalog not created.
    expect((await app.request('PUT', `/v1/catalogs/${two}`, { tools: [sized('c', 1500)] }, d)).status).toBe(200);
    const past = await app.request('POST', `/v1/catalogs/${two}/tools`, { tools: [sized('d', 800)] }, d);
    expect(past.status).toBe(403);
    expect(past.body.error.message).toMatch(refused);
    const third = await app.request('PUT', `/v1/catalogs/${name('three')}`, { tools: [sized('e', 900)] }, d);
    expect(third.status).toBe(403);
    expect((await app.request('GET', '/v1/catalogs', undefined, d)).body.catalogs).toHaveLength(2);
    // Smaller definitions are taken, and what they free is the tenant's again.
    expect((await app.request('PUT', `/v1/catalogs/${one}`, { tools: [sized('a', 100), sized('b', 100)] }, d)).status).toBe(200);
    expect((await app.request('POST', `/v1/catalogs/${two}/tools`, { tools: [sized('d', 800)] }, d)).status).toBe(200);
    expect((await app.request('DELETE', `/v1/catalogs/${two}/tools/c`, undefined, d)).status).toBe(204);
    expect((await app.request('POST', `/v1/catalogs/${two}/tools`, { tools: [sized('f', 1500)] }, d)).status).toBe(200);
    // Another tenant has its own bytes.
    expect((await app.request('PUT', `/v1/catalogs/${name('e')}`, { tools: [sized('a', 3000)] }, as(keys.e))).status).toBe(200);
    // Every kind of write kept each catalog's sum equal to what its rows store.
    const rows = await bookkeeping();
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.kept, row.name).toBe(row.measured);
  });

  it("keeps an upstream's sync within the bytes: a definition grown past the bound is not served, the upstream says why", async () => {
    const d = as(keys.d);
    const catalog = name('up');
    // trust "auto": a changed definition is served without approval (under "pin" it would wait in quarantine).
    const put = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/b`, { url: upstream.url(), trust: 'auto' }, d);
    expect(put.status, put.text).toBe(200);
    expect(put.body.upstream).toMatchObject({ tool_count: 1, last_error: null });
    // The upstream's tool grows past what the tenant has left: the sync keeps what it served.
    upstream.tools = [{ ...sized('synced_small', 3000), inputSchema: { type: 'object', properties: {} } }];
    const again = await app.request('PUT', `/v1/catalogs/${catalog}/upstreams/b`, { url: upstream.url(), trust: 'auto' }, d);
    expect(again.status, again.text).toBe(200);
    expect(again.body.upstream.last_error).toMatch(refused);
    expect(await storedDescription(catalog, 'synced_small')).toHaveLength('synced_small '.length + 200);
    const rows = await bookkeeping();
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row.kept, row.name).toBe(row.measured);
    // The tenant's usage is those sums, and its upstream.
    const usage = await app.request('GET', '/v1/usage', undefined, d);
    expect(usage.body).toEqual({
      tenant,
      catalogs: { used: 3, limit: null },
      tools: { used: 5, limit: null },
      upstreams: { used: 1, limit: null },
      definition_bytes: { used: rows.reduce((sum, row) => sum + row.measured, 0), limit: 4096 },
    });
  });
});

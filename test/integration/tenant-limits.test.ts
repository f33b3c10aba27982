/**
 * TENANT_MAX_TOOLS, TENANT_MAX_CATALOGS and TENANT_MAX_UPSTREAMS: one tenant of a shared service cannot fill it. A write
 * that would take the tenant past either is a 403 `quota_exceeded` and writes nothing; a write that
 * keeps or shrinks the count is taken; other tenants are not touched; two writes racing to the
 * last places cannot both take them; an upstream's sync past the bound keeps what it served and says
 * why. Runs on the store the environment selects (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

/**
 * A key that sees only some tools is ranked as a catalog holding only those (issue 76's scopes,
 * docs/security.md): where the catalog's index is in hand, its BM25 statistics, its servers'
 * documents (their votes) and the words typo matching reads are those of the tools it sees. Each
 * search of the limited key over the whole catalog must answer exactly (names, scores, every
 * `explain` figure) as the same search over a catalog of its tools alone; with the whole catalog's
 * statistics a score told how many hidden tools hold a word, and a server's vote carried a hidden
 * tool's words. Runs on the store the environment selects (PGlite, or PostgreSQL with DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { keysFile } from '../helpers/keys-file.js';
import { getCatalog } from '../../src/store/catalog-store.js';

const VISIBLE = [
  { name: 'vault_status', description: 'Show the status of the vault.', server: 'vault' },
  { name: 'key_list', description: 'List the encryption keys of a project.', server: 'keys' },
  { name: 'cluster_logs', description: 'Read the logs of a cluster.', server: 'kube' },
  { name: 'note_write', description: 'Write a note for the team.', server: 'notes' },
  { name: 'note_read', description: 'Read a note of the team.', server: 'notes' },
];
const HIDDEN = [
  { name: 'secret_export', description: 'Export every secret and encryption key of the kubernetes vault.', server: 'vault' },
  { name: 'secret_wipe', description: 'Wipe the encryption keys of the vault.', server: 'vault' },
  { name: 'secret_notes', description: 'Read the secret notes of the kubernetes team.', server: 'secrets' },
];
const QUERIES = [
  'export the encryption keys of the vault',
  // "kubernets": a typo of a word only hidden tools hold.
  'kubernets cluster logs',
  'wipe the vault',
  'read the team notes',
];

const as = (key: string) => ({ authorization: `Bearer ${key}` });

/** A catalog search's answer as compared: names, scores and every `explain` figure. */
async function search(app: TestApp, catalog: string, key: string, query: string) {
  const found = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, top_k: 5, explain: true }, as(key));
  expect(found.status).toBe(200);
  return (found.body.results as { name: string; score: number; explain: unknown }[]).map(({ name, score, explain }) => ({ name, score, explain }));
}

async function toolSearchHook(app: TestApp, catalog: string, key: string, query: string) {
  const answer = await app.request('POST', '/v1/tool-search', { catalog, query, max_results: 5 }, as(key));
  expect(answer.status).toBe(200);
  return answer.body.tool_references ?? answer.body.results ?? answer.body;
}

async function selector(app: TestApp, catalog: string, key: string, query: string) {
  const answer = await app.request('POST', '/v1/tool-discovery/search', { catalog, query, top_k: 3 }, as(key));
  expect(answer.status).toBe(200);
  return answer.body.tools ?? answer.body;
}

describe('a limited key is ranked by the statistics of the tools it sees', () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  const tenant = uniqueName('stats');
  const whole = uniqueName('whole');
  const alone = uniqueName('alone');
  const keys = { admin: `admin-${tenant}-0123456789`, narrow: `narrow-${tenant}-0123456789` };

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.admin, id: 'admin', tenant },
      { key: keys.narrow, id: 'narrow', tenant, tools: { deny: ['secret_*'] } },
    ]);
    app = await startTestApp({ API_KEYS_FILE: keysOf.path });
    for (const [name, tools] of [
      [whole, [...VISIBLE, ...HIDDEN]],
      [alone, VISIBLE],
    ] as const) {
      expect((await app.request('PUT', `/v1/catalogs/${name}`, { tools }, as(keys.admin))).status).toBe(200);
      // Ranked from the catalog's index (the first searches of a catalog not read yet rank in SQL).
      const row = (await getCatalog(app.deps.search.db, tenant, name))!;
      expect(await app.deps.search.catalogIndexes!.get(row)).toBeDefined();
    }
  });
  afterAll(async () => {
    await app?.close();
    keysOf?.remove();
  });

  it('answers each search over the whole catalog as over a catalog of its tools alone', async () => {
    for (const query of QUERIES) {
      const limited = await search(app, whole, keys.narrow, query);
      expect(limited.length).toBeGreaterThan(0);
      expect(limited, query).toEqual(await search(app, alone, keys.admin, query));
    }
    // The key that sees every tool is ranked by the whole catalog: the hidden tools' words count for it.
    const full = await search(app, whole, keys.admin, QUERIES[0]!);
    expect(full[0]!.name).toBe('secret_export');
  });

  it("counts a limited key's view of the catalog's index in CATALOG_INDEX_MEMORY, once per key", async () => {
    const row = (await getCatalog(app.deps.search.db, tenant, whole))!;
    const indexes = app.deps.search.catalogIndexes!;
    const index = (await indexes.get(row))!;
    const before = indexes.bytes;
    expect(index.bytes).toBeGreaterThan(index.ownBytes);
    // The view was counted by the searches above; searching again adds nothing.
    await search(app, whole, keys.narrow, QUERIES[1]!);
    expect(indexes.bytes).toBe(before);
    expect(index.bytes - index.ownBytes).toBe(Math.round(0.2 * index.ownBytes));
  });

  it('answers the tool-search hook and the selector over the whole catalog as over its tools alone', async () => {
    for (const query of QUERIES) {
      expect(await toolSearchHook(app, whole, keys.narrow, query), query).toEqual(await toolSearchHook(app, alone, keys.admin, query));
      expect(await selector(app, whole, keys.narrow, query), query).toEqual(await selector(app, alone, keys.admin, query));
    }
  });

  it("ranks MCP search_tools with a caller's server filter by the tools the key sees, the filter cutting the lists only", async () => {
    const found = async (catalog: string, key: string, query: string, server?: string) => {
      const client = new Client({ name: 'limited-statistics', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp/${catalog}`), { requestInit: { headers: as(key) } }));
      try {
        const answer = (await client.callTool({ name: 'search_tools', arguments: { query, limit: 5, ...(server ? { server } : {}) } })) as {
          structuredContent?: { results?: { name: string; score: number }[] };
        };
        return (answer.structuredContent?.results ?? []).map(({ name, score }) => ({ name, score }));
      } finally {
        await client.close();
      }
    };
    for (const query of QUERIES) {
      for (const server of [undefined, 'vault', 'notes']) {
        const limited = await found(whole, keys.narrow, query, server);
        expect(limited, `${query} (${server})`).toEqual(await found(alone, keys.admin, query, server));
      }
    }
    // The filter alone hides nothing from a key that sees every tool: its statistics stay the whole catalog's.
    const filtered = await found(whole, keys.admin, QUERIES[0]!, 'vault');
    expect(filtered[0]!.name).toBe('secret_export');
  });
});

describe("a limited key on the store's path (no index in hand) is ranked by the statistics of the tools it sees", () => {
  let app: TestApp;
  let keysOf: ReturnType<typeof keysFile>;
  const tenant = uniqueName('store-stats');
  const whole = uniqueName('whole');
  const alone = uniqueName('alone');
  const few = uniqueName('few');
  const FEW = VISIBLE.filter((tool) => tool.name.startsWith('note_') || tool.name === 'cluster_logs');
  const keys = { admin: `admin-${tenant}-0123456789`, narrow: `narrow-${tenant}-0123456789`, few: `few-${tenant}-0123456789` };

  beforeAll(async () => {
    keysOf = keysFile([
      { key: keys.admin, id: 'admin', tenant },
      // Hides three tools of eight: the store is asked for all but them.
      { key: keys.narrow, id: 'narrow', tenant, tools: { deny: ['secret_*'] } },
      // Sees three: the store is asked for those only.
      { key: keys.few, id: 'few', tenant, tools: { allow: ['note_*', 'cluster_logs'] } },
    ]);
    // No catalog index is ever held: every search ranks in SQL.
    app = await startTestApp({ API_KEYS_FILE: keysOf.path, CATALOG_INDEX_MEMORY: '0' });
    for (const [name, tools] of [
      [whole, [...VISIBLE, ...HIDDEN]],
      [alone, VISIBLE],
      [few, FEW],
    ] as const) {
      expect((await app.request('PUT', `/v1/catalogs/${name}`, { tools }, as(keys.admin))).status).toBe(200);
      const row = (await getCatalog(app.deps.search.db, tenant, name))!;
      expect(app.deps.search.catalogIndexes?.held(row)).toBeUndefined();
    }
  });
  afterAll(async () => {
    await app?.close();
    keysOf?.remove();
  });

  it('answers each search over the whole catalog as over a catalog of its tools alone, by a deny or an allow list', async () => {
    for (const query of QUERIES) {
      const expected = await search(app, alone, keys.admin, query);
      expect(expected.length).toBeGreaterThan(0);
      expect(await search(app, whole, keys.narrow, query), query).toEqual(expected);
      expect(await search(app, whole, keys.few, query), query).toEqual(await search(app, few, keys.admin, query));
    }
    // The key that sees every tool is ranked by the whole catalog: the hidden tools' words count for it.
    expect((await search(app, whole, keys.admin, QUERIES[0]!))[0]!.name).toBe('secret_export');
  });

  it('answers the tool-search hook and the selector over the whole catalog as over its tools alone', async () => {
    for (const query of QUERIES) {
      expect(await toolSearchHook(app, whole, keys.narrow, query), query).toEqual(await toolSearchHook(app, alone, keys.admin, query));
      expect(await selector(app, whole, keys.few, query), query).toEqual(await selector(app, few, keys.admin, query));
    }
  });
});

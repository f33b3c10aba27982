/**
 * Definition tokens are counted when tools are stored, not per request: per content hash in the
 * providers' shapes, per catalog row as that catalog received it, and summed per catalog by every
 * write (catalog API, tool search's `offered`). Expected counts are worked out here with the
 * tokenizer itself, from the tools as sent. On a database of its own: the recount after an upgrade
 * rewrites every catalog's sums.
 */
import { sql } from 'drizzle-orm';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceServerTools } from '../../src/catalog/catalog-service.js';
import { normalizeTool } from '../../src/catalog/tool-formats.js';
import { refreshDefinitionTokens } from '../../src/catalog/refresh-tokens.js';
import { countHere } from '../../src/catalog/tokens.js';
import { queryRows } from '../../src/store/database.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scratchDatabase, storeKind, type ScratchDatabase } from '../helpers/database.js';

interface Sent {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  raw: Record<string, unknown>;
}

const schema = (property: string) => ({
  type: 'object',
  properties: { [property]: { type: 'string', description: `The ${property}.` } },
  required: [property],
});
// One tool per shape toolsift accepts, so "as sent" differs from both providers' shapes.
const sent: Sent[] = [
  { name: 'get_weather', description: 'Get the current weather and the forecast for a city.', schema: schema('city') },
  { name: 'send_email', description: 'Send an email to a recipient, with an optional attachment.', schema: schema('to') },
  { name: 'search_web', description: 'Search the web for pages.', schema: schema('query') },
].map((tool, index) => ({
  ...tool,
  raw: [
    { name: tool.name, description: tool.description, input_schema: tool.schema },
    { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.schema } },
    { name: tool.name, description: tool.description, inputSchema: tool.schema },
  ][index]!,
}));

const count = (value: unknown) => countTokens(JSON.stringify(value));
const expected = (tools: Sent[]) => ({
  anthropic: tools.reduce((sum, tool) => sum + count({ name: tool.name, description: tool.description, input_schema: tool.schema }), 0),
  openai: tools.reduce((sum, tool) => sum + count({ type: 'function', name: tool.name, description: tool.description, parameters: tool.schema }), 0),
  as_sent: tools.reduce((sum, tool) => sum + count(tool.raw), 0),
});

describe('definition tokens', () => {
  let scratch: ScratchDatabase;
  let app: TestApp;
  const catalog = 'tokens';
  /** The catalog's tools after the first test. */
  let current: Sent[] = [];

  beforeAll(async () => {
    scratch = await scratchDatabase(storeKind(), 'toolsift_tokens');
    app = await startTestApp({}, { database: scratch.database });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await scratch?.drop();
  });

  const tokensOf = async () => (await app.request('GET', `/v1/catalogs/${catalog}`)).body;
  /** The sums recounted from the stored rows, independently of what the writes kept. */
  const recounted = async () =>
    (
      await queryRows<{ anthropic: number; openai: number; as_sent: number }>(
        scratch.database.db,
        sql`select sum(d.tokens_anthropic)::int as anthropic, sum(d.tokens_openai)::int as openai, sum(ct.tokens_as_sent)::int as as_sent
            from catalogs c join catalog_tools ct on ct.catalog_id = c.id join tool_documents d on d.hash = ct.hash where c.name = ${catalog}`,
      )
    )[0];

  it('are counted per tool as each provider receives it and summed per catalog by every write', async () => {
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: sent.map((tool) => tool.raw) })).status).toBe(200);
    const created = await tokensOf();
    expect(created.definition_tokens).toEqual(expected(sent));
    expect(created.definition_tokens.as_sent).not.toBe(created.definition_tokens.anthropic);

    // Upsert: one tool replaced (longer description), one added.
    const changed = { ...sent[0]!, description: `${sent[0]!.description} Temperatures in Celsius or Fahrenheit.` };
    changed.raw = { name: changed.name, description: changed.description, input_schema: changed.schema };
    const added: Sent = { name: 'read_file', description: 'Read a file from disk.', schema: schema('path'), raw: {} };
    added.raw = { name: added.name, description: added.description, input_schema: added.schema };
    expect((await app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [changed.raw, added.raw] })).status).toBe(200);
    let now = [changed, sent[1]!, sent[2]!, added];
    expect((await tokensOf()).definition_tokens).toEqual(expected(now));

    // The same content re-sent in another shape: no new revision, but its tokens as sent change.
    const revision = (await tokensOf()).revision;
    const reshaped = { ...sent[1]!, raw: { name: sent[1]!.name, description: sent[1]!.description, input_schema: sent[1]!.schema } };
    expect((await app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [reshaped.raw] })).status).toBe(200);
    now = [changed, reshaped, sent[2]!, added];
    expect(await tokensOf()).toMatchObject({ revision, definition_tokens: expected(now) });

    // A delete, then one server's tools replaced (an upstream's sync).
    expect((await app.request('DELETE', `/v1/catalogs/${catalog}/tools/search_web`)).status).toBe(204);
    now = [changed, reshaped, added];
    expect((await tokensOf()).definition_tokens).toEqual(expected(now));
    const upstream: Sent = { name: 'notes__add', description: 'Add a note.', schema: schema('text'), raw: {} };
    upstream.raw = { name: upstream.name, description: upstream.description, inputSchema: upstream.schema, server: 'notes' };
    await replaceServerTools({ db: scratch.database.db }, { tenant: 'default', name: catalog }, 'notes', [normalizeTool(upstream.raw)]);
    expect((await tokensOf()).definition_tokens).toEqual(expected([...now, upstream]));
    await replaceServerTools({ db: scratch.database.db }, { tenant: 'default', name: catalog }, 'notes', []);
    expect((await tokensOf()).definition_tokens).toEqual(expected(now));
    expect(await recounted()).toEqual(expected(now));
    current = now;
  });

  it('answer tool search: the catalog is what is offered, each result its stored count', async () => {
    const found = (await app.request('POST', '/v1/tool-search', { query: 'read a file from disk', catalog, max_results: 1 })).body;
    expect(found.results[0]).toMatchObject({
      name: 'read_file',
      estimated_tokens: count({ name: 'read_file', description: 'Read a file from disk.', input_schema: schema('path') }),
    });
    const totals = (await tokensOf()).definition_tokens;
    expect(found.tokens).toEqual({ offered: totals.as_sent, selected: found.results[0].estimated_tokens });
    const metric = async () => {
      const text = await (await fetch(`${app.url}/metrics`)).text();
      return Number(
        text
          .split('\n')
          .find((line) => line.startsWith('toolsift_tool_definition_tokens_total{endpoint="tool_search",tenant="default",kind="offered"}'))
          ?.split(' ')
          .at(-1) ?? 0,
      );
    };
    const before = await metric();
    expect((await app.request('POST', '/v1/tool-search', { query: 'read a file', catalog, format: 'openai' })).status).toBe(200);
    expect((await metric()) - before).toBe(totals.openai);
  });

  it('of tools stored by an older release are counted at start-up, and the sums set', async () => {
    const before = (await tokensOf()).definition_tokens;
    const db = scratch.database.db;
    await db.execute(sql`update tool_documents set tokens_anthropic = null, tokens_openai = null`);
    await db.execute(sql`update catalog_tools set tokens_as_sent = null`);
    await db.execute(sql`update catalogs set tokens_anthropic = 0, tokens_openai = 0, tokens_as_sent = 0`);
    const stored = await queryRows<{ documents: number; rows: number }>(
      db,
      sql`select (select count(*) from tool_documents)::int as documents, (select count(*) from catalog_tools)::int as rows`,
    );
    expect(await refreshDefinitionTokens(db, countHere, pino({ level: 'silent' }))).toBe(stored[0]!.documents + stored[0]!.rows);
    expect((await tokensOf()).definition_tokens).toEqual(before);
    expect(await refreshDefinitionTokens(db, countHere, pino({ level: 'silent' }))).toBe(0);
    // Rows an older release wrote during a rolling upgrade: no size, and their catalogs' sums without them.
    const bytes = async () =>
      (
        await queryRows<{ kept: number; measured: number }>(
          db,
          sql`select (select sum(definition_bytes) from catalogs)::float8 as kept, (select sum(octet_length(definition::text)) from catalog_tools)::float8 as measured`,
        )
      )[0]!;
    expect((await bytes()).kept).toBe((await bytes()).measured);
    await db.execute(sql`update catalog_tools set definition_bytes = null`);
    await db.execute(sql`update catalogs set definition_bytes = 0`);
    expect(await refreshDefinitionTokens(db, countHere, pino({ level: 'silent' }))).toBe(stored[0]!.rows);
    expect((await bytes()).kept).toBe((await bytes()).measured);
    expect((await bytes()).kept).toBeGreaterThan(0);
    // A whole replace sets the sums from its rows, whatever they held.
    await db.execute(sql`update catalogs set tokens_anthropic = 1, tokens_openai = 2, tokens_as_sent = 3`);
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: current.map((tool) => tool.raw) })).status).toBe(200);
    expect((await tokensOf()).definition_tokens).toEqual(expected(current));
  });

  /** toolsift_tool_definition_tokens_total of one endpoint, default tenant. */
  const tokenMetric = async (endpoint: string) => {
    const text = await (await fetch(`${app.url}/metrics`)).text();
    const value = (kind: string) =>
      Number(
        text
          .split('\n')
          .find((line) => line.startsWith(`toolsift_tool_definition_tokens_total{endpoint="${endpoint}",tenant="default",kind="${kind}"}`))
          ?.split(' ')
          .at(-1) ?? 0,
      );
    return { offered: value('offered'), selected: value('selected') };
  };
  /** Waits for the metric to move from `from` (the selector counts after it has answered). */
  const tokenMetricAfter = async (endpoint: string, from: { offered: number }) => {
    for (let tries = 0; tries < 100; tries++) {
      const now = await tokenMetric(endpoint);
      if (now.offered !== from.offered) return now;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`${endpoint}: no tokens counted`);
  };

  it('of inline tools are stored after the selector has answered, and its saving is in /metrics', async () => {
    const tool = { name: 'translate_text', description: 'Translate text between two languages.', parameters: schema('text') };
    const other = { name: 'convert_units', description: 'Convert a quantity between units of measurement.', parameters: schema('quantity') };
    const before = await tokenMetric('selector');
    const { status, body } = await app.request('POST', '/v1/tool-discovery/search', { query: 'translate this', tools: [tool, other], top_k: 1 });
    expect(status).toBe(200);
    expect(body.selected_names).toEqual(['translate_text']);
    const after = await tokenMetricAfter('selector', before);
    expect({ offered: after.offered - before.offered, selected: after.selected - before.selected }).toEqual({
      offered: count(tool) + count(other),
      selected: count(tool),
    });
    const want = {
      anthropic: count({ name: tool.name, description: tool.description, input_schema: tool.parameters }),
      openai: count({ type: 'function', name: tool.name, description: tool.description, parameters: tool.parameters }),
    };
    for (let tries = 0; ; tries++) {
      const rows = await queryRows<{ anthropic: number; openai: number }>(
        scratch.database.db,
        sql`select tokens_anthropic as anthropic, tokens_openai as openai from tool_documents where name = ${tool.name}`,
      );
      if (rows.length > 0) {
        expect(rows).toEqual([want]);
        break;
      }
      if (tries > 100) throw new Error('the selector did not store the tool');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('the selector over a stored catalog offers the whole catalog', async () => {
    const before = await tokenMetric('selector');
    const { body } = await app.request('POST', '/v1/tool-discovery/search', { query: 'read a file from disk', catalog, top_k: 1 });
    expect(body.selected_names).toEqual(['read_file']);
    const after = await tokenMetricAfter('selector', before);
    const totals = (await tokensOf()).definition_tokens;
    expect({ offered: after.offered - before.offered, selected: after.selected - before.selected }).toEqual({
      offered: totals.as_sent,
      selected: count({ name: 'read_file', description: 'Read a file from disk.', input_schema: schema('path') }),
    });
  });
});

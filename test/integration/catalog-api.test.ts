import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

const livemcp = readFileSync(new URL('../../../shared/eval/livemcpbench/catalog.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));

describe('catalog ingestion over REST', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('stores the 527-tool livemcpbench catalog sent as an MCP tools/list body and reads it back', async () => {
    const name = uniqueName('live');
    const body = {
      tools: livemcp.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.input_schema ?? { type: 'object' },
        tags: tool.tags,
        server: tool.server,
      })),
    };
    const put = await app.request('PUT', `/v1/catalogs/${name}`, body);
    expect(put.status).toBe(200);
    expect(put.body.catalog.tool_count).toBe(527);
    const get = await app.request('GET', `/v1/catalogs/${name}`);
    expect(get.body).toMatchObject({ name, tool_count: 527 });
  });
});

import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolsiftClient } from '../../client/index.js';
import { startService } from '../helpers/process.js';

const root = new URL('../..', import.meta.url).pathname;

const catalogTools = readFileSync(join(root, '../shared/eval/livemcpbench/catalog.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .slice(0, 40)
  .map((line) => JSON.parse(line));

describe('the generated client against a real server process', () => {
  let server: ChildProcess;
  let dataDir: string;
  let queuePrefix: string;
  let client: ReturnType<typeof createToolsiftClient>;

  beforeAll(async () => {
    queuePrefix = `e2e-${process.pid}-${Date.now()}`;
    dataDir = mkdtempSync(join(tmpdir(), 'toolsift-e2e-'));
    const service = await startService(
      { DATA_DIR: dataDir, API_KEYS: 'e2e-key:e2e', LOG_LEVEL: 'warn', EMBED_MODEL: 'use-lite', QUEUE_PREFIX: queuePrefix },
      90_000,
    );
    server = service.child;
    client = createToolsiftClient({ baseUrl: service.base, apiKey: 'e2e-key' });
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
    }
    rmSync(dataDir, { recursive: true, force: true });
    // With REDIS_URL (CI's second pass) the server queued on the shared Redis: leave nothing there.
    if (process.env.REDIS_URL && queuePrefix) {
      const redis = new Redis(process.env.REDIS_URL);
      const keys: string[] = [];
      for await (const batch of redis.scanStream({ match: `${queuePrefix}:*`, count: 500 })) keys.push(...(batch as string[]));
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  });

  it('pushes a catalog, waits for every embedding, searches it, and selects in both gateway shapes', async () => {
    const put = await client.PUT('/v1/catalogs/{catalog}', {
      params: { path: { catalog: 'e2e' } },
      body: { tools: catalogTools },
    });
    expect(put.error, JSON.stringify(put.error)).toBeUndefined();
    expect(put.data!.catalog.tool_count).toBe(catalogTools.length);

    const deadline = Date.now() + 120_000;
    let embedding: { done: number; total: number } | null | undefined;
    do {
      const { data } = await client.GET('/v1/catalogs/{catalog}', { params: { path: { catalog: 'e2e' } } });
      embedding = data!.embedding;
      if (embedding && embedding.done === embedding.total) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    } while (Date.now() < deadline);
    expect(embedding).toMatchObject({ model: 'use-lite', total: catalogTools.length, done: catalogTools.length, failed: 0 });

    const search = await client.POST('/v1/catalogs/{catalog}/search', {
      params: { path: { catalog: 'e2e' } },
      body: { query: 'dividends paid by a company', top_k: 3, explain: true },
    });
    expect(search.error).toBeUndefined();
    expect(search.data!.results).toHaveLength(3);
    expect(search.data!.results[0]!.name).toBe('yahoo-finance__get_dividends');
    expect(search.data!.results[0]!.explain?.vector).not.toBeNull();

    const names = catalogTools.map((tool) => tool.name as string);
    const old = await client.POST('/v1/tool-discovery/search', {
      body: {
        pattern: 'npmLatest',
        top_k: 2,
        tools: catalogTools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          definition: { name: tool.name, description: tool.description, input_schema: tool.input_schema ?? { type: 'object' } },
        })),
      },
    });
    expect(old.data!.selected_names[0]).toBe('npm-sentinel-mcp__npmLatest');
    expect(old.data!.selected_names.length).toBeLessThanOrEqual(2);

    const newer = await client.POST('/v1/tool-discovery/search', {
      body: {
        query: 'find an icon for my app',
        max_tools: 3,
        tools: catalogTools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.input_schema ?? undefined })),
        compression_model_name: 'tdc_coldbrew_v1',
      },
    });
    expect(newer.data!.success).toBe(true);
    expect(newer.data!.data.relevant_tools).toEqual(newer.data!.selected_names);
    expect(newer.data!.selected_names).toHaveLength(3);
    for (const name of newer.data!.selected_names) expect(names).toContain(name);

    const baseUrl = new URL(put.response.url).origin;
    const unauthorized = await createToolsiftClient({ baseUrl, apiKey: 'wrong' }).GET('/v1/catalogs');
    expect(unauthorized.response.status).toBe(401);
    expect(unauthorized.error?.error.code).toBe('unauthorized');
  });

  it('is generated from the current openapi.yaml (regenerating changes nothing)', () => {
    const out = join(dataDir, 'schema.d.ts');
    const generated = spawnSync(join(root, 'node_modules/.bin/openapi-typescript'), ['openapi.yaml', '--default-non-nullable=false', '-o', out], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(generated.status, generated.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(root, 'client/schema.d.ts'), 'utf8'));
  });
});

/**
 * The generated client's request types are closed where the server is strict: a misspelled field
 * (`topK` for `top_k`) is a compile error in the caller's code (checked by `tsc` in `npm test`
 * through the @ts-expect-error lines below: an open schema would make them unused, which fails),
 * and the server answers the same body with a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { operations } from '../../client/schema.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

type Body<K extends keyof operations> = operations[K] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

const search: Body<'searchCatalog'> = { query: 'read a file', top_k: 3 };
// @ts-expect-error `topK` is not a field of the catalog search (the server rejects it).
const searchMisspelled: Body<'searchCatalog'> = { query: 'read a file', topK: 3 };
const toolSearch: Body<'searchTools'> = { query: 'read a file', tools: [{ name: 'read_file' }], max_results: 2 };
// @ts-expect-error `maxResults` is not a field of tool search.
const toolSearchMisspelled: Body<'searchTools'> = { query: 'read a file', tools: [{ name: 'read_file' }], maxResults: 2 };

describe('the generated client types', () => {
  let app: TestApp;
  const catalog = uniqueName('typed');
  beforeAll(async () => {
    app = await startTestApp();
    await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [{ name: 'read_file', description: 'Read a file.' }] });
  });
  afterAll(() => app?.close());

  it('accept what the server accepts and reject, at compile time, what it rejects', async () => {
    expect((await app.request('POST', `/v1/catalogs/${catalog}/search`, search)).status).toBe(200);
    const rejected = await app.request('POST', `/v1/catalogs/${catalog}/search`, searchMisspelled);
    expect(rejected.status).toBe(400);
    expect(rejected.body.error.message).toContain('topK');
    expect((await app.request('POST', '/v1/tool-search', toolSearch)).status).toBe(200);
    expect((await app.request('POST', '/v1/tool-search', toolSearchMisspelled)).status).toBe(400);
  });
});

/**
 * Tenant hygiene: embedding jobs are answered only to a tenant whose catalogs hold their tools,
 * and `new_documents` counts what is new to the caller's catalogs, never whether another tenant
 * already stored an identical tool (an existence oracle).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

describe('tenant hygiene', () => {
  let app: TestApp;
  const a = { authorization: 'Bearer key-a' };
  const b = { authorization: 'Bearer key-b' };
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: `key-a:${uniqueName('tenant-a')},key-b:${uniqueName('tenant-b')}`, EMBED_MODEL: 'use-lite' });
  });
  afterAll(() => app.close());

  it('scopes jobs and new_documents to the tenant', async () => {
    const tool = { name: uniqueName('secret_tool'), description: 'Only tenant A knows this tool exists.' };
    const first = await app.request('PUT', `/v1/catalogs/${uniqueName('cat-a')}`, { tools: [tool] }, a);
    expect(first.body.new_documents).toBe(1);
    const [job] = first.body.job_ids as string[];
    expect(job).toBeDefined();
    expect((await app.request('GET', `/v1/jobs/${job}`, undefined, a)).status).toBe(200);
    expect((await app.request('GET', `/v1/jobs/${job}`, undefined, b)).status).toBe(404);
    // Tenant B pushing the identical tool learns nothing about A: it is new to B.
    const second = await app.request('PUT', `/v1/catalogs/${uniqueName('cat-b')}`, { tools: [tool] }, b);
    expect(second.body.new_documents).toBe(1);
    // ...and is new no more to B in another of its catalogs.
    const third = await app.request('PUT', `/v1/catalogs/${uniqueName('cat-b2')}`, { tools: [tool] }, b);
    expect(third.body.new_documents).toBe(0);
  });
});

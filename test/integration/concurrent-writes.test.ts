/**
 * Catalog writes racing each other (issue: hard edges §4). On PostgreSQL, writes run in parallel
 * transactions: the same never-seen tools in different orders, to catalogs of two tenants, and a
 * tool DELETE racing a PUT that keeps the tool, must all succeed (no deadlock as a 500, no 404 for
 * a tool present in every committed state). On PGlite they serialize; the answers must be the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { seededRandom } from '../../src/eval/seeded-random.js';

describe('concurrent catalog writes', () => {
  let app: TestApp;
  const tenants = [{ authorization: 'Bearer cw-a' }, { authorization: 'Bearer cw-b' }];
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: `cw-a:${uniqueName('cw-a')},cw-b:${uniqueName('cw-b')}` });
  });
  afterAll(() => app?.close());

  it('the same new tools in different orders, to many catalogs of two tenants at once: every write succeeds', async () => {
    const random = seededRandom(3);
    for (let round = 0; round < 3; round++) {
      const tools = Array.from({ length: 40 }, (_, i) => ({ name: `t${i}`, description: `${uniqueName('fresh')} tool ${i} of round ${round}` }));
      const writes = Array.from({ length: 12 }, (_, i) => {
        const shuffled = [...tools].sort(() => random() - 0.5);
        const path = `/v1/catalogs/${uniqueName(`cw${i}`)}${i % 2 ? '/tools' : ''}`;
        return app.request(i % 2 ? 'POST' : 'PUT', path, { tools: shuffled }, tenants[i % 2]);
      });
      const answers = await Promise.all(writes);
      expect(
        answers.map((answer) => answer.status),
        JSON.stringify(answers.find((answer) => answer.status !== 200)?.body),
      ).toEqual(answers.map(() => 200));
    }
  });

  it('a DELETE of a tool that every committed state holds always finds it, while PUTs and POSTs of the catalog race it', async () => {
    const catalog = uniqueName('cw-race');
    const base = Array.from({ length: 30 }, (_, i) => ({ name: `keep_${i}`, description: `Tool ${i} that stays.` }));
    const target = { name: 'target', description: 'The tool deleted and put back.' };
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [...base, target] }, tenants[0])).status).toBe(200);
    for (let round = 0; round < 60; round++) {
      const changed = base.map((tool) => ({ ...tool, description: `${tool.description} Round ${round}.` }));
      const [put, post, removed] = await Promise.all([
        app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [...changed, target] }, tenants[0]),
        app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [changed[round % changed.length]!] }, tenants[0]),
        app.request('DELETE', `/v1/catalogs/${catalog}/tools/target`, undefined, tenants[0]),
      ]);
      expect([put.status, post.status], JSON.stringify([put.body, post.body])).toEqual([200, 200]);
      expect(removed.status, JSON.stringify(removed.body)).toBe(204);
      // Put it back for the next round (the DELETE may have run before or after the PUT).
      expect((await app.request('POST', `/v1/catalogs/${catalog}/tools`, { tools: [target] }, tenants[0])).status).toBe(200);
    }
  });
});

/**
 * Messages that name the fix: what a newcomer sees when PostgreSQL is unreachable or its database
 * missing, when the ingest CLI cannot reach the service, for --help, and for a key sent without
 * the Bearer scheme.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

async function service(env: Record<string, string>, args: string[] = []): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      cwd: root,
      env: { ...process.env, EMBED_MODEL: 'none', REDIS_URL: '', LOG_LEVEL: 'warn', ...env },
      timeout: 60_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe('messages that name the fix', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'msg-key:msg-tenant' });
  });
  afterAll(() => app.close());

  it('--help prints usage and exits 0', async () => {
    const { code, output } = await service({}, ['--help']);
    expect(code).toBe(0);
    expect(output).toContain('usage: npm start');
  });

  it('an unreachable PostgreSQL names DATABASE_URL; a missing database says to create it', async () => {
    const port = await freePort();
    const refused = await service({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/toolsift`, DB_TIMEOUT_MS: '2000' });
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/DATABASE_URL postgres:\/\/postgres@127\.0\.0\.1:\d+\/toolsift: cannot reach PostgreSQL/);
    const server = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    const missing = await service({ DATABASE_URL: `postgres://${server.username || 'postgres'}@${server.host}/toolsift_does_not_exist_42` });
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('createdb toolsift_does_not_exist_42');
  }, 90_000);

  it('the ingest CLI names the URL and the cause when the service is not there', async () => {
    const port = await freePort();
    const failed = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/ingest.ts', '--catalog', 'x', '--url', `http://127.0.0.1:${port}`, '../shared/eval/livemcpbench/catalog.jsonl'],
      { cwd: root },
    ).then(
      () => '',
      (error: { stderr: string }) => error.stderr,
    );
    expect(failed).toContain('ECONNREFUSED');
    expect(failed).toContain(`is toolsift running at http://127.0.0.1:${port}?`);
    const help = await run(process.execPath, ['--import', 'tsx', 'src/cli/ingest.ts', '--help'], { cwd: root });
    expect(help.stdout).toContain('usage: npm run ingest');
  }, 60_000);

  it('a key sent without "Bearer" says so', async () => {
    const response = await app.request('GET', '/v1/catalogs', undefined, { authorization: 'msg-key' });
    expect(response.status).toBe(401);
    expect(response.body.error.message).toContain('without the Bearer scheme');
    expect((await app.request('GET', '/v1/catalogs', undefined, { authorization: 'Bearer msg-key' })).status).toBe(200);
  });
});

import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createHttpServer } from '../../src/http/server.js';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { createDeps, type Deps, type DepsOverrides } from '../../src/deps.js';
import { createApp } from '../../src/http/app.js';
import { testDatabase } from './database.js';
import { TEST_SECRETS_KEY } from './process.js';
import { assertMatchesSpec } from './openapi.js';

export interface TestApp {
  url: string;
  deps: Deps;
  close(): Promise<void>;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export { TEST_SECRETS_KEY };

/** A JSON-RPC answer sent over MCP's Streamable HTTP: the JSON body, or the last `data:` line of an event stream. */
export function rpcAnswer(response: TestResponse): any {
  return (
    response.body ??
    JSON.parse(
      response.text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .at(-1)!
        .slice(6),
    )
  );
}

/** The real app on a real port over the shared test database; `env` overrides config values. */
export async function startTestApp(env: Record<string, string> = {}, overrides: DepsOverrides = {}): Promise<TestApp> {
  // A loaded CI machine can take longer than the selector's 100 ms budget to embed a query; tests
  // that check hybrid answers must not fall back to BM25 by chance. The budget's own test sets it.
  // Test apps share one database with every other test of the run: reading all of its catalogs at
  // start (CATALOG_WARMUP) is left to the tests of that reading, over databases of their own.
  const config: Config = loadConfig({ EMBED_MODEL: 'none', SELECTOR_BUDGET_MS: '60000', CATALOG_WARMUP: 'false', SECRETS_KEY: TEST_SECRETS_KEY, ...env });
  const deps = await createDeps(config, { database: await testDatabase(), logger: pino({ level: 'silent' }), ...overrides });
  const app = createApp(deps);
  // The server as main.ts builds it (request and header timeouts), on a free port.
  const server: Server = createHttpServer(config, app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    deps,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await deps.close();
    },
    async request(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${url}${path}`, init);
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      // Every response a test sees is also checked against openapi.yaml.
      if (response.headers.get('content-type')?.includes('application/json') || response.status === 204) {
        assertMatchesSpec(method, path, response.status, parsed);
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
  };
}

/** Waits until every tool of `catalog` has its vector: rankings that mix the two lists are only stable then. */
export async function untilEmbedded(app: TestApp, catalog: string, headers: Record<string, string> = {}, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await app.request('GET', `/v1/catalogs/${catalog}`, undefined, headers);
    if (body?.embedding && body.embedding.done === body.embedding.total) return;
    if (Date.now() > deadline) throw new Error(`embeddings of ${catalog} not done after ${timeoutMs} ms: ${JSON.stringify(body?.embedding)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

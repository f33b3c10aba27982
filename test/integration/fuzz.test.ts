/**
 * Seeded fuzzing over every operation in openapi.yaml (issue: hard edges §8): bodies sampled from
 * each request schema and then broken (wrong types, missing and unknown keys, huge and non-finite
 * numbers, NUL characters, lone surrogates, deep nesting, truncated JSON, other content types),
 * hostile path segments (bad percent-escapes, NUL, very long names) and query strings. Every answer
 * must be below 500 (a documented 503 for a dependency aside), and every JSON answer must match the
 * spec for its status (test/helpers/openapi.ts checks each response), so a 4xx is in the error shape.
 *
 *   npm run fuzz                      # FUZZ_CASES=2000 per operation, FUZZ_SEED=1
 *   FUZZ_CASES=50 npx vitest run test/integration/fuzz.test.ts   # what `npm test` runs
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';
import { HOSTILE_VALUES, mutate } from '../helpers/mutate.js';

const CASES = Number(process.env.FUZZ_CASES ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? 1);
const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8'));

const resolve = (node: any): any =>
  node?.$ref
    ? resolve(
        node.$ref
          .split('/')
          .slice(1)
          .reduce((at: any, key: string) => at[key], spec),
      )
    : node;

/**
 * A value that satisfies `schema` in a simple way (a starting point for mutations): with `random`,
 * a random branch of each oneOf/anyOf (the tool shapes, the request versions) and sometimes its
 * optional properties too; without, the first branch and the required properties.
 */
function sample(schema: any, depth = 0, random?: () => number): unknown {
  schema = resolve(schema);
  if (!schema || depth > 6) return null;
  if (schema.enum) return schema.enum[random ? Math.floor(random() * schema.enum.length) : 0];
  if (schema.default !== undefined) return schema.default;
  if (schema.oneOf || schema.anyOf) {
    const branches = schema.oneOf ?? schema.anyOf;
    return sample(branches[random ? Math.floor(random() * branches.length) : 0], depth + 1, random);
  }
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part: any) => sample(part, depth + 1, random)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const optional = Object.keys(schema.properties ?? {}).filter((key) => !(schema.required ?? []).includes(key));
      const keys = random
        ? [...(schema.required ?? []), ...optional.filter(() => random() < 0.5)]
        : (schema.required ?? Object.keys(schema.properties ?? {}).slice(0, 2));
      for (const key of keys) out[key] = sample(schema.properties?.[key] ?? {}, depth + 1, random);
      return out;
    }
    case 'array':
      return [sample(schema.items ?? {}, depth + 1, random)];
    case 'integer':
      return Math.max(1, schema.minimum ?? 1);
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'string':
      return 'read a file';
    default:
      return { name: 'read_file', description: 'Read a file.' };
  }
}

const nasty: unknown[] = [
  ...HOSTILE_VALUES,
  'x'.repeat(20_000),
  Array.from({ length: 300 }, (_, i) => i),
  'read_file',
  { name: 'x' },
  { type: 'function', function: { name: 'f' } },
];
const rawBodies = [
  '',
  '{',
  '[1,',
  '{"query": "x"',
  'null',
  '"text"',
  '{"top_k": 1e309, "query": "x"}',
  '{"query": "\\ud800"}',
  '{"query": "a\\u0000"}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  '{"a":1,"a":2}',
  '\uFEFF{}',
];
const segments = ['%ZZ', '%E0%A4%A', '%FF', '%ED%A0%80', '%00', 'a%00b', 'x'.repeat(600), '..', '%2F', 'name with space', '😀', 'ok-name', '-', '_'];

/** Unknown keys a mutation may add to an object. */
const extraKeys = ['topK', 'extra', 'schema', 'inputschema', '$ref', ''];

interface Operation {
  method: string;
  path: string;
  body?: any;
  query: string[];
}

const operations: Operation[] = Object.entries<any>(spec.paths).flatMap(([path, item]) =>
  ['get', 'put', 'post', 'delete'].flatMap((method) => {
    const op = item[method];
    if (!op) return [];
    const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
    return [
      {
        method: method.toUpperCase(),
        path,
        body: op.requestBody?.content?.['application/json']?.schema,
        query: parameters.filter((parameter: any) => parameter.in === 'query').map((parameter: any) => parameter.name as string),
      },
    ];
  }),
);

describe('fuzzing every operation of openapi.yaml', () => {
  let app: TestApp;
  const catalog = uniqueName('fuzz');
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'fuzz-key:fuzz-tenant' });
    const put = await app.request(
      'PUT',
      `/v1/catalogs/${catalog}`,
      {
        tools: [
          { name: 'read_file', description: 'Read a file.' },
          { name: 'web_search', description: 'Search the web.' },
        ],
      },
      { authorization: 'Bearer fuzz-key' },
    );
    expect(put.status).toBe(200);
  });
  afterAll(() => app?.close());

  it(`answers ${CASES} broken requests per operation below 500, each JSON answer as the spec says (seed ${SEED})`, { timeout: 600_000 }, async () => {
    const random = seededRandom(SEED);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const failures: string[] = [];
    for (const operation of operations) {
      for (let i = 0; i < CASES; i++) {
        // Path parameters: mostly the real catalog (so handlers go past the lookup), else hostile segments.
        const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
          random() < 0.6 ? (name === 'catalog' ? catalog : name === 'name' ? 'read_file' : 'job-1') : pick(segments),
        );
        const query =
          operation.query.length && random() < 0.7
            ? `?${operation.query.map((name) => `${name}=${pick(['1', '0', '-5', '1e309', 'abc', '%ZZ', '', 'x'.repeat(300), 'a%00'])}`).join('&')}`
            : '';
        const headers: Record<string, string> = random() < 0.9 ? { authorization: 'Bearer fuzz-key' } : {};
        let body: string | undefined;
        if (operation.method !== 'GET' && (operation.body || random() < 0.1)) {
          const roll = random();
          const start = sample(operation.body ?? {}, 0, random() < 0.5 ? random : undefined);
          body = roll < 0.15 ? pick(rawBodies) : JSON.stringify(roll < 0.25 ? start : mutate(start, random, nasty, extraKeys));
          if (random() < 0.05) headers['content-type'] = pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']);
        }
        if (operation.path.startsWith('/mcp')) {
          headers.accept = 'application/json, text/event-stream';
          headers['mcp-protocol-version'] = pick(['2025-11-25', '2026-07-28', 'bogus']);
        }
        const label = `${operation.method} ${path}${query} ${body?.slice(0, 120) ?? ''}`;
        try {
          const response = await app.request(operation.method, `${path}${query}`, body, headers);
          if (response.status >= 500 && !(response.status === 503 && response.body?.error?.code === 'service_unavailable')) {
            failures.push(`${response.status} ${label}: ${response.text.slice(0, 200)}`);
          }
        } catch (error) {
          // A spec mismatch (test/helpers/openapi.ts) or a broken connection.
          failures.push(`${label}: ${(error as Error).message.slice(0, 300)}`);
        }
      }
    }
    expect(failures.length, `${failures.length} failures:\n${failures.slice(0, 25).join('\n')}`).toBe(0);
  });
});

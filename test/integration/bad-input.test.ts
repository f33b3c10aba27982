/**
 * Bad input gets a clear 400 in the error shape, never a 500, on both stores: corrupt compressed
 * bodies, nesting past the documented depth, NUL characters, malformed percent-escapes, lone
 * UTF-16 surrogates, numbers out of range.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/input-safety.js';
import { SLICED_PARSE_BYTES } from '../../src/http/json-body.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniqueName } from '../helpers/database.js';

describe('bad input is a 400, never a 500', () => {
  let app: TestApp;
  const catalog = uniqueName('bad-input');
  beforeAll(async () => {
    app = await startTestApp();
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools: [{ name: 'read_file', description: 'Read a file.' }] })).status).toBe(200);
  });
  afterAll(() => app.close());

  const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
  const expect400 = async (response: Response | Promise<Response>, pattern: RegExp) => {
    const answer = await response;
    const body = (await answer.json()) as { error: { code: string; message: string } };
    expect(answer.status, JSON.stringify(body)).toBe(400);
    expect(body.error.message).toMatch(pattern);
  };

  it('corrupt, truncated or uncompressed gzip and deflate bodies', async () => {
    const search = `/v1/catalogs/${catalog}/search`;
    await expect400(post(search, Buffer.from('{"query":"x"}'), { 'content-encoding': 'gzip' }), /decompressed/);
    await expect400(post(search, gzipSync('{"query":"read a file"}').subarray(0, 12), { 'content-encoding': 'gzip' }), /decompressed/);
    await expect400(post(search, Buffer.from('not deflate'), { 'content-encoding': 'deflate' }), /decompressed/);
    await expect400(post('/v1/tool-discovery/search', Buffer.from('garbage'), { 'content-encoding': 'gzip' }), /decompressed/);
    const ok = await post(search, gzipSync('{"query":"read a file"}'), { 'content-encoding': 'gzip' });
    expect(ok.status).toBe(200);
  });

  it(`nesting deeper than ${MAX_JSON_DEPTH} levels, in a catalog write and in the selector`, async () => {
    const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const put = await fetch(`${app.url}/v1/catalogs/${catalog}-deep`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: `{"tools":[{"name":"x","inputSchema":${deep(5000)}}]}`,
    });
    expect(put.status).toBe(400);
    expect(((await put.json()) as { error: { message: string } }).error.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
    await expect400(post('/v1/tool-discovery/search', `{"pattern":"x","tools":[{"name":"x","definition":${deep(3000)}}]}`), /deeper than/);
    expect((await app.request('GET', `/v1/catalogs/${catalog}-deep`)).status).toBe(404);
    const fine = await fetch(`${app.url}/v1/catalogs/${catalog}-fine`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: `{"tools":[{"name":"x","inputSchema":${deep(40)}}]}`,
    });
    expect(fine.status).toBe(200);
  });

  it('NUL characters in a query, tags, a tool name in the path and a cursor', async () => {
    await expect400(post(`/v1/catalogs/${catalog}/search`, JSON.stringify({ query: 'a\u0000b' })), /query: contains a NUL/);
    await expect400(post(`/v1/catalogs/${catalog}/search`, JSON.stringify({ query: 'a', tags: ['\u0000'] })), /tags\[0\]: contains a NUL/);
    await expect400(post('/v1/tool-discovery/search', JSON.stringify({ pattern: 'a\u0000', tools: [{ name: 'x' }] })), /NUL/);
    await expect400(fetch(`${app.url}/v1/catalogs/${catalog}/tools/a%00b`), /NUL/);
    const cursor = Buffer.from('a\u0000', 'utf8').toString('base64url');
    await expect400(fetch(`${app.url}/v1/catalogs/${catalog}/tools?cursor=${cursor}`), /NUL|cursor/);
  });

  it('malformed percent-escapes in catalog and tool paths', async () => {
    for (const malformed of ['%E0%A4%A', '%ZZ', '%FF', '%ED%A0%80']) {
      const response = await fetch(`${app.url}/v1/catalogs/${catalog}/tools/${malformed}`);
      expect(response.status, malformed).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('validation_failed');
      expect((await fetch(`${app.url}/v1/catalogs/${malformed}`)).status, malformed).toBe(400);
    }
  });

  it('lone surrogates are rejected, never stored as U+FFFD', async () => {
    const response = await fetch(`${app.url}/v1/catalogs/${catalog}-sur`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"tools":[{"name":"ls\\ud800x"},{"name":"ls\\udc00x"}]}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('surrogate');
    expect((await app.request('GET', `/v1/catalogs/${catalog}-sur`)).status).toBe(404);
  });

  it('a catalog write over SLICED_PARSE_BYTES (parsed in slices) is read and refused exactly as a small one', async () => {
    const tools = Array.from({ length: 2000 }, (_, index) => ({
      name: `large_${index}`,
      description: `Reads "record" ${index} [of many], with {braces} and \\ backslashes.`,
      inputSchema: { type: 'object', properties: { id: { type: 'integer' } } },
    }));
    const put = (name: string, body: string, charset = '') =>
      fetch(`${app.url}/v1/catalogs/${name}`, { method: 'PUT', headers: { 'content-type': `application/json${charset}` }, body });
    const large = JSON.stringify({ tools });
    expect(Buffer.byteLength(large)).toBeGreaterThan(SLICED_PARSE_BYTES);
    for (const [name, body] of [
      [`${catalog}-large`, large],
      [`${catalog}-bare`, `\n${JSON.stringify(tools, null, 1)}\n`],
    ] as const) {
      const answer = await put(name, body, '; charset=utf-8');
      expect(answer.status, await answer.clone().text()).toBe(200);
      expect(((await answer.json()) as { tools_written: number }).tools_written).toBe(2000);
      const stored = await app.request('GET', `/v1/catalogs/${name}/tools/large_1999?detail=full`);
      expect(stored.body).toMatchObject({ name: 'large_1999', description: tools[1999]!.description });
    }
    // Chunked and compressed bodies, whose size is known only once read, likewise.
    const chunked = (body: Uint8Array) =>
      new ReadableStream<Uint8Array>({
        start: (controller) => (controller.enqueue(body.subarray(0, 1000)), controller.enqueue(body.subarray(1000)), controller.close()),
      });
    const putChunked = (name: string, body: Uint8Array, headers: Record<string, string> = {}) =>
      fetch(`${app.url}/v1/catalogs/${name}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: chunked(body),
        duplex: 'half',
      } as RequestInit);
    for (const [name, answer] of [
      [`${catalog}-chunked`, await putChunked(`${catalog}-chunked`, Buffer.from(large))],
      [`${catalog}-gzip`, await putChunked(`${catalog}-gzip`, gzipSync(large), { 'content-encoding': 'gzip' })],
    ] as const) {
      expect(answer.status, await answer.clone().text()).toBe(200);
      expect(((await app.request('GET', `/v1/catalogs/${name}/tools/large_1999?detail=full`)).body as { name: string }).name).toBe('large_1999');
    }
    // Refused, with the field named at its place in the body, and nothing written.
    const withNul = JSON.stringify({ tools: tools.map((tool, index) => (index === 1500 ? { ...tool, description: 'a\u0000b' } : tool)) });
    await expect400(put(`${catalog}-large-nul`, withNul), /tools\[1500\]\.description: contains a NUL/);
    await expect400(putChunked(`${catalog}-chunked-nul`, Buffer.from(withNul)), /tools\[1500\]\.description: contains a NUL/);
    expect((await app.request('GET', `/v1/catalogs/${catalog}-chunked-nul`)).status).toBe(404);
    await expect400(put(`${catalog}-large-bad`, `${large.slice(0, -2)},]}`), /not valid JSON/);
    for (const name of [`${catalog}-large-nul`, `${catalog}-large-bad`]) expect((await app.request('GET', `/v1/catalogs/${name}`)).status).toBe(404);
  });

  it('numbers out of range and non-numbers say so plainly', async () => {
    await expect400(post(`/v1/catalogs/${catalog}/search`, '{"query":"a","top_k":1e309}'), /out of range/);
    await expect400(fetch(`${app.url}/v1/catalogs/${catalog}/tools?limit=abc`), /expected a number/);
  });
});

describe('input that is accepted but degraded says so', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('a key its shape does not define comes back as a warning naming the tool and the key', async () => {
    const name = uniqueName('warnings');
    const put = await app.request('PUT', `/v1/catalogs/${name}`, {
      tools: [
        { name: 'fine', description: 'ok', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
        { name: 'misspelt', description: 'Search things.', schema: { type: 'object', properties: { q: { type: 'string' } } } },
      ],
    });
    expect(put.status).toBe(200);
    expect(put.body.warnings).toEqual([{ index: 1, name: 'misspelt', key: 'schema', message: expect.stringContaining('did you mean inputSchema') }]);
    const clean = await app.request('POST', `/v1/catalogs/${name}/tools`, { tools: [{ name: 'other', inputSchema: { type: 'object' } }] });
    expect(clean.body.warnings).toBeUndefined();
  });
});

describe('input of extreme shape is answered, not a crash or a stall', () => {
  let app: TestApp;
  const catalog = uniqueName('extreme');
  const word = (text: string, length: number) => text.repeat(Math.ceil(length / text.length)).slice(0, length);
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('a tool with a 200,000-letter word is stored and counted (the tokenizer is quadratic in a word, counted in pieces)', async () => {
    const tools = [
      { name: 'blob', description: `${word('x', 200_000)} ${word('漢', 50_000)}` },
      { name: 'get_weather', description: 'Weather forecast for a city.' },
    ];
    const put = await app.request('PUT', `/v1/catalogs/${catalog}`, { tools });
    expect(put.status).toBe(200);
    const summary = (await app.request('GET', `/v1/catalogs/${catalog}`)).body;
    expect(summary.definition_tokens.anthropic).toBeGreaterThan(75_000);
  });

  it("a definition holding a special token's text is stored and counted, in a catalog and in the selector (the tokenizer threw on it)", async () => {
    const tool = { name: 'eot', description: 'Splits documents at <|endoftext|> markers.' };
    const name = uniqueName('special');
    const put = await app.request('PUT', `/v1/catalogs/${name}`, { tools: [tool] });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await app.request('GET', `/v1/catalogs/${name}`)).body.definition_tokens.anthropic).toBeGreaterThan(10);
    const selected = await app.request('POST', '/v1/tool-discovery/search', {
      pattern: 'split documents',
      top_k: 1,
      tools: [tool, { name: 'read_file', description: 'Read a file.' }],
    });
    expect(selected.status, JSON.stringify(selected.body)).toBe(200);
    expect(selected.body.selected_names).toEqual(['eot']);
  });

  it('a query of one 9,980-letter word answers on every path (typo matching reads words of at most 40 letters)', async () => {
    const query = word('weatherx', 9_980);
    for (const mode of ['bm25', 'hybrid']) {
      const search = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query, mode });
      expect(search.status, JSON.stringify(search.body)).toBe(200);
    }
    const found = await app.request('POST', '/v1/tool-search', { query, catalog });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    const selected = await app.request('POST', '/v1/tool-discovery/search', {
      pattern: `${query} wether forcast`,
      top_k: 1,
      tools: [
        { name: 'get_weather', description: 'Weather forecast for a city.' },
        { name: 'read_file', description: 'Read a file.' },
      ],
    });
    expect(selected.status, JSON.stringify(selected.body)).toBe(200);
    // The short misspelt words next to it are still corrected.
    expect(selected.body.selected_names).toEqual(['get_weather']);
  });
});

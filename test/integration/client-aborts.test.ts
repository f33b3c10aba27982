/**
 * Clients that go away (issue: hard edges §3): a client that closes its connection mid-body, or
 * after sending a large selector body that is parsed in slices, is not a service fault: it is
 * logged at info without a stack, nothing is logged as an error, and the service answers the next
 * request. The same for `POST /v1/tool-search`, which reads its body raw as the selector does.
 * Raw sockets, since fetch cannot stop mid-body.
 */
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLICED_PARSE_BYTES } from '../../src/http/json-body.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/assertions.js';
import { uniqueName } from '../helpers/database.js';

interface LogLine {
  level: number;
  clientClosed?: boolean;
  newDocuments?: number;
  msg: string;
  err?: unknown;
  path?: string;
  status?: number;
}

/** Sends `head` and `body` on a new connection, then closes it without reading the answer. */
async function sendAndLeave(url: string, head: string, body: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  await new Promise<void>((resolve) => socket.write(head + body, () => resolve()));
  socket.destroy();
}

describe('clients that go away', () => {
  let app: TestApp;
  const lines: LogLine[] = [];
  const errors = () => lines.filter((line) => line.level >= 50);
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const text of String(chunk).split('\n')) if (text.trim()) lines.push(JSON.parse(text) as LogLine);
        done();
      },
    });
    app = await startTestApp({}, { logger: pino({ level: 'info' }, sink) });
  });
  afterAll(() => app?.close());

  it('mid-body: logged at info without a stack, no error line, and the next request answers', async () => {
    const catalog = uniqueName('aborted');
    const body = JSON.stringify([{ name: 'half_sent', description: 'never arrives whole' }]);
    const { hostname } = new URL(app.url);
    await sendAndLeave(
      app.url,
      `PUT /v1/catalogs/${catalog} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1000}\r\n\r\n`,
      body,
    );
    await until('the abort logged', () => lines.some((line) => line.msg === 'client aborted the request'));
    const logged = lines.find((line) => line.msg === 'client aborted the request')!;
    expect(logged.level).toBe(30);
    expect(logged.err).toBeUndefined();
    expect(errors()).toEqual([]);
    await until('the request logged', () => lines.some((line) => line.msg === 'request' && line.path === `/v1/catalogs/${catalog}`));
    expect(lines.find((line) => line.msg === 'request' && line.path === `/v1/catalogs/${catalog}`)).toMatchObject({
      level: 30,
      status: 499,
      clientClosed: true,
    });
    expect((await app.request('GET', `/v1/catalogs/${catalog}`)).status).toBe(404);
    expect((await app.request('GET', '/healthz')).status).toBe(200);
  });

  it('after a large selector body parsed in slices: no error line, its tools are kept, and the next turn answers from them', async () => {
    const tag = uniqueName('gone');
    const tools = Array.from({ length: 1_500 }, (_, i) => ({
      type: 'function',
      function: {
        name: `${tag}_tool_${i}`,
        description: `Looks up record ${i} of the ${tag} archive by its identifier and returns its fields as JSON.`,
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
      },
    }));
    const body = JSON.stringify({ pattern: 'look up an archive record', top_k: 5, tools });
    expect(Buffer.byteLength(body)).toBeGreaterThan(SLICED_PARSE_BYTES);
    const { hostname } = new URL(app.url);
    const before = lines.length;
    await sendAndLeave(
      app.url,
      `POST /v1/tool-discovery/search HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      body,
    );
    // The selection is made and logged although nobody waits for it; its tools are then written.
    await until('the selection logged', () => lines.slice(before).some((line) => line.msg === 'tool selection'));
    expect(lines.slice(before).find((line) => line.msg === 'tool selection')).toMatchObject({ level: 30, newDocuments: 1_500 });
    await until('the request logged', () => lines.slice(before).some((line) => line.msg === 'request' && line.path === '/v1/tool-discovery/search'));
    expect(lines.slice(before).find((line) => line.msg === 'request' && line.path === '/v1/tool-discovery/search')).toMatchObject({
      level: 30,
      status: 499,
      clientClosed: true,
    });
    expect(errors()).toEqual([]);
    const beforeNext = lines.length;
    const next = await app.request('POST', '/v1/tool-discovery/search', body);
    expect(next.status).toBe(200);
    expect(next.body.selected_names).toHaveLength(5);
    await until('the next selection logged', () => lines.slice(beforeNext).some((line) => line.msg === 'tool selection'));
    expect(lines.slice(beforeNext).find((line) => line.msg === 'tool selection')).toMatchObject({ newDocuments: 0 });
    expect(errors()).toEqual([]);
  });
  it('tool-search, mid-body and after a large inline list: no error line, the list is remembered, and the next call answers', async () => {
    const tag = uniqueName('hook');
    const tools = Array.from({ length: 1_500 }, (_, i) => ({
      name: `${tag}_tool_${i}`,
      description: `Looks up record ${i} of the ${tag} ledger by its identifier and returns its fields as JSON.`,
      input_schema: { type: 'object', properties: { id: { type: 'string' } } },
    }));
    const list = JSON.stringify(tools);
    const body = `{"tools":${list},"query":"look up a ledger record","max_results":4}`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(SLICED_PARSE_BYTES);
    const key = createHash('sha256').update(list).digest('base64');
    const { hostname } = new URL(app.url);
    const head = (length: number) =>
      `POST /v1/tool-search HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    const requestLines = () => lines.filter((line) => line.msg === 'request' && line.path === '/v1/tool-search');

    // Half the body, then gone: nothing is read into the cache, nothing logged as an error.
    const before = lines.length;
    await sendAndLeave(app.url, head(Buffer.byteLength(body)), body.slice(0, body.length >> 1));
    await until('the abort logged', () => lines.slice(before).some((line) => line.msg === 'client aborted the request'));
    await until('the request logged', () => requestLines().length === 1);
    expect(requestLines()[0]).toMatchObject({ level: 30, status: 499, clientClosed: true });
    expect(app.deps.selector.toolListCache.get(key)).toBeUndefined();
    expect(errors()).toEqual([]);

    // The whole body, then gone before the answer: the search runs and its list is remembered.
    const whole = lines.length;
    await sendAndLeave(app.url, head(Buffer.byteLength(body)), body);
    await until('the search logged', () => lines.slice(whole).some((line) => line.msg === 'tool search'));
    await until('the list is remembered', () => app.deps.selector.toolListCache.get(key) !== undefined);
    await until('the request logged', () => requestLines().length === 2);
    expect(requestLines()[1]).toMatchObject({ level: 30, clientClosed: true });
    expect(errors()).toEqual([]);

    const next = await app.request('POST', '/v1/tool-search', body);
    expect(next.status).toBe(200);
    expect(next.body.results).toHaveLength(4);
    expect(next.body.results[0].name).toMatch(new RegExp(`^${tag}_tool_`));
    expect(errors()).toEqual([]);
  });
});

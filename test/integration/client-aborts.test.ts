/**
 * Clients that go away (issue: hard edges §3): a client that closes its connection mid-body, or
 * after sending a large selector body that is parsed in slices, is not a service fault: it is
 * logged at info without a stack, nothing is logged as an error, and the service answers the next
 * request. Raw sockets, since fetch cannot stop mid-body.
 */
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
    await sendAndLeave(app.url, `PUT /v1/catalogs/${catalog} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1000}\r\n\r\n`, body);
    await until('the abort logged', () => lines.some((line) => line.msg === 'client aborted the request'));
    const logged = lines.find((line) => line.msg === 'client aborted the request')!;
    expect(logged.level).toBe(30);
    expect(logged.err).toBeUndefined();
    expect(errors()).toEqual([]);
    await until('the request logged', () => lines.some((line) => line.msg === 'request' && line.path === `/v1/catalogs/${catalog}`));
    expect(lines.find((line) => line.msg === 'request' && line.path === `/v1/catalogs/${catalog}`)).toMatchObject({ level: 30, status: 499, clientClosed: true });
    expect((await app.request('GET', `/v1/catalogs/${catalog}`)).status).toBe(404);
    expect((await app.request('GET', '/healthz')).status).toBe(200);
  });

  it('after a large selector body parsed in slices: no error line, its tools are kept, and the next turn answers from them', async () => {
    const tag = uniqueName('gone');
    const tools = Array.from({ length: 1_500 }, (_, i) => ({
      type: 'function',
      function: { name: `${tag}_tool_${i}`, description: `Looks up record ${i} of the ${tag} archive by its identifier and returns its fields as JSON.`, parameters: { type: 'object', properties: { id: { type: 'string' } } } },
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
    expect(lines.slice(before).find((line) => line.msg === 'request' && line.path === '/v1/tool-discovery/search')).toMatchObject({ level: 30, status: 499, clientClosed: true });
    expect(errors()).toEqual([]);
    const beforeNext = lines.length;
    const next = await app.request('POST', '/v1/tool-discovery/search', body);
    expect(next.status).toBe(200);
    expect(next.body.selected_names).toHaveLength(5);
    await until('the next selection logged', () => lines.slice(beforeNext).some((line) => line.msg === 'tool selection'));
    expect(lines.slice(beforeNext).find((line) => line.msg === 'tool selection')).toMatchObject({ newDocuments: 0 });
    expect(errors()).toEqual([]);
  });
});

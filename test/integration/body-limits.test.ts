/**
 * Bodies that arrive slowly or never finish (issue: hard edges §7): the bytes being received at
 * once are bounded (BODY_MEMORY, a 503 past it) and a request must arrive whole within
 * BODY_TIMEOUT_MS (Node answers 408 and closes). Raw sockets, since fetch cannot stall mid-body.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/assertions.js';
import { uniqueName } from '../helpers/database.js';

/** Everything the server sends on `socket` until it closes the connection. */
function answerOf(socket: Socket): Promise<string> {
  let received = '';
  return new Promise<string>((resolve) => {
    socket.on('data', (chunk) => (received += String(chunk)));
    socket.on('close', () => resolve(received));
    socket.on('error', () => resolve(received));
  });
}

/** Opens a connection, sends a PUT's headers declaring `length` bytes and then only `sent` of them. */
function partialPut(url: string, path: string, length: number, sent: number): { socket: Socket; answer: Promise<string> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.write(`PUT ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`);
  socket.write(`{"tools": [${' '.repeat(Math.max(0, sent - 12))}`);
  return { socket, answer: answerOf(socket) };
}

/** Sends `text` as is on a new connection and reads the answer until the server closes it. */
async function rawRequest(url: string, text: string): Promise<{ status: number; headers: string; body: any }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const answer = answerOf(socket);
  socket.write(text);
  const received = await answer;
  const [head = '', body = ''] = received.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head, body: body ? JSON.parse(body) : undefined };
}

describe('requests Node rejects before express sees them', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app?.close());

  it('bad chunked encoding: 400 in the error shape, naming the fault', async () => {
    const answer = await rawRequest(
      app.url,
      'POST /v1/tool-search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    );
    expect(answer.status).toBe(400);
    expect(answer.headers).toMatch(/content-type: application\/json/i);
    expect(answer.body.error).toMatchObject({ code: 'malformed_request', message: expect.stringContaining('chunked encoding') });
  });

  it('both Content-Length and Transfer-Encoding: 400 saying to send one', async () => {
    const answer = await rawRequest(
      app.url,
      'POST /v1/tool-search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'malformed_request', message: expect.stringContaining('not both') });
  });

  it("headers past Node's limit: 431 in the error shape", async () => {
    const answer = await rawRequest(app.url, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.body.error).toMatchObject({ code: 'headers_too_large', request_id: '' });
  });

  it('a well-formed request on the same server still answers', async () => {
    expect((await app.request('GET', '/healthz')).status).toBe(200);
  });
});

describe('request bodies in flight', () => {
  let app: TestApp;
  beforeAll(async () => {
    // The slow bodies must stay open for the whole test, however busy the machine.
    app = await startTestApp({ BODY_LIMIT: '600kb', BODY_MEMORY: '1mb', BODY_TIMEOUT_MS: '120000' });
  });
  afterAll(() => app?.close());

  it('answers 503 with Retry-After once the bodies being received would pass BODY_MEMORY, and recovers when they end', async () => {
    const slow = [
      partialPut(app.url, `/v1/catalogs/${uniqueName('slow')}`, 500_000, 1000),
      partialPut(app.url, `/v1/catalogs/${uniqueName('slow')}`, 450_000, 1000),
    ];
    const large = { tools: [{ name: 'a', description: 'x'.repeat(200_000) }] };
    // Until the server has read both slow requests' headers (and reserved their lengths), a large
    // body still fits: ask again until it does not, however busy the machine is.
    let refused = await app.request('PUT', `/v1/catalogs/${uniqueName('refused')}`, large);
    await until('both slow bodies to be reserved', async () => {
      if (refused.status !== 503) refused = await app.request('PUT', `/v1/catalogs/${uniqueName('refused')}`, large);
      return refused.status === 503;
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error.message).toContain('BODY_MEMORY');
    // A small body still fits.
    expect((await app.request('PUT', `/v1/catalogs/${uniqueName('small')}`, { tools: [{ name: 'a', description: 'b' }] })).status).toBe(200);
    for (const { socket } of slow) socket.destroy();
    // Their reservations end when the server sees the connections close.
    let after = 0;
    await until(
      'the reservations to be released',
      async () => (after = (await app.request('PUT', `/v1/catalogs/${uniqueName('after')}`, large)).status) !== 503,
    );
    expect(after).toBe(200);
  });
});

describe('a request body that does not arrive', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ BODY_TIMEOUT_MS: '1500' });
  });
  afterAll(() => app?.close());

  it('closes a request whose body does not arrive within BODY_TIMEOUT_MS with 408', async () => {
    const started = Date.now();
    const { answer } = partialPut(app.url, `/v1/catalogs/${uniqueName('stalled')}`, 10_000, 100);
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(JSON.parse(text.split('\r\n\r\n')[1]!).error.code).toBe('request_timeout');
    expect(Date.now() - started).toBeLessThan(6_000);
  });
});

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type LookupFunction, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EMPTY_ALLOW_LIST, parseAllowList, type AllowList } from '../../src/upstream/address-policy.js';
import {
  createGuardedFetch,
  describeUpstreamFailure,
  limitBody,
  resolveChecked,
  UpstreamRefused,
  UpstreamTooLarge,
  type GuardedFetch,
  type GuardedFetchOptions,
} from '../../src/upstream/guarded-fetch.js';
import { bypassesProxy, parseEgressProxy } from '../../src/upstream/egress-proxy.js';
import { PROXY_TLS_CERT, startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';

const MB = 1024 * 1024;

// A self-signed certificate for the name mcp.test (EC P-256, valid until 2126), for the TLS test.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgQ2pcq/WFUkrr+pXz
OV5QMJqT792IB1lGp+WjJf2l3EChRANCAATw57hHWEjMFSwPOKgc6eouQfgJk2dZ
lYwqT++JyvAhGQA04LgpO8qARwmVZTz+Ht/CRrC5pSA7l/Jz/mSLY/nD
-----END PRIVATE KEY-----`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBkzCCATigAwIBAgIUeunGXLVat79OSVhBCM8iZ5RjnyIwCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIbWNwLnRlc3QwIBcNMjYxMjA2MDE1NzUzWhgPMjEyNjExMTIw
MTU3NTNaMBMxETAPBgNVBAMMCG1jcC50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAE8Oe4R1hIzBUsDzioHOnqLkH4CZNnWZWMKk/vicrwIRkANOC4KTvKgEcJ
lWU8/h7fwkawuaUgO5fyc/5ki2P5w6NoMGYwHQYDVR0OBBYEFA7ud86Q23VeXP/G
B1cvi/XOvYWpMB8GA1UdIwQYMBaAFA7ud86Q23VeXP/GB1cvi/XOvYWpMA8GA1Ud
EwEB/wQFMAMBAf8wEwYDVR0RBAwwCoIIbWNwLnRlc3QwCgYIKoZIzj0EAwIDSQAw
RgIhAMxcz5uJ4JXRDBgeTpSK/0DfZ0kh6RGJOUg9TMUYZHK0AiEAlhWHpV3+P3hB
TF6jjbp4OR688ADby+KrJ052Wo/jfB8=
-----END CERTIFICATE-----`;

interface TestServer {
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(server: Server | ReturnType<typeof createNetServer>, host = '127.0.0.1', port = 0): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const state: TestServer = {
    port: 0,
    connections: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
  server.on('connection', (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(port, host);
  await once(server, 'listening');
  state.port = (server.address() as { port: number }).port;
  cleanups.push(state.close);
  return state;
}

function http(handler: (request: IncomingMessage, response: ServerResponse) => void, host?: string, port?: number): Promise<TestServer> {
  return serve(createServer(handler), host, port);
}

function guardedFetch(options: Partial<GuardedFetchOptions> & { allow: AllowList }): GuardedFetch {
  const guarded = createGuardedFetch({ maxResponseBytes: MB, ...options });
  cleanups.push(() => guarded.close());
  return guarded;
}

/** A resolver from a fixed table, counting its calls. */
function fakeLookup(answers: (hostname: string, call: number) => string[]) {
  const calls: string[] = [];
  const lookup = ((hostname, _options, callback) => {
    calls.push(hostname);
    const addresses = answers(hostname, calls.length);
    if (addresses.length === 0) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as LookupFunction;
  return { lookup, calls };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Writes `total` bytes of a JSON document in 64 KB pieces, respecting backpressure; resolves with what was written. */
function streamJson(response: ServerResponse, total: number): Promise<number> {
  return new Promise((resolve) => {
    const piece = Buffer.alloc(64 * 1024, 'a');
    let written = 0;
    response.on('close', () => resolve(written));
    const pump = () => {
      while (written < total) {
        written += piece.length;
        if (!response.write(piece)) return void response.once('drain', pump);
      }
      response.end();
    };
    response.write('{"jsonrpc":"2.0","id":7,"result":{"text":"');
    pump();
  });
}

describe('the address policy at connection time', () => {
  it('refuses loopback however spelled, before anything reaches the server', async () => {
    const server = await http((_request, response) => response.end('ok'));
    const { lookup, calls } = fakeLookup(() => ['127.0.0.1']);
    const guarded = guardedFetch({ allow: EMPTY_ALLOW_LIST, lookup });
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]']) {
      const error = await rejection(guarded(`http://${host}:${server.port}/`));
      expect(error, host).toBeInstanceOf(UpstreamRefused);
      expect((error as UpstreamRefused).reason).toBe('loopback');
      expect(describeUpstreamFailure(error)).toBe('refused by policy (loopback)');
    }
    expect(server.connections).toBe(0);
    // Address literals are judged as they are: no resolver involved.
    expect(calls).toEqual([]);
  });

  it('connects when UPSTREAM_ALLOW lists the address', async () => {
    const server = await http((_request, response) => response.end('ok'));
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32') });
    const response = await guarded(`http://127.0.0.1:${server.port}/`);
    expect(await response.text()).toBe('ok');
    expect(response.status).toBe(200);
    expect(server.connections).toBe(1);
  });

  it('refuses a name that resolves to loopback, with the injected and with the system resolver', async () => {
    const server = await http((_request, response) => response.end('ok'));
    const { lookup, calls } = fakeLookup(() => ['127.0.0.1']);
    const error = await rejection(guardedFetch({ allow: EMPTY_ALLOW_LIST, lookup })(`http://mcp.test:${server.port}/`));
    expect(error).toBeInstanceOf(UpstreamRefused);
    expect(calls).toEqual(['mcp.test']);
    // Where a name resolves is not the tenant's to learn: its refusal reads as a name that does not resolve.
    expect((error as UpstreamRefused).tellable).toBe(false);
    expect(describeUpstreamFailure(error)).toBe('connection failed');
    expect(describeUpstreamFailure(new Error(`SSE error: ${(error as Error).message}`))).toBe('connection failed');
    // localhost is loopback by standard: naming it tells nothing, and the tenant learns why.
    const system = await rejection(guardedFetch({ allow: EMPTY_ALLOW_LIST })(`http://localhost:${server.port}/`));
    expect((system as UpstreamRefused).reason).toBe('loopback');
    expect(describeUpstreamFailure(system)).toBe('refused by policy (loopback)');
    expect(server.connections).toBe(0);
  });

  it('refuses a name when any of its addresses is refused', async () => {
    const server = await http((_request, response) => response.end('ok'));
    const { lookup } = fakeLookup(() => ['93.184.216.34', '127.0.0.1']);
    const error = await rejection(guardedFetch({ allow: EMPTY_ALLOW_LIST, lookup })(`http://mcp.test:${server.port}/`));
    expect((error as UpstreamRefused).reason).toBe('loopback');
    expect(server.connections).toBe(0);
  });

  it('resolveChecked judges a URL host the way connections are judged', async () => {
    const { lookup, calls } = fakeLookup((hostname) =>
      hostname === 'public.test' ? ['93.184.216.34', '2606:4700::1111'] : hostname === 'mixed.test' ? ['93.184.216.34', 'fd00:ec2::254'] : [],
    );
    await expect(resolveChecked('public.test', EMPTY_ALLOW_LIST, lookup)).resolves.toEqual(['93.184.216.34', '2606:4700::1111']);
    await expect(resolveChecked('mixed.test', EMPTY_ALLOW_LIST, lookup)).rejects.toMatchObject({ name: 'UpstreamRefused', reason: 'private', tellable: false });
    await expect(resolveChecked('[::1]', EMPTY_ALLOW_LIST, lookup)).rejects.toMatchObject({ reason: 'loopback', tellable: true });
    await expect(resolveChecked('[2606:4700::1111]', EMPTY_ALLOW_LIST, lookup)).resolves.toEqual(['2606:4700::1111']);
    await expect(resolveChecked('127.0.0.1', parseAllowList('127.0.0.0/8'), lookup)).resolves.toEqual(['127.0.0.1']);
    const missing = await rejection(resolveChecked('missing.test', EMPTY_ALLOW_LIST, lookup));
    expect(missing).not.toBeInstanceOf(UpstreamRefused);
    expect(missing).toMatchObject({ code: 'ENOTFOUND' });
    expect(calls).toEqual(['public.test', 'mixed.test', 'missing.test']);
  });

  it('resolves once per connection and connects to the address it checked (DNS rebinding)', async () => {
    // 127.0.0.2 stands in for a public address (allowed); 127.0.0.1 is the internal target.
    const outside = await http((_request, response) => response.setHeader('connection', 'close').end('outside'), '127.0.0.2');
    const inside = await http((_request, response) => response.end('inside'), '127.0.0.1', outside.port);
    const { lookup, calls } = fakeLookup((_hostname, call) => (call === 1 ? ['127.0.0.2'] : ['127.0.0.1']));
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.2/32'), lookup });

    const first = await guarded(`http://rebind.test:${outside.port}/`);
    expect(await first.text()).toBe('outside');
    expect(calls).toHaveLength(1);
    // The server closed that connection: the next request opens one and the name now answers loopback.
    const error = await rejection(guarded(`http://rebind.test:${outside.port}/`));
    expect((error as UpstreamRefused).reason).toBe('loopback');
    expect(calls).toHaveLength(2);
    expect(inside.connections).toBe(0);
    expect(outside.connections).toBe(1);
  });

  it('checks every redirect hop', async () => {
    let port = 0;
    let landings = 0;
    const server = await http((request, response) => {
      if (request.url === '/metadata') response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      else if (request.url === '/by-address') response.writeHead(307, { location: `http://127.0.0.1:${port}/landing` }).end();
      else response.end(`landed ${++landings}`);
    });
    port = server.port;
    const allowedByAddress = guardedFetch({ allow: parseAllowList('127.0.0.1/32') });
    const toMetadata = await rejection(allowedByAddress(`http://127.0.0.1:${port}/metadata`));
    expect((toMetadata as UpstreamRefused).reason).toBe('link-local');

    // Allowed by name; the same server by its address is not: the second hop is judged on its own.
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const allowedByName = guardedFetch({ allow: parseAllowList('mcp.test'), lookup });
    expect(await (await allowedByName(`http://mcp.test:${port}/landing`)).text()).toBe('landed 1');
    const toAddress = await rejection(allowedByName(`http://mcp.test:${port}/by-address`));
    expect((toAddress as UpstreamRefused).reason).toBe('loopback');
    expect(landings).toBe(1);
  });

  it('keeps the host name for TLS (SNI and the certificate check) while connecting to the checked address', async () => {
    const names: Array<string | false | null> = [];
    const server = createHttpsServer({ key: TLS_KEY, cert: TLS_CERT }, (_request, response) => response.end('secure'));
    server.on('secureConnection', (socket: TLSSocket) => names.push(socket.servername));
    const { port } = await serve(server);
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, ca: TLS_CERT });
    expect(await (await guarded(`https://mcp.test:${port}/`)).text()).toBe('secure');
    expect(names).toEqual(['mcp.test']);
    // The certificate names mcp.test, not the address: by address it is rejected.
    const error = await rejection(guarded(`https://127.0.0.1:${port}/`));
    expect(error).not.toBeInstanceOf(UpstreamRefused);
    expect(describeUpstreamFailure(error)).toBe('connection failed');
  });
});

async function connectProxy(credentials?: string): Promise<ConnectProxy> {
  const proxy = await startConnectProxy(credentials);
  cleanups.push(proxy.close);
  return proxy;
}

describe('through the egress proxy (UPSTREAM_PROXY)', () => {
  const proxied = (proxy: string, extra: Partial<ReturnType<typeof parseEgressProxy> & object> = {}) => ({ ...parseEgressProxy(proxy)!, ...extra });

  it('tunnels to the address it checked, not the name, for http and for https (TLS end to end with the name)', async () => {
    const proxy = await connectProxy();
    const plain = await http((_request, response) => response.end('plain'));
    const names: Array<string | false | null> = [];
    const secure = createHttpsServer({ key: TLS_KEY, cert: TLS_CERT }, (_request, response) => response.end('secure'));
    secure.on('secureConnection', (socket: TLSSocket) => names.push(socket.servername));
    const { port: securePort } = await serve(secure);
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, ca: TLS_CERT, proxy: proxied(proxy.url) });
    expect(await (await guarded(`http://mcp.test:${plain.port}/`)).text()).toBe('plain');
    expect(await (await guarded(`https://mcp.test:${securePort}/`)).text()).toBe('secure');
    expect(proxy.asked).toEqual([`127.0.0.1:${plain.port}`, `127.0.0.1:${securePort}`]);
    expect(names).toEqual(['mcp.test']);
  });

  it('reaches an https:// proxy over TLS (its certificate checked first), with TLS to the upstream inside', async () => {
    const proxy = await startConnectProxy('user:secret', { tls: true });
    cleanups.push(proxy.close);
    const names: Array<string | false | null> = [];
    const secure = createHttpsServer({ key: TLS_KEY, cert: TLS_CERT }, (_request, response) => response.end('secure via tls'));
    secure.on('secureConnection', (socket: TLSSocket) => names.push(socket.servername));
    const { port: securePort } = await serve(secure);
    const plain = await http((_request, response) => response.end('plain via tls'));
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const trusting = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, ca: TLS_CERT, proxy: proxied(proxy.url, { ca: PROXY_TLS_CERT }) });
    expect(await (await trusting(`https://mcp.test:${securePort}/`)).text()).toBe('secure via tls');
    expect(await (await trusting(`http://mcp.test:${plain.port}/`)).text()).toBe('plain via tls');
    expect(proxy.asked).toEqual([`127.0.0.1:${securePort}`, `127.0.0.1:${plain.port}`]);
    expect(names).toEqual(['mcp.test']);
    // A proxy whose certificate is not trusted is told nothing: no CONNECT, no credentials.
    const doubting = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, proxy: proxied(proxy.url) });
    const error = await rejection(doubting(`http://mcp.test:${plain.port}/`));
    expect(describeUpstreamFailure(error)).toBe('connection failed');
    expect(proxy.asked).toHaveLength(2);
  });

  it('asks for the name with connectBy name, still after judging its addresses', async () => {
    const proxy = await connectProxy();
    const plain = await http((_request, response) => response.end('by name'));
    const { lookup } = fakeLookup((hostname) => (hostname === 'mcp.test' ? ['127.0.0.1'] : ['127.0.0.9']));
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, proxy: proxied(proxy.url, { connectBy: 'name' }) });
    expect(await (await guarded(`http://mcp.test:${plain.port}/`)).text()).toBe('by name');
    expect(proxy.asked).toEqual([`mcp.test:${plain.port}`]);
    // A name resolving to a refused address never reaches the proxy, by name or by address.
    expect(await rejection(guarded(`http://inside.test:${plain.port}/`))).toBeInstanceOf(UpstreamRefused);
    expect(proxy.asked).toHaveLength(1);
  });

  it('refuses an internal address before the proxy is asked anything', async () => {
    const proxy = await connectProxy();
    const plain = await http((_request, response) => response.end('internal'));
    const guarded = guardedFetch({ allow: EMPTY_ALLOW_LIST, proxy: proxied(proxy.url) });
    const error = await rejection(guarded(`http://127.0.0.1:${plain.port}/`));
    expect(error).toBeInstanceOf(UpstreamRefused);
    expect(proxy.asked).toEqual([]);
    expect(proxy.connections).toBe(0);
  });

  it("sends the proxy's credentials, and fails as any connection does without them", async () => {
    // The URL carries it percent-encoded; the proxy reads it as written.
    const proxy = await connectProxy('ops:s3cret!@');
    const plain = await http((_request, response) => response.end('authorized'));
    const allow = parseAllowList('127.0.0.1/32');
    expect(await (await guardedFetch({ allow, proxy: proxied(proxy.url) })(`http://127.0.0.1:${plain.port}/`)).text()).toBe('authorized');
    const error = await rejection(guardedFetch({ allow, proxy: proxied(`http://127.0.0.1:${proxy.port}`) })(`http://127.0.0.1:${plain.port}/`));
    expect(describeUpstreamFailure(error)).toBe('connection failed');
    expect(proxy.asked).toHaveLength(2);
  });

  it('reaches the hosts of UPSTREAM_NO_PROXY directly', async () => {
    const proxy = await connectProxy();
    const plain = await http((_request, response) => response.end('direct'));
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup, proxy: parseEgressProxy(proxy.url, 'address', 'other.test, .test')! });
    expect(await (await guarded(`http://mcp.test:${plain.port}/`)).text()).toBe('direct');
    expect(proxy.asked).toEqual([]);
    expect(bypassesProxy(parseEgressProxy(proxy.url, 'address', '*.corp.example,10.0.0.7,[::1]')!, 'mcp.corp.example')).toBe(true);
    expect(bypassesProxy(parseEgressProxy(proxy.url, 'address', '*.corp.example,10.0.0.7,[::1]')!, 'corp.example.evil.net')).toBe(false);
    expect(bypassesProxy(parseEgressProxy(proxy.url, 'address', '*.corp.example,10.0.0.7,[::1]')!, '[::1]')).toBe(true);
    expect(() => parseEgressProxy('socks5://proxy:1080')).toThrow(/http:\/\/ or https:\/\/ proxy/);
    expect(() => parseEgressProxy('not a url')).toThrow(/must be a URL/);
  });
});

describe('a name with several addresses', () => {
  it('tries the next checked address when nothing answers at one, and never an unchecked one', async () => {
    const plain = await http((_request, response) => response.end('second'));
    // 127.0.0.2 has nothing listening on the port: refused at once, then 127.0.0.1 answers.
    const { lookup } = fakeLookup(() => ['127.0.0.2', '127.0.0.1']);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.0/8'), lookup });
    expect(await (await guarded(`http://mcp.test:${plain.port}/`)).text()).toBe('second');
    // One of them refused by the policy: nothing is tried.
    const strict = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), lookup });
    expect(await rejection(strict(`http://mcp.test:${plain.port}/`))).toBeInstanceOf(UpstreamRefused);
  });
});

describe('the response size cap', () => {
  it('cuts a 32 MB JSON answer at the cap, closes the connection and names the request', async () => {
    let written: Promise<number> | undefined;
    const server = await http((_request, response) => {
      response.setHeader('content-type', 'application/json');
      written = streamJson(response, 32 * MB);
    });
    const overflows: UpstreamTooLarge[] = [];
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), onTooLarge: (error) => overflows.push(error) });
    const rssBefore = process.memoryUsage().rss;
    const response = await guarded(`http://127.0.0.1:${server.port}/mcp?token=secret`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'dump' } }),
    });
    const error = await rejection(response.json());
    const rssGrowth = process.memoryUsage().rss - rssBefore;

    expect(error).toBeInstanceOf(UpstreamTooLarge);
    expect(error).toMatchObject({ limit: MB, requestIds: [7], url: `http://127.0.0.1:${server.port}/mcp` });
    expect(overflows).toEqual([error]);
    expect(describeUpstreamFailure(error)).toBe('result too large');
    // The server sees its socket closed long before it has written everything.
    expect(await written).toBeLessThan(16 * MB);
    // Loose: the 32 MB never sat in this process at once.
    expect(rssGrowth).toBeLessThan(24 * MB);
  });

  it('refuses up front when content-length is over the cap', async () => {
    let closed: Promise<unknown> | undefined;
    const server = await http((_request, response) => {
      closed = once(response, 'close');
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(32 * MB) });
      response.write('{"jsonrpc":"2.0",');
    });
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32') });
    const error = await rejection(
      guarded(`http://127.0.0.1:${server.port}/`, { method: 'POST', body: '[{"jsonrpc":"2.0","id":"a","method":"x"},{"jsonrpc":"2.0","method":"y"}]' }),
    );
    expect(error).toBeInstanceOf(UpstreamTooLarge);
    expect((error as UpstreamTooLarge).requestIds).toEqual(['a']);
    await closed;
  });

  it('counts an SSE stream per event: many small events pass, one large event fails', async () => {
    const event = (index: number, separator: string) => `id: ${index}${separator}data: ${'x'.repeat(1000)}${separator}${separator}`;
    const server = await http((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      if (request.url === '/large') {
        response.write('data: ');
        for (let piece = 0; piece < 200; piece++) response.write('y'.repeat(1000));
        response.end('\n\n');
        return;
      }
      if (request.url === '/lines') {
        // Many lines, never a blank one: one event, however it is split.
        for (let line = 0; line < 200; line++) response.write(`data: ${'z'.repeat(1000)}\n`);
        response.end('\n');
        return;
      }
      const separator = request.url === '/crlf' ? '\r\n' : '\n';
      for (let index = 0; index < 5000; index++) response.write(event(index, separator));
      response.end();
    });
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), maxResponseBytes: 64 * 1024 });
    const base = `http://127.0.0.1:${server.port}`;
    for (const [path, separator] of [
      ['/lf', '\n'],
      ['/crlf', '\r\n'],
    ] as const) {
      const text = await (await guarded(`${base}${path}`)).text();
      expect(text.length, path).toBe(Array.from({ length: 5000 }, (_, index) => event(index, separator)).join('').length);
      expect(text.length).toBeGreaterThan(4 * MB);
    }
    for (const path of ['/large', '/lines']) {
      const error = await rejection((await guarded(`${base}${path}`)).text());
      expect(error, path).toBeInstanceOf(UpstreamTooLarge);
      expect((error as UpstreamTooLarge).requestIds).toEqual([]);
    }
  });

  it('finds event boundaries split across chunks, for LF, CRLF and CR', async () => {
    const read = (chunks: string[], maxBytes: number) => {
      const source = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
          controller.close();
        },
      });
      return new Response(limitBody(source, maxBytes, true, () => new UpstreamTooLarge(maxBytes, 'test', []))).text();
    };
    // Each event is 10 or 11 bytes with its blank line; the stream is far longer than the cap of 12.
    await expect(read(['data: 1\n', '\n', 'data: 2\n\n', 'data: 3', '\n', '\ndata: 4\n\n'], 12)).resolves.toContain('data: 4');
    await expect(read(['data: 1\r', '\n', '\r', '\n', 'data: 2\r\n\r', '\ndata: 3\r\n\r\n'], 12)).resolves.toContain('data: 3');
    await expect(read(['data: 1\r', '\r', 'data: 2\r\r', 'data: 3\r\r'], 12)).resolves.toContain('data: 3');
    // LF then CRLF is a blank line too.
    await expect(read(['data: 1\n\r', '\ndata: 2\n\r\n'], 12)).resolves.toContain('data: 2');
    // A CR followed by LF is one line end, not a blank line: these lines make one 24-byte event.
    await expect(read(['data: 1\r', '\ndata: 2\r\n', 'data: 3\r\n\r\n'], 12)).rejects.toBeInstanceOf(UpstreamTooLarge);
    await expect(read(['data: 1\n', 'data: 2\n\n'], 12)).rejects.toBeInstanceOf(UpstreamTooLarge);
  });
});

describe('describeUpstreamFailure', () => {
  it('says the same for a closed port, a reset, a DNS failure and a server that never answers', async () => {
    const allow = parseAllowList('127.0.0.1/32');
    const closedPort = await http(() => {});
    const port = closedPort.port;
    await closedPort.close();
    const reset = await serve(createNetServer((socket) => socket.resetAndDestroy()));
    const silent = await serve(createNetServer(() => {}));
    const { lookup } = fakeLookup(() => []);
    const guarded = guardedFetch({ allow, lookup });

    const failures = [
      await rejection(guarded(`http://127.0.0.1:${port}/`)),
      await rejection(guarded(`http://127.0.0.1:${reset.port}/`)),
      await rejection(guarded(`http://no-such-host.test:${port}/`)),
      await rejection(guarded(`http://127.0.0.1:${silent.port}/`, { signal: AbortSignal.timeout(300) })),
    ];
    expect(failures.map(describeUpstreamFailure)).toEqual(Array(4).fill('connection failed'));
    expect(silent.connections).toBe(1);
  });

  it('gives the status of an HTTP error and never the body, through both SDK transports', async () => {
    const secret = 'sk-live-do-not-leak-0123456789';
    const server = await http((_request, response) =>
      response.writeHead(404, { 'content-type': 'text/plain', 'x-secret': secret }).end(`no such endpoint ${secret}`),
    );
    const url = new URL(`http://127.0.0.1:${server.port}/mcp`);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32') });
    for (const transport of [new StreamableHTTPClientTransport(url, { fetch: guarded }), new SSEClientTransport(url, { fetch: guarded })]) {
      const error = await rejection(new Client({ name: 'test', version: '0' }).connect(transport, { timeout: 5000 }));
      const description = describeUpstreamFailure(error);
      expect(description, transport.constructor.name).toBe('HTTP 404');
      expect(description).not.toContain(secret);
      await transport.close();
    }
  });

  it('says "not an MCP server" for a 200 that is not JSON-RPC', async () => {
    const server = await http((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
    const url = new URL(`http://127.0.0.1:${server.port}/`);
    const guarded = guardedFetch({ allow: parseAllowList('127.0.0.1/32') });
    for (const transport of [new StreamableHTTPClientTransport(url, { fetch: guarded }), new SSEClientTransport(url, { fetch: guarded })]) {
      const error = await rejection(new Client({ name: 'test', version: '0' }).connect(transport, { timeout: 5000 }));
      expect(describeUpstreamFailure(error), transport.constructor.name).toBe('not an MCP server');
      await transport.close();
    }
    const json = await http((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"hello": "world"}'));
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${json.port}/`), { fetch: guarded });
    const error = await rejection(new Client({ name: 'test', version: '0' }).connect(transport, { timeout: 5000 }));
    expect(describeUpstreamFailure(error)).toBe('not an MCP server');
    await transport.close();
  });

  it('says "refused by policy" and "result too large" through the SDK', async () => {
    const server = await http((request, response) => {
      if (request.method === 'GET') {
        // The legacy transport's stream: one event that never ends.
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('event: endpoint\ndata: ');
        for (let piece = 0; piece < 64; piece++) response.write('/'.repeat(64 * 1024));
        return;
      }
      response.setHeader('content-type', 'application/json');
      void streamJson(response, 4 * MB);
    });
    const url = new URL(`http://127.0.0.1:${server.port}/mcp`);
    const transports = (fetch: GuardedFetch) => [new StreamableHTTPClientTransport(url, { fetch }), new SSEClientTransport(url, { fetch })];
    const refusing = guardedFetch({ allow: EMPTY_ALLOW_LIST });
    for (const transport of transports(refusing)) {
      const error = await rejection(new Client({ name: 'test', version: '0' }).connect(transport, { timeout: 5000 }));
      expect(describeUpstreamFailure(error), transport.constructor.name).toBe('refused by policy (loopback)');
      await transport.close();
    }
    expect(server.connections).toBe(0);

    const onTooLarge = vi.fn();
    const capped = guardedFetch({ allow: parseAllowList('127.0.0.1/32'), onTooLarge });
    for (const transport of transports(capped)) {
      const error = await rejection(new Client({ name: 'test', version: '0' }).connect(transport, { timeout: 5000 }));
      expect(describeUpstreamFailure(error), transport.constructor.name).toBe('result too large');
      await transport.close();
    }
    // The initialize POST names its request; the legacy transport's GET stream has none.
    expect(onTooLarge.mock.calls.map(([error]) => (error as UpstreamTooLarge).requestIds.length)).toEqual([1, 0]);
  });

  it('reads the classes off the typed errors and nothing else', () => {
    expect(describeUpstreamFailure(new UpstreamRefused('link-local', 'metadata.test', '169.254.169.254'))).toBe('refused by policy (link-local)');
    expect(describeUpstreamFailure(new TypeError('fetch failed', { cause: new UpstreamTooLarge(1, 'x', []) }))).toBe('result too large');
    expect(describeUpstreamFailure(new Error(`SSE stream disconnected: ${String(new UpstreamTooLarge(5, 'x', []))}`))).toBe('result too large');
    // Upstream-controlled text never decides the class.
    expect(describeUpstreamFailure(new Error('SSE stream disconnected: UpstreamTooLarge: <html>'))).toBe('connection failed');
    expect(describeUpstreamFailure(new Error('refused by policy (loopback)'))).toBe('connection failed');
    expect(describeUpstreamFailure(new Error('HTTP 500 <html>secret</html>'))).toBe('connection failed');
    expect(describeUpstreamFailure('a string')).toBe('connection failed');
    expect(describeUpstreamFailure(undefined)).toBe('connection failed');
  });
});

/**
 * An HTTP CONNECT proxy on loopback, as an operator's egress proxy (UPSTREAM_PROXY): it records
 * each tunnel asked for, answers 407 without the credentials when given some, and reads the test
 * name `mcp.test` as loopback (a proxy resolving a name itself). With `tls` it is reached over TLS
 * (`https://`), with the certificate below.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createConnection, type Socket } from 'node:net';

/** A self-signed certificate for 127.0.0.1 and proxy.test (EC P-256, valid until 2126): the https:// proxy's. */
export const PROXY_TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeTgfzImcY5gZCV5e
gILhBLwdels8boMlXZr9NtBRg9KhRANCAATUerFaEdlOecCToNois9vKEPUXE3lt
Jn4Xn2UmOe3jO9p0n4Y+eJzRsc+PyXiTXnfZASqCRA5xrdKJYZ4MT9d+
-----END PRIVATE KEY-----`;
export const PROXY_TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBnjCCAUSgAwIBAgIUdqnBEBHRzxVANoB3w21QlrfUWg4wCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKcHJveHkudGVzdDAgFw0yNjEyMDcxMDAxNTJaGA8yMTI2MTEx
MzEwMDE1MlowFTETMBEGA1UEAwwKcHJveHkudGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABNR6sVoR2U55wJOg2iKz28oQ9RcTeW0mfhefZSY57eM72nSfhj54
nNGxz4/JeJNed9kBKoJEDnGt0olhngxP136jcDBuMB0GA1UdDgQWBBRGww9kBNMw
16ykJAg/BboAEOnPMDAfBgNVHSMEGDAWgBRGww9kBNMw16ykJAg/BboAEOnPMDAP
BgNVHRMBAf8EBTADAQH/MBsGA1UdEQQUMBKHBH8AAAGCCnByb3h5LnRlc3QwCgYI
KoZIzj0EAwIDSAAwRQIhAMTKDwawYUVecD16Z7PRIOiGbDOwL6Achky5pz5zD/9a
AiBf1qMRr9fu1Rmt5pQGU29zUNgIcr6PamhWysipxlYg6A==
-----END CERTIFICATE-----`;

export interface ConnectProxy {
  /** `host:port` of every CONNECT, in order. */
  asked: string[];
  /** TCP connections accepted. */
  connections: number;
  port: number;
  /** `http://[user:password@]127.0.0.1:<port>`, the credentials percent-encoded. */
  url: string;
  close(): Promise<void>;
}

export async function startConnectProxy(credentials?: string, { tls = false }: { tls?: boolean } = {}): Promise<ConnectProxy> {
  const asked: string[] = [];
  const sockets = new Set<Socket>();
  const refuse = (_request: IncomingMessage, response: { writeHead(status: number): { end(): void } }) => response.writeHead(405).end();
  const server = tls ? createHttpsServer({ key: PROXY_TLS_KEY, cert: PROXY_TLS_CERT }, refuse) : createServer(refuse);
  const state = { asked, connections: 0, port: 0, url: '', close: async () => {} } as ConnectProxy;
  server.on('connection', (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) => {
    const target = request.url ?? '';
    asked.push(target);
    if (credentials && request.headers['proxy-authorization'] !== `Basic ${Buffer.from(credentials).toString('base64')}`) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      return;
    }
    const split = target.lastIndexOf(':');
    const host = target.slice(0, split).replace(/^\[|\]$/g, '');
    const upstream = createConnection({ host: host === 'mcp.test' ? '127.0.0.1' : host, port: Number(target.slice(split + 1)) }, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  state.port = (server.address() as { port: number }).port;
  const userinfo = credentials ? `${credentials.split(':').map(encodeURIComponent).join(':')}@` : '';
  state.url = `${tls ? 'https' : 'http'}://${userinfo}127.0.0.1:${state.port}`;
  state.close = async () => {
    for (const socket of sockets) socket.destroy();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  };
  return state;
}

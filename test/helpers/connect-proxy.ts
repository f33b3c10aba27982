/**
 * An HTTP CONNECT proxy on loopback, as an operator's egress proxy (UPSTREAM_PROXY): it records
 * each tunnel asked for, answers 407 without the credentials when given some, and reads the test
 * name `mcp.test` as loopback (a proxy resolving a name itself).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { createConnection, type Socket } from 'node:net';

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

export async function startConnectProxy(credentials?: string): Promise<ConnectProxy> {
  const asked: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((_request, response) => response.writeHead(405).end());
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
  state.url = `http://${userinfo}127.0.0.1:${state.port}`;
  state.close = async () => {
    for (const socket of sockets) socket.destroy();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  };
  return state;
}

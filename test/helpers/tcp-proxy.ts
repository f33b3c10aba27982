import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy for chaos tests: forwards to `target` until `blackhole()`, which stops forwarding in
 * both directions while keeping every socket open (a network partition, not a refused connection;
 * new connections are accepted and then hear nothing). `heal()` breaks the connections opened
 * before it (as a partition that outlived TCP keepalive would) and forwards again.
 */
export interface TcpProxy {
  port: number;
  blackhole(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let dark = false;
  const pairs = new Set<[Socket, Socket | null]>();
  const server: Server = createServer((client) => {
    client.on('error', () => {});
    if (dark) {
      const pair: [Socket, Socket | null] = [client, null];
      pairs.add(pair);
      client.on('close', () => pairs.delete(pair));
      return;
    }
    const upstream = connect(target.port, target.host);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair: [Socket, Socket | null] = [client, upstream];
    pairs.add(pair);
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk) => {
        if (!dark) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => {
      upstream.destroy();
      pairs.delete(pair);
    });
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    blackhole() {
      dark = true;
    },
    heal() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream?.destroy();
      }
      pairs.clear();
      dark = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream?.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

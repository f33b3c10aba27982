/**
 * Reaching upstreams through the operator's egress proxy (UPSTREAM_PROXY): an HTTP proxy, reached
 * over TCP (`http://`) or TLS (`https://`, its certificate checked against the system's CAs and
 * NODE_EXTRA_CA_CERTS), asked to CONNECT a tunnel, over which the upstream's own HTTP or TLS runs
 * end to end (TLS inside TLS through an `https://` proxy). toolsift still
 * resolves the name and judges every address with the address policy first (guarded-fetch.ts), and
 * by default asks the proxy for the address it judged, not the name: a proxy resolving the name
 * itself could be answered differently (DNS rebinding) and reach an address that was never judged.
 * Proxies that filter by name may be asked for the name instead (UPSTREAM_PROXY_CONNECT=name):
 * the address policy then holds only as far as the proxy resolves as toolsift did.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export interface EgressProxy {
  /** The proxy: `http(s)://[user:password@]host:port`. */
  url: URL;
  /** CAs trusted for an `https://` proxy's certificate in place of the system's (tests; operators use NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** What the proxy is asked to reach: the address toolsift judged (default), or the host name. */
  connectBy: 'address' | 'name';
  /** Hosts reached directly (UPSTREAM_NO_PROXY): a name, `.suffix` / `*.suffix` for its subdomains, or an address. */
  bypass: readonly string[];
}

/** Reads UPSTREAM_PROXY, UPSTREAM_PROXY_CONNECT and UPSTREAM_NO_PROXY; throws naming what is wrong. Unset proxy: undefined. */
export function parseEgressProxy(url: string | undefined, connectBy: 'address' | 'name' = 'address', noProxy = ''): EgressProxy | undefined {
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('UPSTREAM_PROXY must be a URL such as http://proxy.internal:3128');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new Error(`UPSTREAM_PROXY must be an http:// or https:// proxy (its tunnels carry TLS end to end); got ${parsed.protocol}`);
  if (!parsed.port && parsed.hostname === '') throw new Error('UPSTREAM_PROXY needs a host');
  const bypass = noProxy
    .split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter(Boolean);
  return { url: parsed, connectBy, bypass };
}

/** Whether `hostname` (as in a URL: an IPv6 address in brackets) is reached without the proxy. */
export function bypassesProxy(proxy: EgressProxy, hostname: string): boolean {
  const host = bareHost(hostname).toLowerCase();
  return proxy.bypass.some((entry) => {
    if (entry === '*') return true;
    const suffix = entry.startsWith('*.') ? entry.slice(1) : entry.startsWith('.') ? entry : undefined;
    return suffix ? host.endsWith(suffix) : host === bareHost(entry);
  });
}

/** A URL's host without the brackets an IPv6 address is written in. */
export const bareHost = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** The longest a proxy may take to open a tunnel (its answer to CONNECT), ms. */
export const TUNNEL_TIMEOUT_MS = 10_000;
/** The largest proxy answer header read before giving up on it. */
const ANSWER_MAX_BYTES = 16 * 1024;

/** A proxy that would not open the tunnel (its status), or did not answer as a proxy does. */
export class ProxyRefused extends Error {
  override readonly name = 'ProxyRefused';
}

/**
 * A socket tunnelled through `proxy` to `target`:`port` (an address, or a name with `connectBy:
 * name`), then TLS over it for `https:` with the upstream's name for SNI and the certificate check.
 */
export async function tunnel(
  proxy: EgressProxy,
  target: string,
  port: number,
  tls: { servername?: string; ca?: string | Buffer | Array<string | Buffer> } | undefined,
): Promise<Socket | TLSSocket> {
  const socket = await openTunnel(proxy, target, port);
  if (!tls) return socket;
  return new Promise<TLSSocket>((resolve, reject) => {
    const secure = tlsConnect({ socket, ...(tls.servername ? { servername: tls.servername } : {}), ...(tls.ca ? { ca: tls.ca } : {}) });
    secure.once('secureConnect', () => {
      // The tunnel's own errors surface on the TLS socket, which the HTTP client listens to.
      socket.on('error', () => {});
      resolve(secure);
    });
    secure.once('error', (error) => {
      socket.destroy();
      reject(error);
    });
  });
}

function openTunnel(proxy: EgressProxy, target: string, port: number): Promise<Socket> {
  const authority = `${isIP(target) === 6 ? `[${target}]` : target}:${port}`;
  const credentials = proxy.url.username
    ? `Proxy-Authorization: Basic ${Buffer.from(`${decodeURIComponent(proxy.url.username)}:${decodeURIComponent(proxy.url.password)}`).toString('base64')}\r\n`
    : '';
  const host = bareHost(proxy.url.hostname);
  const overTls = proxy.url.protocol === 'https:';
  return new Promise<Socket>((resolve, reject) => {
    const socket = overTls
      ? tlsConnect({
          host,
          port: Number(proxy.url.port || 443),
          ...(isIP(host) ? {} : { servername: host }),
          ...(proxy.ca ? { ca: proxy.ca } : {}),
        })
      : netConnect({ host, port: Number(proxy.url.port || 80) });
    let answer = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(TUNNEL_TIMEOUT_MS, () => fail(new ProxyRefused(`the egress proxy did not open a tunnel within ${TUNNEL_TIMEOUT_MS} ms`)));
    socket.once('error', fail);
    // Through an https:// proxy nothing (not its credentials) is written before its certificate is checked.
    socket.once(overTls ? 'secureConnect' : 'connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${credentials}\r\n`));
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf('\r\n\r\n');
      if (end < 0) {
        if (answer.length > ANSWER_MAX_BYTES) fail(new ProxyRefused('the egress proxy answered CONNECT with an oversized header'));
        return;
      }
      socket.removeListener('data', onData);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(answer.subarray(0, end).toString('latin1'))?.[1];
      if (status !== '200') {
        fail(new ProxyRefused(status ? `the egress proxy refused the tunnel (HTTP ${status})` : 'the egress proxy did not answer CONNECT as an HTTP proxy'));
        return;
      }
      socket.setTimeout(0);
      socket.removeListener('error', fail);
      // Held until the HTTP client (or TLS) reads: bytes past the proxy's answer already belong to the upstream.
      socket.pause();
      const rest = answer.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on('data', onData);
  });
}

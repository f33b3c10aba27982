/**
 * The fetch that the MCP SDK's HTTP client transports are given for upstream servers: every
 * connection they open (first request, reconnects, each redirect hop) goes through one connector
 * that resolves the host once, judges every address with the address policy, and connects to the
 * address it judged. Checking a URL and then letting the socket resolve the name again is the
 * DNS-rebinding hole this closes: the name could answer differently the second time.
 *
 * Answers are also capped while they stream in, so a hostile upstream cannot fill our memory.
 */
import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import {
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError,
  UnauthorizedError,
  UnsupportedProtocolVersionError,
  type FetchLike,
} from '@modelcontextprotocol/client';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { addressRefusal, isLocalhostName, REFUSAL_REASONS, type AllowList, type RefusalReason } from './address-policy.js';
import { bareHost, bypassesProxy, tunnel, type EgressProxy } from './egress-proxy.js';

/** A connection the address policy does not allow; nothing was sent. */
export class UpstreamRefused extends Error {
  override readonly name = 'UpstreamRefused';
  constructor(
    readonly reason: RefusalReason,
    /** For the operator's logs only: telling a tenant where a name resolves maps the inside for them. */
    readonly hostname: string,
    readonly address: string,
    /**
     * Whether the reason may be shown to the tenant: the URL spelled the address itself, or named
     * localhost (loopback by standard, RFC 6761). A name resolved by DNS is not: "refused by policy
     * (private)" for it, beside "connection failed" for a name that does not resolve, would tell a
     * tenant which internal names exist. The tenant reads "connection failed"; the audit log and
     * the operator's log keep the reason.
     */
    readonly tellable = true,
  ) {
    super(tellable ? `refused by policy (${reason})` : `refused by policy (${reason}) where a name resolves`);
  }
}
const REFUSED_MESSAGE = /^refused by policy \(([a-z-]+)\)$/;

/** An answer (or one SSE event) larger than the cap; its connection was closed. */
export class UpstreamTooLarge extends Error {
  override readonly name = 'UpstreamTooLarge';
  constructor(
    readonly limit: number,
    /** Origin and path of the request; the query may carry a token. */
    readonly url: string,
    /**
     * JSON-RPC ids of the requests in the POST body whose answer this was (the SDK posts one
     * message, or a batch); empty for a GET stream or a body that is not JSON-RPC.
     */
    readonly requestIds: ReadonlyArray<string | number>,
  ) {
    super(`the upstream's answer exceeds ${limit} bytes`);
  }
}
const TOO_LARGE_MESSAGE = /^the upstream's answer exceeds \d+ bytes$/;

export interface GuardedFetchOptions {
  allow: AllowList;
  /** Largest non-SSE body, or largest single SSE event, in bytes (after decompression). */
  maxResponseBytes: number;
  /** Resolves host names; called once per connection with `{ all: true }`. Default dns.lookup. */
  lookup?: LookupFunction;
  /**
   * Told about every overflow as it happens. The SDK reports a broken SSE stream as a generic
   * "SSE stream disconnected" and leaves the request pending, so this (with `requestIds`) is how a
   * caller fails the right call at once.
   */
  onTooLarge?: (error: UpstreamTooLarge) => void;
  /** Trusted CAs for https upstreams, replacing Node's default store (a private CA; tests). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** The operator's egress proxy (UPSTREAM_PROXY): connections tunnel through it, after the same checks. */
  proxy?: EgressProxy;
}

export type GuardedFetch = FetchLike & {
  /** Ends every connection, idle or in flight (an open SSE stream would keep a graceful close waiting). */
  close(): Promise<void>;
};

export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const agent = new Agent({ connect: guardedConnector(options) });
  const guarded: FetchLike = async (url, init) => {
    let response: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      response = await undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent });
    } catch (error) {
      // undici says "fetch failed" with the connector's error as the cause: surface ours typed.
      throw refusalIn(error) ?? error;
    }
    return capResponse(response, new URL(url), init?.body, options);
  };
  let closed: Promise<void> | undefined;
  return Object.assign(guarded, { close: () => (closed ??= agent.destroy()) });
}

/** Errors of one address that make the next one worth trying (nothing reached it). */
const UNREACHED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function guardedConnector({ allow, lookup, ca, proxy }: GuardedFetchOptions): buildConnector.connector {
  const connectTo = buildConnector(ca === undefined ? {} : { ca });
  return (connection, callback) => {
    const hostname = connection.hostname;
    const bare = bareHost(hostname);
    // SNI and the certificate check keep the name while the socket goes to the checked address.
    const servername = connection.servername || (isIP(bare) ? undefined : bare);
    resolveChecked(hostname, allow, lookup).then(
      (addresses) => {
        if (proxy && !bypassesProxy(proxy, hostname)) {
          const port = Number(connection.port) || (connection.protocol === 'https:' ? 443 : 80);
          const target = proxy.connectBy === 'name' && !isIP(bare) ? bare : addresses[0]!;
          tunnel(proxy, target, port, connection.protocol === 'https:' ? { servername, ca } : undefined).then(
            (socket) => callback(null, socket as Parameters<typeof callback>[1] & object),
            (error: Error) => callback(error, null),
          );
          return;
        }
        // The checked addresses, never the name again, each in the resolver's order while nothing answers.
        const next = (at: number) => {
          try {
            connectTo({ ...connection, hostname: addresses[at]!, servername }, (error, socket) => {
              const code = (error as { code?: string } | null)?.code;
              if (error && at + 1 < addresses.length && code && UNREACHED.has(code)) next(at + 1);
              else if (error) callback(error, null);
              else callback(null, socket!);
            });
          } catch (error) {
            callback(error as Error, null);
          }
        };
        next(0);
      },
      (error: Error) => callback(error, null),
    );
  };
}

/**
 * Where `hostname` (a name, an address, or a bracketed IPv6 address as in `URL.hostname`) may be
 * reached: every address it resolves to, in resolver order, all allowed. Throws UpstreamRefused
 * when any is refused (a name that mixes public and internal answers is a rebinding setup, and
 * connecting to "the good one" would invite retries), and the resolver's error when it fails.
 * Address literals are judged without DNS.
 */
export async function resolveChecked(hostname: string, allow: AllowList, lookup: LookupFunction = dnsLookup as LookupFunction): Promise<string[]> {
  const bare = bareHost(hostname);
  const literal = isIP(bare) !== 0;
  const addresses = literal ? [bare] : await resolveAll(lookup, bare);
  for (const address of addresses) {
    const reason = addressRefusal(address, allow, literal ? undefined : bare);
    if (reason) throw new UpstreamRefused(reason, bare, address, literal || isLocalhostName(bare));
  }
  return addresses;
}

function resolveAll(lookup: LookupFunction, hostname: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    try {
      lookup(hostname, { all: true }, (error, answer) => {
        if (error) return reject(error);
        const addresses = typeof answer === 'string' ? [answer] : answer.map((entry) => entry.address);
        if (addresses.length === 0) return reject(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
        resolve(addresses);
      });
    } catch (error) {
      reject(error as Error);
    }
  });
}

/** The address policy's refusal in an error's cause chain (undici and the SDK wrap what the connector threw). */
export function refusalIn(error: unknown): UpstreamRefused | undefined {
  for (const link of causeChain(error)) if (link instanceof UpstreamRefused) return link;
  return undefined;
}

/** Statuses whose Response may not carry a body (the constructor throws on one). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

type UndiciResponse = Awaited<ReturnType<typeof undiciFetch>>;

function capResponse(response: UndiciResponse, requestUrl: URL, requestBody: unknown, options: GuardedFetchOptions): Response {
  const overflow = () => {
    const error = new UpstreamTooLarge(options.maxResponseBytes, `${requestUrl.origin}${requestUrl.pathname}`, jsonRpcIds(requestBody));
    try {
      options.onTooLarge?.(error);
    } catch {
      // A failing observer must not turn an overflow into some other error.
    }
    return error;
  };
  if (response.status < 200 || response.status > 599) {
    // A Response cannot be built with it; release the connection rather than leave the body unread.
    void response.body?.cancel().catch(() => {});
    throw new Error(`the upstream answered with HTTP status ${response.status}, outside 200-599`);
  }
  const perEvent = mediaType(response.headers.get('content-type')) === 'text/event-stream';
  const declared = Number(response.headers.get('content-length') ?? NaN);
  // An SSE stream's length is the sum of its events, which are capped one by one.
  if (!perEvent && declared > options.maxResponseBytes) {
    void response.body?.cancel().catch(() => {});
    throw overflow();
  }
  let body: ReadableStream<Uint8Array> | null = null;
  if (NULL_BODY_STATUSES.has(response.status)) void response.body?.cancel().catch(() => {});
  else if (response.body) body = limitBody(response.body as ReadableStream<Uint8Array>, options.maxResponseBytes, perEvent, overflow);
  const capped = new Response(body, { status: response.status, statusText: response.statusText, headers: new Headers([...response.headers]) });
  // The SDK reads these to explain a redirect it did not follow.
  Object.defineProperties(capped, { url: { value: response.url }, redirected: { value: response.redirected } });
  return capped;
}

/**
 * `body`, passed through until it grows past `maxBytes` (per SSE event when `perEvent`); then the
 * source is cancelled, which closes the connection, and the stream errors with `overflow()`.
 */
export function limitBody(body: ReadableStream<Uint8Array>, maxBytes: number, perEvent: boolean, overflow: () => Error): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const counter = perEvent ? new EventSizeCounter() : new TotalSizeCounter();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (error) {
          controller.error(error);
          return;
        }
        if (next.done) {
          controller.close();
          return;
        }
        if (counter.exceeds(next.value, maxBytes)) {
          const error = overflow();
          controller.error(error);
          await reader.cancel(error).catch(() => {});
          return;
        }
        controller.enqueue(next.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    // Pull only when the reader asks: nothing is buffered here beyond what undici holds.
    { highWaterMark: 0 },
  );
}

interface SizeCounter {
  /** Counts `chunk`; true when the body (or the current event) is now past `maxBytes`. */
  exceeds(chunk: Uint8Array, maxBytes: number): boolean;
}

class TotalSizeCounter implements SizeCounter {
  #size = 0;
  exceeds(chunk: Uint8Array, maxBytes: number): boolean {
    this.#size += chunk.byteLength;
    return this.#size > maxBytes;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Sizes SSE events: an event ends at a blank line, and a line ends at CRLF, LF or CR (the SSE
 * grammar), so "\n\n" and "\r\n\r\n" both end one, split across chunks or not.
 */
class EventSizeCounter implements SizeCounter {
  #size = 0;
  #lineLength = 0;
  #afterCR = false;

  exceeds(chunk: Uint8Array, maxBytes: number): boolean {
    for (let index = 0; index < chunk.length; index++) {
      if (++this.#size > maxBytes) return true;
      const byte = chunk[index];
      if (byte === LF && this.#afterCR) {
        // The second half of a CRLF: its line has already ended.
        this.#afterCR = false;
      } else if (byte === LF || byte === CR) {
        if (this.#lineLength === 0) this.#size = 0;
        this.#lineLength = 0;
        this.#afterCR = byte === CR;
      } else {
        this.#lineLength++;
        this.#afterCR = false;
      }
    }
    return false;
  }
}

function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/** Parsed only once an answer overflows: a tool call's arguments can be large. */
function jsonRpcIds(body: unknown): Array<string | number> {
  if (typeof body !== 'string') return [];
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return [];
  }
  const ids: Array<string | number> = [];
  for (const item of Array.isArray(message) ? message : [message]) {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id === 'string' || typeof id === 'number') ids.push(id);
  }
  return ids;
}

/**
 * A short class of an upstream connection or sync failure, safe to store and show the tenant: no
 * upstream-controlled text, no header values, no response body. A refused port, a reset, a DNS
 * failure, a timeout and a name that resolves where the policy refuses all read "connection
 * failed", so the answer cannot be used to scan ports or to map internal names.
 */
export function describeUpstreamFailure(error: unknown): string {
  let best: { rank: number; text: string } = { rank: 0, text: 'connection failed' };
  for (const link of causeChain(error)) {
    const found = classify(link);
    if (found && found.rank > best.rank) best = found;
  }
  return best.text;
}

const RANK_NOT_MCP = 1;
const RANK_HTTP = 2;
const RANK_TOO_LARGE = 3;
const RANK_REFUSED = 4;

/**
 * The SSE transport keeps only the message of a connection error, in an SseError without a status
 * ("SSE error: <message>"), and reports a broken stream as "SSE stream disconnected: <error>". The
 * SDK writes these prefixes and we write the rest, so matching the whole message is safe.
 */
const SSE_ERROR_PREFIX = 'SSE error: ';
const SSE_DISCONNECTED_TOO_LARGE = /^SSE stream disconnected: UpstreamTooLarge: the upstream's answer exceeds \d+ bytes$/;
/** The legacy SSE transport's POST failure: the status is ours to read, the rest is the upstream's. */
const SSE_POST_STATUS = /^Error POSTing to endpoint \(HTTP (\d{3})\)/;
const NOT_MCP_CODES = new Set<string>([SdkErrorCode.ClientHttpUnexpectedContent, SdkErrorCode.InvalidResult, SdkErrorCode.UnsupportedResultType]);

function classify(error: unknown): { rank: number; text: string } | undefined {
  if (error instanceof UpstreamRefused) return { rank: RANK_REFUSED, text: error.tellable ? `refused by policy (${error.reason})` : 'connection failed' };
  if (error instanceof UpstreamTooLarge) return { rank: RANK_TOO_LARGE, text: 'result too large' };
  const http = (status: number) => ({ rank: RANK_HTTP, text: `HTTP ${status}` });
  const notMcp = { rank: RANK_NOT_MCP, text: 'not an MCP server' };
  if (SdkHttpError.isInstance(error) && Number.isInteger(error.status)) return http(error.status);
  if (SseError.isInstance(error)) {
    if (error.code === undefined) {
      const message = error.message.startsWith(SSE_ERROR_PREFIX) ? error.message.slice(SSE_ERROR_PREFIX.length) : '';
      const refused = REFUSED_MESSAGE.exec(message)?.[1];
      if (refused && REFUSAL_REASONS.has(refused)) return { rank: RANK_REFUSED, text: `refused by policy (${refused})` };
      return TOO_LARGE_MESSAGE.test(message) ? { rank: RANK_TOO_LARGE, text: 'result too large' } : undefined;
    }
    // eventsource reports a 200 without text/event-stream, and a 204, with their status.
    return error.code >= 200 && error.code < 300 ? notMcp : http(error.code);
  }
  if (UnauthorizedError.isInstance(error)) return http(401);
  if (SdkError.isInstance(error)) return NOT_MCP_CODES.has(error.code) ? notMcp : undefined;
  if (ProtocolError.isInstance(error) || UnsupportedProtocolVersionError.isInstance(error)) return notMcp;
  if (error instanceof Error) {
    if (SSE_DISCONNECTED_TOO_LARGE.test(error.message)) return { rank: RANK_TOO_LARGE, text: 'result too large' };
    const status = SSE_POST_STATUS.exec(error.message)?.[1];
    if (status) return http(Number(status));
    // A body that is not JSON, or JSON that is not JSON-RPC.
    if (error instanceof SyntaxError || error.name === 'ZodError') return notMcp;
  }
  return undefined;
}

/** The error, its causes (`cause`, an SdkError's `data.cause`) and an AggregateError's members. */
function* causeChain(error: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  const pending = [error];
  while (pending.length > 0) {
    const link = pending.shift();
    if (link === undefined || link === null || seen.has(link) || seen.size > 32) continue;
    seen.add(link);
    yield link;
    if (typeof link !== 'object') continue;
    pending.push((link as { cause?: unknown }).cause);
    const data = (link as { data?: unknown }).data;
    if (typeof data === 'object' && data !== null) pending.push((data as { cause?: unknown }).cause);
    if (link instanceof AggregateError) pending.push(...link.errors);
  }
}

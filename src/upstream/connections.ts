/**
 * Open MCP client connections to a service's upstreams: remote servers over Streamable HTTP (the
 * legacy SSE transport as a fallback) through the guarded fetch (the address policy on every
 * connection, redirects included, and the answer size cap), and supervised stdio children from
 * UPSTREAMS_FILE. One connection per upstream, reopened on demand; a connection that failed is
 * dropped so the next use opens a new one.
 */
import { Client, SSEClientTransport, StreamableHTTPClientTransport, type AuthProvider, type FetchLike } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Logger } from '../logger.js';
import type { UpstreamRow } from '../store/upstream-store.js';
import { withDeadline } from '../lib/deadline.js';
import { UpstreamRefused, UpstreamTooLarge, type GuardedFetch } from './guarded-fetch.js';
import { authorizationFailureIn } from './oauth.js';
import { bindingOf, openHeaders } from './sealed-headers.js';
import { SecretOpenError, type SecretBox } from '../lib/secret-box.js';

/**
 * A local MCP server run as a child process over stdio, from the operator's UPSTREAMS_FILE only
 * (never through the API: no remote command execution).
 */
export interface StdioServer {
  command: string;
  args: string[];
  env: Record<string, string>;
  tenant: string;
  catalog: string;
  refresh_seconds: number;
  trust: 'pin' | 'auto';
  /** How its tools' results are read (RESULT_SCAN for it alone); absent: the service's. */
  result_scan?: 'flag' | 'block' | 'off';
}

export const STDIO_URL_PREFIX = 'stdio:';
/** An upstream's key in this process's maps: its catalog and name. */
const upstreamKey = (catalogId: number, name: string) => `${catalogId}\0${name}`;
/** The SDK's stdio transport's error for a message over its `maxBufferSize`. */
const STDIO_TOO_LARGE = /^ReadBuffer exceeded maximum size/;

interface Connection {
  client: Client;
  /** The registration it was opened for (url and headers): another replica may have changed it since. */
  registration: string;
}

/** What a connection is opened for: the upstream's url and headers. */
const registration = (row: Pick<UpstreamRow, 'url' | 'headers'>) => JSON.stringify([row.url, row.headers ?? {}]);

/** Backoff of a stdio child's restarts: the first after this, doubling up to RESTART_MAX_MS. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 60_000;

export interface ConnectionDeps {
  stdioServers?: Map<string, StdioServer>;
  logger: Logger;
  version: string;
  /** How remote upstreams are reached (the address policy and size cap live in it). */
  fetch: GuardedFetch;
  /** Deadline of opening a connection (the MCP handshake), ms. */
  connectTimeoutMs: number;
  /** Largest message read from a stdio child, bytes (UPSTREAM_MAX_RESULT_BYTES; remote answers are cut by `fetch`). */
  maxResultBytes: number;
  /** Opens the header values, which the store keeps sealed. */
  secrets: SecretBox;
  /**
   * An OAuth upstream's bearer token, renewed as needed, and the fetch (`fetch` with the scope
   * step-up) its transport uses (oauth.ts); undefined: static headers only.
   */
  oauth?(row: UpstreamRow): { authProvider: AuthProvider; fetch: FetchLike } | undefined;
  /** An upstream told us its tools changed (notifications/tools/list_changed). */
  onListChanged(row: UpstreamRow): void;
  /**
   * A stdio child exited on its own: sync it again (which starts it). Resolves true when that
   * worked, false to keep backing off; rejects when the upstream is gone (no more restarts).
   */
  onChildExited(row: UpstreamRow): Promise<boolean>;
}

export class UpstreamConnections {
  readonly #deps: ConnectionDeps;
  /** Open client connections by upstream key; dropped on failure, reopened on demand. */
  readonly #connections = new Map<string, Promise<Connection>>();
  /** Stdio upstreams whose last message passed UPSTREAM_MAX_RESULT_BYTES (read once by `tooLarge`). */
  readonly #tooLarge = new Set<string>();
  /** Stdio children that exited on their own, by upstream key: restarts so far, and the pending one. */
  readonly #restarts = new Map<string, { count: number; timer?: NodeJS.Timeout }>();
  #closed = false;

  constructor(deps: ConnectionDeps) {
    this.#deps = deps;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const restart of this.#restarts.values()) clearTimeout(restart.timer);
    const open = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(open.map((connection) => connection.then((c) => ((c.client.onclose = undefined), c.client.close())).catch(() => {})));
  }

  /** The upstream's client, opened (or reopened for a changed registration) when needed. */
  async client(row: UpstreamRow): Promise<Client> {
    const key = upstreamKey(row.catalogId, row.name);
    const open = this.#connections.get(key);
    if (open) {
      // A PUT on another replica changes the row, not this replica's connection: reopen for the new one.
      const connection = await open.catch(() => undefined);
      if (connection?.registration === registration(row)) return connection.client;
      if (this.#connections.get(key) === open) await this.drop(row.catalogId, row.name);
    }
    let connection = this.#connections.get(key);
    if (!connection) {
      connection = this.#connect(row);
      connection.catch(() => this.#connections.delete(key));
      this.#connections.set(key, connection);
    }
    return (await connection).client;
  }

  /** Whether the upstream's connection ended because a message passed the cap (asked once per such end). */
  tooLarge(catalogId: number, name: string): boolean {
    return this.#tooLarge.delete(upstreamKey(catalogId, name));
  }

  async drop(catalogId: number, name: string): Promise<void> {
    const key = upstreamKey(catalogId, name);
    const connection = this.#connections.get(key);
    this.#connections.delete(key);
    // Closed on purpose: not a child that exited on its own, so no restart. One still opening is
    // closed when it opens (or fails by its own deadline): a drop never waits for it.
    void connection?.then((c) => ((c.client.onclose = undefined), c.client.close())).catch(() => {});
  }

  async #connect(row: UpstreamRow): Promise<Connection> {
    const opened = registration(row);
    const make = () =>
      new Client(
        { name: 'toolsift', version: this.#deps.version },
        { listChanged: { tools: { onChanged: (error) => (error ? undefined : this.#deps.onListChanged(row)) } } },
      );
    const timeout = this.#deps.connectTimeoutMs;
    if (row.url.startsWith(STDIO_URL_PREFIX)) {
      const server = this.#deps.stdioServers?.get(row.url.slice(STDIO_URL_PREFIX.length));
      if (!server) throw new Error(`${row.url} is not in UPSTREAMS_FILE`);
      const client = make();
      // A line (one message) longer than UPSTREAM_MAX_RESULT_BYTES ends the child's connection, as a
      // remote answer that long is cut: the call ends isError and the child is started again.
      const transport = new StdioClientTransport({
        command: server.command,
        args: server.args,
        env: { ...getDefaultEnvironment(), ...server.env },
        stderr: 'ignore',
        maxBufferSize: this.#deps.maxResultBytes,
      });
      await opening(client, transport, timeout);
      // The SDK tells only its transport's error handler why it closed: a call it ends learns why here.
      const handled = transport.onerror;
      transport.onerror = (error) => {
        if (STDIO_TOO_LARGE.test(error.message)) this.#tooLarge.add(upstreamKey(row.catalogId, row.name));
        handled?.(error);
      };
      // Supervised: a child that exits on its own is started again (and re-synced) after a backoff.
      client.onclose = () => this.#restartLater(row);
      return { client, registration: opened };
    }
    const oauth = this.#deps.oauth?.(row);
    const options = {
      requestInit: { headers: openHeaders(this.#deps.secrets, bindingOf(row), row.headers) },
      fetch: oauth?.fetch ?? this.#deps.fetch,
      ...(oauth ? { authProvider: oauth.authProvider } : {}),
    };
    const url = new URL(row.url);
    // One deadline for the whole opening, both transports: an endpoint that never answers (or
    // answers a hanging body) must not hold a registration or a call past it.
    const deadline = Date.now() + timeout;
    const client = make();
    try {
      await opening(client, new StreamableHTTPClientTransport(url, options), timeout);
      return { client, registration: opened };
    } catch (streamable) {
      // A refusal by the address policy, a timeout, or a status legacy servers do not answer is final.
      if (!legacyMayAnswer(streamable) || Date.now() >= deadline) throw streamable;
      const legacy = make();
      try {
        await opening(legacy, new SSEClientTransport(url, options), deadline - Date.now());
        return { client: legacy, registration: opened };
      } catch {
        throw streamable;
      }
    }
  }

  /**
   * A stdio child exited: drop its connection and sync it again (which starts it) after 1 s, 2 s,
   * 4 s ... up to a minute between attempts; a sync that works resets the backoff.
   */
  #restartLater(row: UpstreamRow): void {
    const key = upstreamKey(row.catalogId, row.name);
    this.#connections.delete(key);
    if (this.#closed || this.#restarts.get(key)?.timer) return;
    const restart = this.#restarts.get(key) ?? { count: 0 };
    const delay = Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** restart.count);
    restart.count += 1;
    this.#deps.logger.warn({ upstream: row.name, catalog: row.catalog, restart_in_ms: delay, restarts: restart.count }, 'stdio upstream exited; restarting');
    restart.timer = setTimeout(() => {
      restart.timer = undefined;
      if (this.#closed) return;
      void this.#deps.onChildExited(row).then(
        (worked) => {
          if (worked) this.#restarts.get(key)!.count = 0;
          else this.#restartLater(row);
        },
        () => this.#restarts.delete(key),
      );
    }, delay);
    restart.timer.unref();
    this.#restarts.set(key, restart);
  }
}

/** Connects `client` within `ms`, or closes it (ending whatever it has in flight) and fails. */
async function opening(client: Client, transport: Parameters<Client['connect']>[0], ms: number): Promise<void> {
  try {
    await withDeadline(client.connect(transport, { timeout: ms }), ms, () => new OpeningTimedOut());
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
}

/** An upstream did not finish the MCP handshake within UPSTREAM_CONNECT_TIMEOUT_MS (to a tenant: "connection failed"). */
class OpeningTimedOut extends Error {
  constructor() {
    super('the MCP handshake did not finish in time');
  }
}

/** Whether a Streamable HTTP failure may come from a server that speaks only the legacy SSE transport. */
function legacyMayAnswer(error: unknown): boolean {
  // A name refused where it resolves goes on as a name that does not resolve would (the legacy transport is refused again): no step tells them apart.
  if (
    (error instanceof UpstreamRefused && error.tellable) ||
    error instanceof UpstreamTooLarge ||
    error instanceof OpeningTimedOut ||
    error instanceof SecretOpenError ||
    authorizationFailureIn(error)
  )
    return false;
  const status = (error as { status?: unknown }).status ?? (error as { code?: unknown }).code;
  // The 2024-11-05 backwards-compatibility rule: a POST answered 400, 404 or 405 means "try SSE".
  return typeof status !== 'number' || status === 400 || status === 404 || status === 405;
}

/**
 * Upstream MCP servers as catalog sources: toolsift connects to each as an MCP client (the SDK's
 * client package; Streamable HTTP, falling back to the legacy SSE transport), syncs every page of
 * its `tools/list` into the catalog through the same normalize / content-hash / queue path as REST
 * ingestion (`server` = the upstream's name), re-syncs on `notifications/tools/list_changed` and
 * every `refresh_seconds`, and forwards `call_tool` to it. A sync is all or nothing: a failure or a
 * malformed list leaves the previous tools and records the error.
 */
import { readFileSync } from 'node:fs';
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';
import * as catalogs from '../catalog/catalog-service.js';
import { contentHash } from '../catalog/content-hash.js';
import { normalizeTool } from '../catalog/tool-formats.js';
import { AppError, notFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Db } from '../store/database.js';
import * as store from '../store/upstream-store.js';
import type { UpstreamCallInput, UpstreamCallResult, UpstreamCaller } from './upstream-caller.js';

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
}

const upstreamsFile = z.object({
  mcpServers: z.record(
    z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'server names are 1-64 characters of A-Z a-z 0-9 . _ -'),
    z.object({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      /** toolsift's additions to the shape MCP hosts use: where the server's tools go. */
      catalog: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).default('local'),
      tenant: z.string().min(1).default('default'),
      /** How often to re-list its tools besides on its list_changed notifications, seconds. */
      refresh_seconds: z.number().int().min(10).max(86_400).default(300),
    }),
  ),
});

/** Reads UPSTREAMS_FILE: `{"mcpServers": {"<name>": {command, args?, env?, catalog? ("local"), tenant? ("default"), refresh_seconds? (300)}}}`. */
export function readUpstreamsFile(path: string): Map<string, StdioServer> {
  let parsed: z.infer<typeof upstreamsFile>;
  try {
    parsed = upstreamsFile.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    throw new Error(`UPSTREAMS_FILE ${path}: ${error instanceof z.ZodError ? error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') : (error as Error).message}`);
  }
  return new Map(Object.entries(parsed.mcpServers));
}

export const STDIO_URL_PREFIX = 'stdio:';

export interface UpstreamDeps {
  db: Db;
  /** Local servers from UPSTREAMS_FILE, by name. */
  stdioServers?: Map<string, StdioServer>;
  catalog: catalogs.CatalogDeps;
  logger: Logger;
  metrics?: Metrics;
  callTimeoutMs: number;
  version: string;
}

export interface UpstreamState {
  name: string;
  url: string;
  /** Header names only: values are credentials and never leave the store. */
  header_names: string[];
  refresh_seconds: number;
  last_sync_at: string | null;
  tool_count: number;
  last_sync: { added: number; changed: number; removed: number } | null;
  last_error: string | null;
}

export function upstreamState(row: store.UpstreamRow): UpstreamState {
  return {
    name: row.name,
    url: row.url,
    header_names: Object.keys(row.headers ?? {}).sort(),
    refresh_seconds: row.refreshSeconds,
    last_sync_at: row.lastSyncAt ? new Date(row.lastSyncAt).toISOString() : null,
    tool_count: row.toolCount,
    last_sync: row.lastAdded === null ? null : { added: row.lastAdded, changed: row.lastChanged ?? 0, removed: row.lastRemoved ?? 0 },
    last_error: row.lastError,
  };
}

/** How long one sync may take before it counts as failed. */
const SYNC_TIMEOUT_MS = 30_000;
/** How often this process looks for upstreams due for a refresh. */
const REFRESH_TICK_MS = 15_000;

interface Connection {
  client: Client;
  /** The registration it was opened for (url and headers): another replica may have changed it since. */
  registration: string;
}

/** Backoff of a stdio child's restarts: the first after this, doubling up to RESTART_MAX_MS. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 60_000;

export class UpstreamService implements UpstreamCaller {
  readonly #deps: UpstreamDeps;
  /** Open client connections by upstream key; dropped on failure, reopened on demand. */
  readonly #connections = new Map<string, Promise<Connection>>();
  readonly #syncing = new Map<string, Promise<UpstreamState>>();
  /** Stdio children that exited on their own, by upstream key: restarts so far, and the pending one. */
  readonly #restarts = new Map<string, { count: number; timer?: NodeJS.Timeout }>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(deps: UpstreamDeps) {
    this.#deps = deps;
  }

  /** Registers the UPSTREAMS_FILE servers (each syncs in the background) and starts refreshing. */
  async startStdioServers(): Promise<void> {
    for (const [name, server] of this.#deps.stdioServers ?? []) {
      void this.register(server.tenant, server.catalog, { name, url: `${STDIO_URL_PREFIX}${name}`, headers: {}, refreshSeconds: server.refresh_seconds }).catch((error: Error) =>
        this.#deps.logger.warn({ upstream: name, reason: error.message }, 'stdio upstream could not be registered'),
      );
    }
  }

  /** Refreshes due upstreams in the background (one replica per upstream, by lease). */
  start(): void {
    this.#timer = setInterval(() => void this.#refreshDue(), REFRESH_TICK_MS);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const restart of this.#restarts.values()) clearTimeout(restart.timer);
    const open = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(open.map((connection) => connection.then((c) => ((c.client.onclose = undefined), c.client.close())).catch(() => {})));
  }

  async register(tenant: string, catalog: string, input: { name: string; url: string; headers: Record<string, string>; refreshSeconds: number }): Promise<UpstreamState> {
    const ref = { tenant, name: catalog };
    let summary = await catalogs.getCatalog(this.#deps.catalog, ref).catch((error: AppError) => (error.code === 'not_found' ? undefined : Promise.reject(error)));
    if (!summary) summary = (await catalogs.replaceCatalog(this.#deps.catalog, ref, [])).catalog;
    // The catalog may be deleted between the read above and this write: then it is not found.
    if (!(await store.putUpstream(this.#deps.db, summary.id, input))) throw notFound(`catalog "${catalog}"`);
    await this.#dropConnection(summary.id, input.name);
    return this.sync(tenant, catalog, input.name);
  }

  async remove(tenant: string, catalog: string, name: string): Promise<void> {
    const row = await store.getUpstream(this.#deps.db, tenant, catalog, name);
    if (!row) throw notFound(`upstream "${name}" in catalog "${catalog}"`);
    await this.#writeTools(row, []);
    await store.deleteUpstream(this.#deps.db, row.catalogId, name);
    await this.#dropConnection(row.catalogId, name);
  }

  async list(tenant: string, catalog: string): Promise<UpstreamState[]> {
    await catalogs.getCatalog(this.#deps.catalog, { tenant, name: catalog });
    return (await store.listUpstreams(this.#deps.db, tenant, catalog)).map(upstreamState);
  }

  /** Syncs one upstream now (concurrent calls share one run) and returns its state. */
  sync(tenant: string, catalog: string, name: string): Promise<UpstreamState> {
    const key = `${tenant}\0${catalog}\0${name}`;
    let running = this.#syncing.get(key);
    if (!running) {
      running = this.#sync(tenant, catalog, name).finally(() => this.#syncing.delete(key));
      this.#syncing.set(key, running);
    }
    return running;
  }

  async has(tenant: string, catalog: string, server: string): Promise<boolean> {
    return (await store.getUpstream(this.#deps.db, tenant, catalog, server)) !== undefined;
  }

  async callTool(input: UpstreamCallInput): Promise<UpstreamCallResult> {
    const row = input.upstream !== undefined ? input.upstream : await store.getUpstream(this.#deps.db, input.tenant, input.catalog, input.server);
    if (!row) return { ...errorResult(`no upstream "${input.server}" in catalog "${input.catalog}"`), unknownUpstream: true };
    try {
      const { client } = await this.#connection(row);
      const result = await client.callTool({ name: input.tool, arguments: input.arguments }, { timeout: this.#deps.callTimeoutMs, signal: input.signal });
      return result as UpstreamCallResult;
    } catch (error) {
      await this.#dropConnection(row.catalogId, row.name);
      const reason = (error as Error).message;
      this.#deps.logger.warn({ upstream: row.name, catalog: row.catalog, tool: input.tool, reason }, 'upstream call failed');
      return errorResult(`upstream "${row.name}" failed to run "${input.tool}": ${reason}`);
    }
  }

  async #sync(tenant: string, catalog: string, name: string): Promise<UpstreamState> {
    const row = await store.getUpstream(this.#deps.db, tenant, catalog, name);
    if (!row) throw notFound(`upstream "${name}" in catalog "${catalog}"`);
    const started = performance.now();
    try {
      const { client } = await this.#connection(row);
      const listed = await client.listTools(undefined, { timeout: SYNC_TIMEOUT_MS });
      const tools = listed.tools.map((tool, index) => {
        if (!tool || typeof tool.name !== 'string' || tool.name === '') throw new Error(`tools/list entry ${index} has no name`);
        return { name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? { type: 'object' }, server: row.name };
      });
      const outcome = await this.#writeTools(row, tools);
      await store.recordSync(this.#deps.db, row.catalogId, row.name, outcome);
      this.#deps.metrics?.mcpRequests.inc({ method: 'upstream/sync', tool: '', outcome: 'ok' });
      this.#deps.logger.info({ upstream: row.name, catalog, tenant, ...outcome, ms: Math.round(performance.now() - started) }, 'upstream synced');
    } catch (error) {
      const reason = error instanceof AppError ? error.message : (error as Error).message;
      await this.#dropConnection(row.catalogId, row.name);
      await store.recordSync(this.#deps.db, row.catalogId, row.name, { error: reason });
      this.#deps.metrics?.mcpRequests.inc({ method: 'upstream/sync', tool: '', outcome: 'error' });
      this.#deps.logger.warn({ upstream: row.name, catalog, tenant, reason }, 'upstream sync failed; previous tools kept');
    }
    // Removed while it synced (the upstream, or its whole catalog): a 404, as if asked a moment later.
    const after = await store.getUpstream(this.#deps.db, tenant, catalog, name);
    if (!after) throw notFound(`upstream "${name}" in catalog "${catalog}"`);
    return upstreamState(after);
  }

  /**
   * Replaces the catalog's tools of this upstream with `tools`, keeping every other tool, in one
   * catalog write under the catalog's lock (all or nothing; a concurrent write of other tools is
   * kept). Returns what changed, by name and content hash.
   */
  async #writeTools(row: store.UpstreamRow, tools: Array<Record<string, unknown>>) {
    const ref = { tenant: row.tenant, name: row.catalog };
    const { before } = await catalogs.replaceServerTools(this.#deps.catalog, ref, row.name, tools);
    let added = 0;
    let changed = 0;
    for (const tool of tools) {
      const hash = contentHash(normalizeTool(tool));
      const previous = before.get(tool.name as string);
      if (previous === undefined) added += 1;
      else if (previous !== hash) {
        changed += 1;
        // Kept for a later quarantine of silently changed tools: both hashes.
        this.#deps.logger.info({ upstream: row.name, catalog: row.catalog, tool: tool.name, previous_hash: previous, hash }, 'upstream tool definition changed');
      }
    }
    const names = new Set(tools.map((tool) => tool.name as string));
    const removed = [...before.keys()].filter((name) => !names.has(name)).length;
    return { toolCount: tools.length, added, changed, removed };
  }

  async #connection(row: store.UpstreamRow): Promise<Connection> {
    const key = `${row.catalogId}\0${row.name}`;
    const open = this.#connections.get(key);
    if (open) {
      // A PUT on another replica changes the row, not this replica's connection: reopen for the new one.
      const connection = await open.catch(() => undefined);
      if (connection?.registration === registration(row)) return connection;
      if (this.#connections.get(key) === open) await this.#dropConnection(row.catalogId, row.name);
    }
    let connection = this.#connections.get(key);
    if (!connection) {
      connection = this.#connect(row);
      connection.catch(() => this.#connections.delete(key));
      this.#connections.set(key, connection);
    }
    return connection;
  }

  async #connect(row: store.UpstreamRow): Promise<Connection> {
    const opened = registration(row);
    const onChanged = () => void this.sync(row.tenant, row.catalog, row.name).catch(() => {});
    const make = () =>
      new Client({ name: 'toolsift', version: this.#deps.version }, { listChanged: { tools: { onChanged: (error) => (error ? undefined : onChanged()) } } });
    if (row.url.startsWith(STDIO_URL_PREFIX)) {
      const server = this.#deps.stdioServers?.get(row.url.slice(STDIO_URL_PREFIX.length));
      if (!server) throw new Error(`${row.url} is not in UPSTREAMS_FILE`);
      const client = make();
      await client.connect(new StdioClientTransport({ command: server.command, args: server.args, env: { ...getDefaultEnvironment(), ...server.env }, stderr: 'ignore' }), {
        timeout: SYNC_TIMEOUT_MS,
      });
      // Supervised: a child that exits on its own is started again (and re-synced) after a backoff.
      client.onclose = () => this.#restartLater(row);
      return { client, registration: opened };
    }
    const requestInit = { headers: row.headers ?? {} };
    const url = new URL(row.url);
    const client = make();
    try {
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit }), { timeout: SYNC_TIMEOUT_MS });
      return { client, registration: opened };
    } catch (streamable) {
      // Servers that only speak the legacy HTTP+SSE transport.
      const legacy = make();
      try {
        await legacy.connect(new SSEClientTransport(url, { requestInit }), { timeout: SYNC_TIMEOUT_MS });
        return { client: legacy, registration: opened };
      } catch {
        throw new Error(`cannot connect to ${row.url}: ${(streamable as Error).message}`);
      }
    }
  }

  /**
   * A stdio child exited: drop its connection and sync it again (which starts it) after 1 s, 2 s,
   * 4 s ... up to a minute between attempts; a sync that works resets the backoff.
   */
  #restartLater(row: store.UpstreamRow): void {
    const key = `${row.catalogId}\0${row.name}`;
    this.#connections.delete(key);
    if (this.#closed || this.#restarts.get(key)?.timer) return;
    const restart = this.#restarts.get(key) ?? { count: 0 };
    const delay = Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** restart.count);
    restart.count += 1;
    this.#deps.logger.warn({ upstream: row.name, catalog: row.catalog, restart_in_ms: delay, restarts: restart.count }, 'stdio upstream exited; restarting');
    restart.timer = setTimeout(() => {
      restart.timer = undefined;
      if (this.#closed) return;
      void this.sync(row.tenant, row.catalog, row.name)
        .then((state) => {
          if (state.last_error === null) this.#restarts.get(key)!.count = 0;
          else this.#restartLater(row);
        })
        .catch((error) => {
          // The upstream was removed meanwhile: nothing to restart.
          if (error instanceof AppError && error.code === 'not_found') this.#restarts.delete(key);
          else this.#restartLater(row);
        });
    }, delay);
    restart.timer.unref();
    this.#restarts.set(key, restart);
  }

  async #dropConnection(catalogId: number, name: string): Promise<void> {
    const key = `${catalogId}\0${name}`;
    const connection = this.#connections.get(key);
    this.#connections.delete(key);
    // Closed on purpose: not a child that exited on its own, so no restart.
    await connection?.then((c) => ((c.client.onclose = undefined), c.client.close())).catch(() => {});
  }

  async #refreshDue(): Promise<void> {
    try {
      const due = await store.claimDueUpstreams(this.#deps.db, Math.ceil(SYNC_TIMEOUT_MS / 1000) * 2);
      for (const row of due) await this.sync(row.tenant, row.catalog, row.name);
    } catch (error) {
      this.#deps.logger.warn({ err: error }, 'upstream refresh failed; next tick retries');
    }
  }
}

/** What a connection is opened for: the upstream's url and headers. */
const registration = (row: Pick<store.UpstreamRow, 'url' | 'headers'>) => JSON.stringify([row.url, row.headers ?? {}]);

function errorResult(message: string): UpstreamCallResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

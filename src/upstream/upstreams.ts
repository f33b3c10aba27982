/**
 * Upstream MCP servers as catalog sources: toolsift connects to each as an MCP client (connections.ts),
 * lists its tools on registration, on `notifications/tools/list_changed` and every
 * `refresh_seconds`, and forwards `call_tool` to it. It is a gateway between agents and those
 * servers, so what an upstream lists is not served as it comes (issue 70):
 * - every listed definition is scanned (trust/scan-tool.ts) and pinned (trust/pins.ts): only a tool
 *   whose current definition is the approved one is in the catalog; a new or changed one waits in
 *   quarantine for `approve` / `reject` (or is approved at once under `trust: "auto"` when the
 *   scanner passes it), and the registration's own listing is approved except what the scanner
 *   rates high;
 * - a name another source of the catalog holds stays with it (catalog-store.ts replaceServerTools);
 * - `last_error` carries the gateway's own words for a failure, never an upstream's text.
 * A sync is all or nothing: a failure or a malformed list leaves the previous tools.
 */
import { requireResultScan } from '../trust/result-scan-floor.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { auditLog, type AuditLog } from '../audit.js';
import * as catalogs from '../catalog/catalog-service.js';
import { normalizeTool } from '../catalog/tool-formats.js';
import { mapYielding } from '../lib/time-slice.js';
import type { Tool } from '../lib/tool.js';
import { AppError, notFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Db } from '../store/database.js';
import type { Executor } from '../store/tool-store.js';
import { catalogToolNames } from '../store/catalog-store.js';
import * as store from '../store/upstream-store.js';
import type { Access } from '../trust/policy.js';
import { diffDefinitions, listedDefinition, pinHash, pinStatus, planPins, type ListedTool, type PinRow } from '../trust/pins.js';
import { RESERVED_TOOL_NAMES } from '../trust/reserved-names.js';
import { scanTool } from '../trust/scan-tool.js';
import { revealInvisible } from '../trust/reveal.js';
import { stripInvisible, visibleDeep } from '../trust/visible-text.js';
import { checkUpstreamUrl, type AllowList } from './address-policy.js';
import { STDIO_URL_PREFIX, UpstreamConnections, type StdioServer } from './connections.js';
import {
  createGuardedFetch,
  describeUpstreamFailure,
  refusalIn,
  resolveChecked,
  UpstreamRefused,
  UpstreamTooLarge,
  type GuardedFetch,
} from './guarded-fetch.js';
import { authorizationFailureIn, UpstreamOAuth, type OAuthSettings, type OAuthState } from './oauth.js';
import type { UpstreamActor } from './registration.js';
import { SecretOpenError, type SecretBox } from '../lib/secret-box.js';
import { requireSecretsKey, sealHeaders } from './sealed-headers.js';
import type { EgressProxy } from './egress-proxy.js';
import type { ClientMetadataSettings } from './client-metadata.js';
import type { UpstreamCallInput, UpstreamCallResult, UpstreamCaller } from './upstream-caller.js';
import type { TraceContext } from '../lib/trace-context.js';
import { CATALOG, MCP_METHOD_NAME, NO_TRACING, OUTCOME, RESULTS, TENANT, UPSTREAM, type Tracing } from '../tracing/tracing.js';

export { STDIO_URL_PREFIX, type StdioServer };

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

const upstreamsFile = z.object({
  mcpServers: z.record(
    z
      .string()
      .regex(NAME, 'server names are 1-64 characters of A-Z a-z 0-9 . _ -')
      .refine((name) => name !== '.' && name !== '..', 'server names may not be . or ..'),
    z.object({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      /** toolsift's additions to the shape MCP hosts use: where the server's tools go. */
      catalog: z.string().regex(NAME).default('local'),
      tenant: z.string().min(1).default('default'),
      /** How often to re-list its tools besides on its list_changed notifications, seconds. */
      refresh_seconds: z.number().int().min(10).max(86_400).default(300),
      /** `pin` (default): new and changed tools wait for approval; `auto`: those the scanner passes are approved. */
      trust: z.enum(['pin', 'auto']).default('pin'),
      /** How its tools' results are read (RESULT_SCAN for it alone); absent: the service's. */
      result_scan: z.enum(['flag', 'block', 'off']).optional(),
    }),
  ),
});

/** Reads UPSTREAMS_FILE: `{"mcpServers": {"<name>": {command, args?, env?, catalog? ("local"), tenant? ("default"), refresh_seconds? (300), trust? ("pin"), result_scan?}}}`. */
export function readUpstreamsFile(path: string): Map<string, StdioServer> {
  let parsed: z.infer<typeof upstreamsFile>;
  try {
    parsed = upstreamsFile.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    throw new Error(
      `UPSTREAMS_FILE ${path}: ${error instanceof z.ZodError ? error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') : (error as Error).message}`,
    );
  }
  return new Map(Object.entries(parsed.mcpServers));
}

export interface UpstreamDeps {
  db: Db;
  /** Local servers from UPSTREAMS_FILE, by name. */
  stdioServers?: Map<string, StdioServer>;
  catalog: catalogs.CatalogDeps;
  logger: Logger;
  metrics?: Metrics;
  callTimeoutMs: number;
  version: string;
  /** UPSTREAM_ALLOW: the internal addresses and names an operator opened to upstreams. */
  allow: AllowList;
  /** Deadline of connecting to an upstream and listing its tools, ms (UPSTREAM_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs: number;
  /** Largest answer read from an upstream, bytes (UPSTREAM_MAX_RESULT_BYTES). */
  maxResultBytes: number;
  audit?: AuditLog;
  /** How remote upstreams are reached; built from `allow` and `maxResultBytes` when absent (tests pass one with their own DNS). */
  fetch?: GuardedFetch;
  /** Seals header values, OAuth tokens and client secrets at rest (SECRETS_KEY). */
  secrets: SecretBox;
  /** RESULT_SCAN_MIN: the least an upstream's own `result_scan` may ask for; absent: off (any). */
  resultScanMin?: store.UpstreamResultScan;
  /** UPSTREAM_PROXY: remote upstreams are reached through it. */
  proxy?: EgressProxy;
  /** OAUTH_CLIENT_METADATA_URL (client-metadata.ts): each tenant's client id where a server supports it. */
  clientMetadata?: ClientMetadataSettings;
  /** Where each sync's spans go (tracing/tracing.ts); absent: none, and a tools/list is sent as without tracing. */
  tracing?: Tracing;
}

export interface UpstreamRegistration {
  name: string;
  url: string;
  headers: Record<string, string>;
  refreshSeconds: number;
  trust: store.UpstreamTrust;
  /** How its tools' results are read (RESULT_SCAN for it alone); null or absent: the service's. */
  resultScan?: store.UpstreamResultScan | null;
  /** `auth: {type: "oauth"}`: toolsift gets its tokens (oauth.ts); null or absent: none. */
  oauth?: OAuthSettings | null;
}

export interface UpstreamState {
  name: string;
  url: string;
  /** Header names only: values are credentials and never leave the store. */
  header_names: string[];
  refresh_seconds: number;
  trust: store.UpstreamTrust;
  /** How its tools' results are read; null: the service's RESULT_SCAN. */
  result_scan: store.UpstreamResultScan | null;
  last_sync_at: string | null;
  /** Tools served (approved and in the catalog). */
  tool_count: number;
  /** Tools waiting for approval. */
  pending: number;
  last_sync: { added: number; changed: number; removed: number } | null;
  last_error: string | null;
  /** Tools left out because another source of the catalog holds their names. */
  conflicts: { name: string; held_by: string }[];
  /** OAuth (oauth.ts): grant, status, token expiry, the last failure; null: static headers only. */
  auth: OAuthState | null;
}

export function upstreamState(row: store.UpstreamRow): UpstreamState {
  return {
    name: row.name,
    url: row.url,
    header_names: Object.keys(row.headers ?? {}).sort(),
    refresh_seconds: row.refreshSeconds,
    trust: row.trust,
    result_scan: row.resultScan ?? null,
    last_sync_at: row.lastSyncAt ? new Date(row.lastSyncAt).toISOString() : null,
    tool_count: row.toolCount,
    pending: Number(row.pending ?? 0),
    last_sync: row.lastAdded === null ? null : { added: row.lastAdded, changed: row.lastChanged ?? 0, removed: row.lastRemoved ?? 0 },
    last_error: row.lastError,
    conflicts: row.conflicts ?? [],
    auth: UpstreamOAuth.stateOf(row),
  };
}

/**
 * `states`, upstreams of `catalog`, as `access` sees them. A key that sees only some tools is told
 * counts and names over those alone (the stored ones would tell how many tools it does not see,
 * and name them): `tool_count` its served tools the key sees, `pending` its waiting tools the key
 * sees (as `review` names them), `conflicts` those whose tool and holder it sees, and a conflicts
 * `last_error` written again from them, and no `last_sync` for a key limited by tool names (its
 * counts are over every tool, removed ones too). Two statements for them all; none for a key that
 * sees every tool.
 */
export async function seenUpstreams<S extends UpstreamState>(
  db: Executor,
  access: Access,
  tenant: string,
  catalog: string,
  states: readonly S[],
): Promise<S[]> {
  if (!access.limitsTools || states.length === 0) return [...states];
  const names = states.map((state) => state.name);
  const held = [...new Set(states.flatMap((state) => state.conflicts.map((conflict) => conflict.name)))];
  const [tools, pins] = await Promise.all([store.upstreamToolOwners(db, tenant, catalog, names, held), store.upstreamPinStates(db, tenant, catalog, names)]);
  const sees = (name: string, server: string | null) => access.seesTool({ catalog, name, server });
  const holders = new Map(tools.map((tool) => [tool.name, tool]));
  return states.map((state) => {
    const own = pins.filter((pin) => pin.upstream === state.name);
    // A conflict names the listed tool and the one holding its name: shown when the key sees both.
    const conflicts = state.conflicts.filter((conflict) => {
      const holder = holders.get(conflict.name);
      return sees(conflict.name, state.name) && (!holder || sees(holder.name, holder.server));
    });
    const unservable = own
      .filter((pin) => pinStatus(pin) === 'approved' && stripInvisible(pin.name) !== pin.name)
      .map((pin) => stripInvisible(pin.name))
      .filter((name) => sees(name, state.name));
    return {
      ...state,
      tool_count: tools.filter((tool) => tool.upstream === state.name && sees(tool.name, tool.server)).length,
      pending: own.filter((pin) => pinStatus(pin) === 'pending' && sees(revealInvisible(pin.name), state.name)).length,
      conflicts,
      last_error: state.last_error !== null && isConflictsError(state.last_error) ? conflictsError(conflicts, unservable) : state.last_error,
      // What the last sync added, changed and removed is counted over every tool, gone ones too: a key
      // limited by tool names is not told it (a key limited by servers sees whole upstreams).
      last_sync: access.policy.tools ? null : state.last_sync,
    };
  });
}

/** What credentials an upstream is given, by name only. */
export interface UpstreamCredentials {
  /** Header names (remote servers). */
  headers: string[];
  /** Environment variable names (stdio servers of UPSTREAMS_FILE). */
  env: string[];
}

/** A tool of an upstream that is not served as listed: waiting for a decision, or rejected. */
export interface ReviewedTool {
  name: string;
  status: 'pending' | 'rejected';
  /** new: never approved; changed: an approved definition differs from what the upstream lists now. */
  change: 'new' | 'changed';
  /** The pin hash of what the upstream lists now: pass it to approve to approve exactly this. */
  hash: string;
  since: string;
  findings: PinRow['findings'];
  /** What the upstream lists now (invisible characters shown as \u escapes). */
  definition: unknown;
  /** For a changed tool: each difference from the approved definition. */
  diff?: ReturnType<typeof diffDefinitions>;
}

/** How often this process looks for upstreams due for a refresh. */
const REFRESH_TICK_MS = 15_000;

export class UpstreamService implements UpstreamCaller {
  readonly #deps: UpstreamDeps;
  readonly #audit: AuditLog;
  readonly #tracing: Tracing;
  readonly #fetch: GuardedFetch;
  /**
   * The call a fetch runs for: an answer over the size cap on an SSE stream is reported to the SDK
   * as a plain disconnect that leaves the request waiting, so the cap's hook ends that call here.
   */
  readonly #callScope = new AsyncLocalStorage<AbortController>();
  readonly #connections: UpstreamConnections;
  readonly #oauth: UpstreamOAuth;
  readonly #syncing = new Map<string, Promise<UpstreamState>>();
  /** One pin-changing operation (sync, approve, reject) at a time per upstream in this process. */
  readonly #exclusive = new Map<string, Promise<unknown>>();
  #timer: NodeJS.Timeout | null = null;

  constructor(deps: UpstreamDeps) {
    this.#deps = deps;
    this.#audit = deps.audit ?? auditLog(deps.logger, deps.metrics);
    this.#tracing = deps.tracing ?? NO_TRACING;
    this.#fetch =
      deps.fetch ??
      createGuardedFetch({
        allow: deps.allow,
        maxResponseBytes: deps.maxResultBytes,
        onTooLarge: (error) => this.#callScope.getStore()?.abort(error),
        ...(deps.proxy ? { proxy: deps.proxy } : {}),
      });
    this.#oauth = new UpstreamOAuth({
      db: deps.db,
      secrets: deps.secrets,
      fetch: this.#fetch,
      logger: deps.logger,
      audit: this.#audit,
      metrics: deps.metrics,
      version: deps.version,
      clientMetadata: deps.clientMetadata,
    });
    this.#connections = new UpstreamConnections({
      secrets: deps.secrets,
      oauth: (row) => (row.oauth ? this.#oauth.forTransport(row) : undefined),
      stdioServers: deps.stdioServers,
      logger: deps.logger,
      version: deps.version,
      fetch: this.#fetch,
      connectTimeoutMs: deps.connectTimeoutMs,
      maxResultBytes: deps.maxResultBytes,
      onListChanged: (row) => void this.sync(row.tenant, row.catalog, row.name).catch(() => {}),
      onChildExited: async (row) => {
        try {
          return (await this.sync(row.tenant, row.catalog, row.name)).last_error === null;
        } catch (error) {
          // The upstream was removed meanwhile: nothing to restart.
          if (error instanceof AppError && error.code === 'not_found') throw error;
          return false;
        }
      },
    });
  }

  /**
   * Registers the UPSTREAMS_FILE servers (each syncs in the background) and removes, with their
   * tools, the stdio servers of the file's tenants that an earlier start registered and the file no
   * longer has (or now puts in another catalog): a server taken out of the file is not left
   * searchable and failing. A tenant the file no longer names at all keeps its rows (another
   * deployment may share the store); every replica of one deployment reads the same file.
   */
  async startStdioServers(): Promise<void> {
    const wanted = this.#deps.stdioServers ?? new Map<string, StdioServer>();
    // Without UPSTREAMS_FILE (a worker process, a replica that serves no stdio servers) nothing is pruned.
    if (this.#deps.stdioServers)
      try {
        const tenants = new Set([...wanted.values()].map((server) => server.tenant));
        for (const row of await store.upstreamsByUrlPrefix(this.#deps.db, STDIO_URL_PREFIX)) {
          if (!tenants.has(row.tenant)) continue;
          const server = wanted.get(row.name);
          if (server && server.tenant === row.tenant && server.catalog === row.catalog && row.url === `${STDIO_URL_PREFIX}${row.name}`) continue;
          await this.remove(row.tenant, row.catalog, row.name);
          this.#deps.logger.info(
            { upstream: row.name, tenant: row.tenant, catalog: row.catalog },
            'stdio upstream no longer in UPSTREAMS_FILE: removed with its tools',
          );
        }
      } catch (error) {
        this.#deps.logger.warn({ err: error }, 'stdio upstreams no longer in UPSTREAMS_FILE could not be removed; they stay until the next start');
      }
    for (const [name, server] of wanted) {
      void this.register(server.tenant, server.catalog, {
        name,
        url: `${STDIO_URL_PREFIX}${name}`,
        headers: {},
        refreshSeconds: server.refresh_seconds,
        trust: server.trust,
        ...(server.result_scan ? { resultScan: server.result_scan } : {}),
      }).catch((error: Error) => this.#deps.logger.warn({ upstream: name, reason: error.message }, 'stdio upstream could not be registered'));
    }
  }

  /** Refreshes due upstreams in the background (one replica per upstream, by lease). */
  start(): void {
    this.#timer = setInterval(() => void this.#refreshDue(), REFRESH_TICK_MS);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#connections.close();
    if (!this.#deps.fetch) await this.#fetch.close();
  }

  /**
   * Registers (or changes) an upstream and syncs it now. A URL the address policy refuses is a 400
   * before anything is stored or sent: the host is resolved here, and again at every connection.
   */
  async register(tenant: string, catalog: string, input: UpstreamRegistration, actor: UpstreamActor = {}): Promise<UpstreamState> {
    requireSecretsKey(this.#deps.secrets, input);
    requireResultScan(input.resultScan, this.#deps.resultScanMin);
    if (!input.url.startsWith(STDIO_URL_PREFIX)) await this.#admit(tenant, catalog, input, actor);
    const ref = { tenant, name: catalog };
    let summary = await catalogs
      .getCatalog(this.#deps.catalog, ref)
      .catch((error: AppError) => (error.code === 'not_found' ? undefined : Promise.reject(error)));
    if (!summary) summary = (await catalogs.replaceCatalog(this.#deps.catalog, ref, [])).catalog;
    const before = await store.getUpstream(this.#deps.db, tenant, catalog, input.name);
    // The catalog may be deleted between the read above and this write: then it is not found.
    const maxUpstreams = input.url.startsWith(STDIO_URL_PREFIX) ? undefined : this.#deps.catalog.tenantLimits?.maxUpstreams;
    // What its credentials are sealed for (stored-secrets.ts, UpstreamBinding).
    const binding = { tenant, catalogId: summary.id, upstream: input.name, url: input.url };
    if (!(await store.putUpstream(this.#deps.db, summary.id, { ...input, headers: sealHeaders(this.#deps.secrets, binding, input.headers) }, maxUpstreams)))
      throw notFound(`catalog "${catalog}"`);
    await this.#oauth.configure(binding, before?.url, input.oauth ?? null);
    this.#audit.record({ event: 'registered', tenant, catalog, upstream: input.name, outcome: 'ok', ...actor });
    await this.#connections.drop(summary.id, input.name);
    return this.sync(tenant, catalog, input.name, actor);
  }

  /** The URL's form, then where its host resolves: every address must be one the policy allows. */
  async #admit(tenant: string, catalog: string, input: UpstreamRegistration, actor: UpstreamActor): Promise<void> {
    const checked = checkUpstreamUrl(input.url);
    if ('error' in checked) throw new AppError('validation_failed', `url: ${checked.error}`);
    try {
      await resolveChecked(checked.url.hostname, this.#deps.allow);
    } catch (error) {
      // A name that does not resolve (yet), and one that resolves where the policy refuses, are
      // registered alike and their sync says "connection failed" (the latter audited there):
      // a 400 for one of them would tell a tenant which internal names exist.
      if (!(error instanceof UpstreamRefused) || !error.tellable) return;
      this.#audit.record({ event: 'refused_address', tenant, catalog, upstream: input.name, outcome: 'refused', reason: error.reason, ...actor });
      throw new AppError(
        'validation_failed',
        `url: ${checked.url.hostname} is refused by the address policy (${error.reason}): upstreams may be public addresses only unless UPSTREAM_ALLOW opens this one`,
      );
    }
  }

  async remove(tenant: string, catalog: string, name: string, actor: UpstreamActor = {}): Promise<void> {
    const row = await store.getUpstream(this.#deps.db, tenant, catalog, name);
    if (!row) throw notFound(`upstream "${name}" in catalog "${catalog}"`);
    await this.#serialized(row, async () => {
      await catalogs.replaceServerTools(this.#deps.catalog, { tenant, name: catalog }, name, []);
      await store.deleteUpstream(this.#deps.db, row.catalogId, name);
    });
    this.#audit.record({ event: 'deregistered', tenant, catalog, upstream: name, outcome: 'ok', ...actor });
    await this.#connections.drop(row.catalogId, name);
  }

  async list(tenant: string, catalog: string): Promise<UpstreamState[]> {
    await catalogs.getCatalog(this.#deps.catalog, { tenant, name: catalog });
    return (await store.listUpstreams(this.#deps.db, tenant, catalog)).map(upstreamState);
  }

  /** Every upstream of the tenant, of every catalog, in catalog and name order (the management status view). */
  async listTenant(tenant: string): Promise<(UpstreamState & { catalog: string })[]> {
    return (await store.listTenantUpstreams(this.#deps.db, tenant)).map((row) => ({ catalog: row.catalog, ...upstreamState(row) }));
  }

  /**
   * The names of the credentials an upstream is given, never their values: its header names, and
   * for a server of UPSTREAMS_FILE the names of the environment variables the file sets for it.
   */
  credentialNames(row: { tenant: string; catalog: string; name: string; url: string; header_names: readonly string[] }): UpstreamCredentials {
    const stdio = row.url.startsWith(STDIO_URL_PREFIX) ? this.#deps.stdioServers?.get(row.url.slice(STDIO_URL_PREFIX.length)) : undefined;
    const env = stdio && stdio.tenant === row.tenant && stdio.catalog === row.catalog ? Object.keys(stdio.env).sort() : [];
    return { headers: [...row.header_names], env };
  }

  /** `states`, upstreams of `catalog`, as `access` sees them (seenUpstreams). */
  seen<S extends UpstreamState>(tenant: string, catalog: string, states: readonly S[], access: Access): Promise<S[]> {
    return seenUpstreams(this.#deps.db, access, tenant, catalog, states);
  }

  /** One upstream's state with the tools waiting for a decision (each with its findings and diff) and the rejected ones. */
  async review(tenant: string, catalog: string, name: string): Promise<{ upstream: UpstreamState; tools: ReviewedTool[] }> {
    const row = await this.#row(tenant, catalog, name);
    const pins = await store.listPins(this.#deps.db, row.catalogId, name);
    const tools = pins.flatMap((pin): ReviewedTool[] => {
      const status = pinStatus(pin);
      if (status === 'approved') return [];
      const change = pin.approvedDefinition === null ? 'new' : 'changed';
      return [
        {
          name: revealInvisible(pin.name),
          status,
          change,
          hash: pin.currentHash,
          since: pin.changedAt.toISOString(),
          findings: pin.findings,
          definition: revealInvisible(pin.currentDefinition),
          ...(change === 'changed' ? { diff: revealInvisible(diffDefinitions(pin.approvedDefinition, pin.currentDefinition)) } : {}),
        },
      ];
    });
    return { upstream: upstreamState(row), tools };
  }

  /**
   * Approves or rejects an upstream's tools (all waiting ones, or those named, each optionally at
   * the hash its caller reviewed), then serves what is approved. A named tool that is unknown, or
   * changed since the hash given, is a 404 / 409 and nothing is decided. A key that sees only some
   * tools (`access`) decides only those: no names means the waiting tools it sees, and a name it
   * does not see is answered as unknown (the refusal recorded), so it neither learns nor decides it.
   */
  async decide(
    tenant: string,
    catalog: string,
    name: string,
    decision: 'approve' | 'reject',
    selection: store.PinSelection,
    access?: Access,
  ): Promise<{ upstream: UpstreamState; decided: string[] }> {
    const row = await this.#row(tenant, catalog, name);
    const limited = access?.limitsTools ? access : undefined;
    const sees = (tool: string) => !limited || limited.seesTool({ catalog, name: tool, server: name });
    const decided = await this.#serialized(row, async () => {
      let among: string[] | undefined;
      if (selection !== null) {
        const pins = new Map((await store.listPins(this.#deps.db, row.catalogId, name)).map((pin) => [pin.name, pin]));
        for (const item of selection) if (pins.has(item.name) && !sees(item.name)) limited!.hidden('write', { catalog, tool: item.name });
        const unknown = selection.filter((item) => !pins.has(item.name) || !sees(item.name)).map((item) => item.name);
        if (unknown.length > 0) throw notFound(`tool${unknown.length > 1 ? 's' : ''} ${unknown.map((tool) => `"${tool}"`).join(', ')} of upstream "${name}"`);
        const stale = selection.filter((item) => item.hash !== undefined && pins.get(item.name)!.currentHash !== item.hash).map((item) => item.name);
        if (stale.length > 0) throw staleDecision(stale);
      } else if (limited) {
        among = (await store.listPins(this.#deps.db, row.catalogId, name)).map((pin) => pin.name).filter(sees);
      }
      const result = await store.decidePins(this.#deps.db, row.catalogId, name, decision, selection, among);
      // Changed between the check above and the update (a sync landed): decided only what was seen.
      if (result.stale.length > 0) throw staleDecision(result.stale);
      const served = await this.#serve(row);
      await store.recordServed(this.#deps.db, row.catalogId, name, served.toolCount, served.conflicts);
      for (const tool of result.decided) {
        this.#audit.record({
          event: decision === 'approve' ? 'approved' : 'rejected',
          tenant,
          catalog,
          upstream: name,
          tool: tool.name,
          hash: tool.hash,
          outcome: 'ok',
        });
      }
      return result.decided.map((tool) => tool.name);
    });
    return { upstream: upstreamState(await this.#row(tenant, catalog, name)), decided };
  }

  /** Where toolsift serves the tenants' client ID metadata documents, which its OAuth flows present; undefined without OAUTH_CLIENT_METADATA_URL. */
  get clientMetadata(): ClientMetadataSettings | undefined {
    return this.#deps.clientMetadata;
  }

  /**
   * Starts the authorization code flow of an OAuth upstream for an operator: answers the URL to
   * open in a browser, which comes back to `redirectUri` (GET /oauth/callback).
   */
  async startAuthorization(tenant: string, catalog: string, name: string, redirectUri: string): Promise<{ authorizationUrl: string; expiresAt: Date }> {
    const row = await this.#row(tenant, catalog, name);
    if (!row.oauth) throw new AppError('validation_failed', `upstream "${name}" is not registered with auth.type "oauth"`);
    return this.#oauth.start(row, redirectUri);
  }

  /** The browser's return from the authorization server: tokens stored, then the upstream synced with them. */
  async finishAuthorization(params: { state?: string; code?: string; iss?: string; error?: string }): Promise<UpstreamState & { catalog: string }> {
    const { tenant, catalog, upstream } = await this.#oauth.finish(params);
    const row = await this.#row(tenant, catalog, upstream);
    await this.#connections.drop(row.catalogId, row.name);
    return { catalog, ...(await this.sync(tenant, catalog, upstream)) };
  }

  /** Syncs one upstream now (concurrent calls share one run: its audit lines name the first caller) and returns its state. */
  sync(tenant: string, catalog: string, name: string, actor: UpstreamActor = {}): Promise<UpstreamState> {
    const key = `${tenant}\0${catalog}\0${name}`;
    let running = this.#syncing.get(key);
    if (!running) {
      running = this.#sync(tenant, catalog, name, actor).finally(() => this.#syncing.delete(key));
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
    const call = new AbortController();
    const stop = () => call.abort(input.signal?.reason);
    input.signal?.addEventListener('abort', stop, { once: true });
    try {
      const client = await this.#connections.client(row);
      const result = await this.#callScope.run(call, () =>
        client.callTool(
          { name: input.tool, arguments: input.arguments, ...(input.trace ? { _meta: { ...input.trace } } : {}) },
          { timeout: this.#deps.callTimeoutMs, signal: call.signal },
        ),
      );
      return result as UpstreamCallResult;
    } catch (error) {
      const overflowed = this.#connections.tooLarge(row.catalogId, row.name);
      await this.#connections.drop(row.catalogId, row.name);
      // No token to call with: why is in the upstream's status (oauth.ts recorded it), not in an agent's answer.
      if (authorizationFailureIn(error)) {
        this.#deps.logger.warn({ upstream: row.name, catalog: row.catalog, tool: input.tool, failure: 'oauth' }, 'upstream call failed: no usable OAuth token');
        return { ...errorResult(`upstream "${row.name}" is unavailable; "${input.tool}" was not run`), failure: 'upstream unavailable' };
      }
      const cause =
        call.signal.reason instanceof UpstreamTooLarge ? call.signal.reason : overflowed ? new UpstreamTooLarge(this.#deps.maxResultBytes, row.url, []) : error;
      const failure = describeUpstreamFailure(cause);
      this.#noteRefusal(row, cause);
      this.#deps.logger.warn({ upstream: row.name, catalog: row.catalog, tool: input.tool, failure, error: errorName(cause) }, 'upstream call failed');
      const limit = cause instanceof UpstreamTooLarge ? ` (over UPSTREAM_MAX_RESULT_BYTES, ${cause.limit} bytes; nothing of it is kept)` : '';
      return { ...errorResult(`upstream "${row.name}" failed to run "${input.tool}": ${failure}${limit}`), failure };
    } finally {
      input.signal?.removeEventListener('abort', stop);
    }
  }

  async #row(tenant: string, catalog: string, name: string): Promise<store.UpstreamRow> {
    const row = await store.getUpstream(this.#deps.db, tenant, catalog, name);
    if (!row) throw notFound(`upstream "${name}" in catalog "${catalog}"`);
    return row;
  }

  /** Runs `work` after every earlier pin-changing operation of the same upstream in this process. */
  async #serialized<T>(row: store.UpstreamRow, work: () => Promise<T>): Promise<T> {
    const key = `${row.catalogId}\0${row.name}`;
    const before = this.#exclusive.get(key) ?? Promise.resolve();
    const run = before.catch(() => {}).then(work);
    const settled = run.catch(() => {});
    this.#exclusive.set(key, settled);
    void settled.then(() => {
      if (this.#exclusive.get(key) === settled) this.#exclusive.delete(key);
    });
    return run;
  }

  async #sync(tenant: string, catalog: string, name: string, actor: UpstreamActor): Promise<UpstreamState> {
    const row = await this.#row(tenant, catalog, name);
    const started = performance.now();
    // A trace of its own: a sync is the service's work, shared by whoever asked for it (sync()).
    const span = this.#tracing.start('sync upstream', { kind: 'internal', attributes: { [TENANT]: tenant, [CATALOG]: catalog, [UPSTREAM]: row.name } });
    let failed: string | undefined;
    try {
      const listed = await this.#listTools(row, span.context);
      const outcome = await this.#serialized(row, () => this.#applyListing(row, listed, actor));
      span.set({ [RESULTS]: outcome.toolCount });
      this.#deps.metrics?.mcpRequests.inc({ method: 'upstream/sync', tool: '', outcome: 'ok' });
      this.#deps.logger.info({ upstream: row.name, catalog, tenant, ...outcome, ms: Math.round(performance.now() - started) }, 'upstream synced');
    } catch (error) {
      failed = syncErrorType(error);
      if (error instanceof AppError && error.code === 'not_found') throw error;
      const authorization = authorizationFailureIn(error);
      const failure =
        error instanceof MalformedList || (error instanceof AppError && error.code === 'quota_exceeded')
          ? error.message
          : error instanceof SecretOpenError
            ? `credentials: ${error.message}`
            : authorization
              ? `oauth: ${authorization.message}`
              : describeUpstreamFailure(error);
      await this.#connections.drop(row.catalogId, row.name);
      this.#noteRefusal(row, error, actor);
      await store.recordSync(this.#deps.db, row.catalogId, row.name, { error: failure });
      this.#deps.metrics?.mcpRequests.inc({ method: 'upstream/sync', tool: '', outcome: 'error' });
      // The class only: an upstream's error text (or a header value it echoes) never reaches a log or an answer.
      this.#deps.logger.warn({ upstream: row.name, catalog, tenant, failure, error: errorName(error) }, 'upstream sync failed; previous tools kept');
    } finally {
      span.set({ [OUTCOME]: failed ? 'error' : 'ok' });
      span.end(failed);
    }
    // Removed while it synced (the upstream, or its whole catalog): a 404, as if asked a moment later.
    return upstreamState(await this.#row(tenant, catalog, name));
  }

  /**
   * Every page of the upstream's tools/list, within one deadline for connecting and listing. `trace`:
   * the sync's span, the parent of the listing's CLIENT span.
   */
  async #listTools(row: store.UpstreamRow, trace: TraceContext | undefined): Promise<ListedTool[]> {
    const deadline = AbortSignal.timeout(this.#deps.connectTimeoutMs);
    const listing = (async () => {
      const client = await this.#connections.client(row);
      // The SDK walks the pages itself, each request with these params: one span for them all, whose
      // context each page's _meta carries, as a tools/call's does. Without tracing, no _meta at all.
      const span = this.#tracing.start('tools/list', {
        kind: 'client',
        parent: trace,
        attributes: { [MCP_METHOD_NAME]: 'tools/list', [TENANT]: row.tenant, [CATALOG]: row.catalog, [UPSTREAM]: row.name },
      });
      try {
        const listed = await client.listTools(span.context ? { _meta: { ...span.context } } : undefined, {
          timeout: this.#deps.connectTimeoutMs,
          signal: deadline,
        });
        span.set({ [RESULTS]: listed.tools.length });
        span.end();
        return listed;
      } catch (error) {
        span.end(describeUpstreamFailure(error));
        throw error;
      }
    })();
    const timedOut = new Promise<never>((_, reject) => deadline.addEventListener('abort', () => reject(deadline.reason), { once: true }));
    const listed = await Promise.race([listing, timedOut]);
    listing.catch(() => {});
    const seen = new Set<string>();
    const definitions = listed.tools.map((tool, index) => {
      if (!tool || typeof tool.name !== 'string' || tool.name === '') throw new MalformedList(`entry ${index} has no name`);
      if (seen.has(tool.name)) throw new MalformedList(`entry ${index} repeats an earlier tool's name`);
      seen.add(tool.name);
      return listedDefinition(tool as unknown as Record<string, unknown>);
    });
    const others = await catalogToolNames(this.#deps.db, row.catalogId, row.name);
    const context = { otherNames: [...others, ...seen], reservedNames: RESERVED_TOOL_NAMES };
    return mapYielding(definitions, (definition) => ({ definition, hash: pinHash(definition), findings: scanTool(definition, context) }));
  }

  /** Pins what was listed, serves what is approved, records the outcome and audits each decision. */
  async #applyListing(row: store.UpstreamRow, listed: ListedTool[], actor: UpstreamActor) {
    const before = new Map((await store.listPins(this.#deps.db, row.catalogId, row.name)).map((pin) => [pin.name, pin]));
    const plan = planPins(listed, before, { registering: row.pinnedAt === null, trust: row.trust }, new Date());
    await store.writePins(this.#deps.db, row.catalogId, row.name, plan);
    const served = await this.#serve(row);
    const outcome = {
      toolCount: served.toolCount,
      added: served.added,
      changed: served.changed,
      removed: served.removed,
      conflicts: served.conflicts,
      error: conflictsError(served.conflicts, served.unservable),
    };
    await store.recordSync(this.#deps.db, row.catalogId, row.name, outcome);
    for (const event of plan.events) {
      this.#audit.record({
        event: event.event,
        tenant: row.tenant,
        catalog: row.catalog,
        upstream: row.name,
        tool: stripInvisible(event.tool),
        hash: event.hash,
        outcome: event.event === 'quarantined' ? 'quarantined' : 'ok',
        reason: event.change,
        ...(event.findings.length > 0 ? { findings: event.findings.map((finding) => finding.code) } : {}),
        ...actor,
      });
    }
    for (const conflict of served.conflicts) {
      this.#audit.record({
        event: 'name_conflict',
        tenant: row.tenant,
        catalog: row.catalog,
        upstream: row.name,
        tool: conflict.name,
        outcome: 'refused',
        reason: `held by ${conflict.held_by}`,
        ...actor,
      });
    }
    return { ...outcome, pending: plan.rows.filter((pin) => pinStatus(pin) === 'pending').length };
  }

  /**
   * Writes the upstream's approved tools (current = approved) into its catalog, then reads the pins
   * again: a decision that landed meanwhile on another replica makes it write once more, so the
   * last writer always serves what the pins say.
   */
  async #serve(row: store.UpstreamRow) {
    const ref = { tenant: row.tenant, name: row.catalog };
    for (let attempt = 0; ; attempt++) {
      const pins = await store.listPins(this.#deps.db, row.catalogId, row.name);
      const approved = pins.filter((pin) => pinStatus(pin) === 'approved');
      // What agents receive carries no invisible or control characters; a name that needs them to
      // mean what it says cannot be called under another, so it is not served at all.
      const unservable = approved.filter((pin) => stripInvisible(pin.name) !== pin.name).map((pin) => stripInvisible(pin.name));
      const tools: Tool[] = approved.filter((pin) => stripInvisible(pin.name) === pin.name).map((pin) => servedTool(pin, row.name));
      const write = await catalogs.replaceServerTools(this.#deps.catalog, ref, row.name, tools);
      const again = await store.listPins(this.#deps.db, row.catalogId, row.name);
      if (attempt < 2 && approvedKey(again) !== approvedKey(pins)) continue;
      const heldNames = new Set(write.held.map((held) => held.name));
      const names = new Set(tools.map((tool) => tool.name).filter((name) => !heldNames.has(name)));
      return {
        toolCount: names.size,
        added: [...names].filter((name) => !write.before.has(name)).length,
        changed: [...names].filter((name) => write.before.has(name) && write.before.get(name) !== write.hashes.get(name)).length,
        removed: [...write.before.keys()].filter((name) => !names.has(name)).length,
        conflicts: write.held.map((held) => ({ name: held.name, held_by: held.upstream === null ? 'a pushed tool' : `upstream "${held.upstream}"` })),
        unservable,
      };
    }
  }

  #noteRefusal(row: store.UpstreamRow, error: unknown, actor: UpstreamActor = {}): void {
    const refusal = refusalIn(error);
    if (refusal)
      this.#audit.record({
        event: 'refused_address',
        tenant: row.tenant,
        catalog: row.catalog,
        upstream: row.name,
        outcome: 'refused',
        reason: refusal.reason,
        ...actor,
      });
  }

  async #refreshDue(): Promise<void> {
    try {
      const due = await store.claimDueUpstreams(this.#deps.db, Math.ceil(this.#deps.connectTimeoutMs / 1000) * 4);
      for (const row of due) await this.sync(row.tenant, row.catalog, row.name).catch(() => {});
    } catch (error) {
      this.#deps.logger.warn({ err: error }, 'upstream refresh failed; next tick retries');
    }
  }
}

/** A tools/list answer toolsift cannot take as it is: the sync fails whole, saying which entry (in its own words). */
class MalformedList extends Error {
  constructor(detail: string) {
    super(`malformed tool list: ${detail}`);
  }
}

/** A failed sync's `error.type`: a class of failure, never the text of last_error (which may name an entry). */
function syncErrorType(error: unknown): string {
  if (error instanceof MalformedList) return 'malformed_list';
  if (error instanceof AppError) return error.code;
  if (error instanceof SecretOpenError) return 'credentials';
  if (authorizationFailureIn(error)) return 'oauth';
  return describeUpstreamFailure(error);
}

/** A pinned tool as its catalog holds it: the upstream's definition with every string made visible, its server the upstream. */
function servedTool(pin: PinRow, upstream: string): Tool {
  const definition = visibleDeep(pin.currentDefinition);
  return normalizeTool({ ...definition, inputSchema: isRecord(definition.inputSchema) ? definition.inputSchema : { type: 'object' }, server: upstream });
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const approvedKey = (pins: PinRow[]) =>
  pins
    .filter((pin) => pinStatus(pin) === 'approved')
    .map((pin) => `${pin.name}\0${pin.currentHash}`)
    .join('\n');

/** Whether a last_error is only the names a sync left out (conflictsError's words): a sync that served its tools. */
export const isConflictsError = (lastError: string) => /not synced, the name held by|^not served, the name carries/.test(lastError);

function conflictsError(conflicts: { name: string; held_by: string }[], unservable: string[]): string | null {
  const parts = [
    ...(conflicts.length > 0
      ? [
          `${conflicts.length} tool${conflicts.length > 1 ? 's' : ''} not synced, the name held by another source of the catalog: ${conflicts.map((c) => `${c.name} (${c.held_by})`).join(', ')}`,
        ]
      : []),
    ...(unservable.length > 0 ? [`not served, the name carries invisible characters: ${unservable.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join('; ') : null;
}

function staleDecision(names: string[]): AppError {
  return new AppError(
    'name_conflict',
    `changed since reviewed: ${names.map((name) => `"${name}"`).join(', ')}; read GET .../upstreams/{name} again and decide on the new hash`,
  );
}

/** An error's class name, for logs: never its message, which may carry an upstream's text. */
const errorName = (error: unknown) => (error instanceof Error ? error.constructor.name : typeof error);

function errorResult(message: string): UpstreamCallResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

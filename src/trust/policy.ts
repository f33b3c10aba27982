/**
 * Per-key policies (issue 76): what an API key may see and do within its tenant. Keys of one
 * tenant share the catalogs, vectors and learning; a policy only narrows the view and the actions.
 * The decisions are these few pure functions; `Access` binds a key's policy to the request that
 * presented it and records each refusal (audit log line, metric) through the recorder it is given.
 *
 * A key without scopes keeps full access within its tenant (what every key had before), except
 * `manage` (management meta-tools), which is given only explicitly.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { PolicyDecisionEvent } from '../audit.js';
import { AppError } from '../errors.js';
import { matchesSet, patternSet } from '../lib/glob.js';

/** Allow and deny patterns over one kind of name; absent allow: everything, deny wins. */
export interface NamePatterns {
  allow?: readonly string[];
  deny?: readonly string[];
}

export interface KeyPolicy {
  /** The key's name in logs and metrics (never the key). */
  id: string;
  tenant: string;
  /** Catalog name patterns the key may use; absent: all of the tenant's. */
  catalogs?: readonly string[];
  /** Tool name patterns (a pattern with "/" is matched against "catalog/name"). */
  tools?: NamePatterns;
  /** Server patterns: a tool's server, which for a synced tool is its upstream's name. */
  servers?: NamePatterns;
  /**
   * May call tools (call_tool, run_code, tools/call); false: a search-only key; "read_only": only
   * tools whose definition, as approved, declares `annotations.readOnlyHint: true`.
   */
  call: boolean | 'read_only';
  /** May write catalogs (push, delete, settings, feedback erasure) and register or decide upstreams. */
  write: boolean;
  /** May use the management meta-tools, resource and prompt at /mcp (mcp/manage.ts); register_upstream and deregister_upstream also need `write`. */
  manage: boolean;
  /** Requests a minute this key may send (http/rate-limit.ts); absent: RATE_LIMIT_PER_MINUTE's, if set. */
  requestsPerMinute?: number;
}

/** A tool as a decision needs it. */
export interface ToolRef {
  catalog: string;
  name: string;
  server: string | null | undefined;
}

/** A key's default name: a short digest, so logs tell keys apart without holding one. */
export const keyDigest = (key: string) => `k_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

/** Today's access: every catalog and tool of the tenant, calls and writes. */
export const fullAccess = (tenant: string, id: string, manage = false): KeyPolicy => ({ id, tenant, call: true, write: true, manage });

// Asked for every tool of a catalog a limited key ranks (search/visibility.ts): patterns without a
// wildcard are one set lookup, the others split once (a deny list of 978 server names took 10 s
// over 100,000 tools pattern by pattern; bench/probes/limited-key.ts).
const matchesSome = (patterns: readonly string[], value: string) => matchesSet(patternSet(patterns), value);

/** Tool patterns: those with "/" judge "catalog/name", the others the name (each kind compiled once). */
const toolPatterns = new WeakMap<readonly string[], { names: string[]; paths: string[] }>();

export function canSeeCatalog(policy: KeyPolicy, catalog: string): boolean {
  return !policy.catalogs || matchesSome(policy.catalogs, catalog);
}

/** Whether a pattern list judges the tool: a pattern with "/" reads "catalog/name", any other the name. */
function toolMatches(patterns: readonly string[], tool: ToolRef): boolean {
  let split = toolPatterns.get(patterns);
  if (!split) {
    split = { names: patterns.filter((pattern) => !pattern.includes('/')), paths: patterns.filter((pattern) => pattern.includes('/')) };
    toolPatterns.set(patterns, split);
  }
  return (
    (split.names.length > 0 && matchesSome(split.names, tool.name)) || (split.paths.length > 0 && matchesSome(split.paths, `${tool.catalog}/${tool.name}`))
  );
}

function passes(patterns: NamePatterns | undefined, matches: (list: readonly string[]) => boolean): boolean {
  if (!patterns) return true;
  if (patterns.allow && !matches(patterns.allow)) return false;
  return !(patterns.deny && matches(patterns.deny));
}

export function canSeeTool(policy: KeyPolicy, tool: ToolRef): boolean {
  if (!canSeeCatalog(policy, tool.catalog)) return false;
  if (!passes(policy.tools, (list) => toolMatches(list, tool))) return false;
  // A tool of no server passes a deny list but no allow list: "only these servers" means only them.
  return passes(policy.servers, (list) => typeof tool.server === 'string' && matchesSome(list, tool.server));
}

export function canCall(policy: KeyPolicy, tool: ToolRef & { definition?: unknown }): boolean {
  const mayCall = policy.call === true || (policy.call === 'read_only' && declaresReadOnly(tool.definition));
  return mayCall && canSeeTool(policy, tool);
}

/**
 * Whether a tool's definition declares it does not change its environment (MCP's
 * `annotations.readOnlyHint`). The hint is its server's word; a synced tool's definition is pinned
 * with it and a changed one waits for approval, so what a "read_only" key may call is what an
 * operator approved, not what the server says later.
 */
export function declaresReadOnly(definition: unknown): boolean {
  const annotations = typeof definition === 'object' && definition !== null ? (definition as { annotations?: unknown }).annotations : undefined;
  return typeof annotations === 'object' && annotations !== null && (annotations as { readOnlyHint?: unknown }).readOnlyHint === true;
}

export function canWrite(policy: KeyPolicy, catalog: string): boolean {
  return policy.write && canSeeCatalog(policy, catalog);
}

/** Whether the key sees only some tools of a catalog it may use (tool or server patterns). */
export const limitsTools = (policy: KeyPolicy) => Boolean(policy.tools || policy.servers);

/** Whether the key sees every catalog and tool of its tenant (no catalogs, tools or servers limits). */
const seesWholeTenant = (policy: KeyPolicy) => !policy.catalogs && !limitsTools(policy);

/** Whether an upstream (a server) is one the key sees: its tools carry its name as their server. */
export function canSeeServer(policy: KeyPolicy, catalog: string, server: string): boolean {
  return canSeeCatalog(policy, catalog) && passes(policy.servers, (list) => matchesSome(list, server));
}

/** What a decision was about: reading (seeing), calling, or writing. */
export type PolicyAction = 'see_catalog' | 'see_tool' | 'call' | 'write' | 'manage';

/** One decision, as the audit log and the metric record it. */
export interface PolicyDecision extends PolicyDecisionEvent {
  action: PolicyAction;
}

/**
 * A key's policy for one request, with where the request came in: every path asks it, and a
 * refusal is recorded once, by the decision that made it.
 */
export class Access {
  constructor(
    readonly policy: KeyPolicy,
    private readonly record: (decision: PolicyDecision) => void = () => {},
    readonly surface: 'rest' | 'mcp' = 'rest',
    readonly via = '',
    /** A filter the caller asked for besides the key's own limits (`narrowed`). */
    private readonly within?: { key: string; sees: (tool: ToolRef) => boolean },
  ) {}

  /** The same key at another entry point (an MCP meta-tool, a route). */
  at(surface: 'rest' | 'mcp', via: string): Access {
    return new Access(this.policy, this.record, surface, via, this.within);
  }

  /**
   * The same key seeing only the tools `sees` accepts as well: a filter the caller asked for (SEP-2564's
   * `namePatterns`), applied before a ranking's cut as the key's own limits are. `key` tells one
   * filter from another (`scopeId`). Only for reading: writes are judged by the key's policy alone.
   */
  narrowed(key: string, sees: (tool: ToolRef) => boolean): Access {
    const outer = this.within;
    return new Access(this.policy, this.record, this.surface, this.via, {
      key: outer ? `${outer.key}\u0000${key}` : key,
      sees: outer ? (tool) => outer.sees(tool) && sees(tool) : sees,
    });
  }

  /** Whether a caller's filter narrows this view (`narrowed`): what it sees is then not the key's alone. */
  get isNarrowed(): boolean {
    return this.within !== undefined;
  }

  /** What the key sees, as a cache's key: the key's id, and its filter's when narrowed. */
  get scopeId(): string {
    return this.within ? `${this.policy.id}\u0000${this.within.key}` : this.policy.id;
  }

  get tenant() {
    return this.policy.tenant;
  }

  seesCatalog(catalog: string): boolean {
    return canSeeCatalog(this.policy, catalog);
  }

  seesTool(tool: ToolRef): boolean {
    return canSeeTool(this.policy, tool) && (!this.within || this.within.sees(tool));
  }

  /** Whether the key (or a filter it was narrowed by) sees only some tools of its catalogs: searches and lists then filter. */
  get limitsTools(): boolean {
    return this.within !== undefined || limitsTools(this.policy);
  }

  /** Records a refusal that was answered as "not found" (a hidden tool looked up by name). */
  hidden(action: PolicyAction, where: { catalog?: string; tool?: string }): void {
    this.note('deny', action, where);
  }

  /** Records an allowed action (the metric only). */
  allowed(action: PolicyAction, where: { catalog?: string; tool?: string } = {}): void {
    this.note('allow', action, where);
  }

  /** 403 unless the key may use the catalog (decided by its name alone: says nothing of whether it exists). */
  requireCatalog(catalog: string): void {
    if (this.seesCatalog(catalog)) return;
    this.note('deny', 'see_catalog', { catalog });
    throw forbidden(`API key "${this.policy.id}" may not use catalog "${catalog}" (its catalogs: ${list(this.policy.catalogs)})`, { catalog });
  }

  /** 403 unless the key may write the catalog (push, delete, settings, upstreams). */
  requireWrite(catalog: string, what = 'write catalogs or register upstreams'): void {
    this.requireCatalog(catalog);
    if (!this.policy.write) {
      this.note('deny', 'write', { catalog });
      throw forbidden(`API key "${this.policy.id}" may not ${what} (write: false)`, { catalog });
    }
    this.allowed('write', { catalog });
  }

  /** 403 unless the key may write at all (embedding jobs, which only writes start and which name tools' contents). */
  requireWriter(what: string): void {
    if (this.policy.write && seesWholeTenant(this.policy)) return;
    this.note('deny', 'write', {});
    throw forbidden(`API key "${this.policy.id}" may not ${what}: it needs write: true and no catalogs, tools or servers limits`, {});
  }

  /** 403 unless the key sees the whole tenant (no catalogs, tools or servers limits): `what` reads what the others hold too. */
  requireTenantView(what: string): void {
    if (seesWholeTenant(this.policy)) return;
    this.note('deny', 'see_catalog', {});
    throw forbidden(`API key "${this.policy.id}" may not ${what}: it sees only some catalogs or tools, and the counts are the whole tenant's`, {});
  }

  /** 403 when a write would reach tools the key does not see: replacing or deleting a whole catalog, or a setting of all its tools (`refused` says which). */
  requireWholeCatalog(catalog: string, refused = 'may not replace or delete whole catalogs: push or delete single tools'): void {
    this.requireWrite(catalog);
    if (!limitsTools(this.policy)) return;
    this.note('deny', 'write', { catalog });
    throw forbidden(`API key "${this.policy.id}" sees only some tools, so it ${refused}`, { catalog });
  }

  /** 403 naming the first tool of a write the key could not see afterwards. */
  requireToolsWritable(catalog: string, tools: readonly { name: string; server: string | null }[]): void {
    this.requireWrite(catalog);
    const outside = tools.find((tool) => !this.seesTool({ catalog, ...tool }));
    if (!outside) return;
    this.note('deny', 'write', { catalog, tool: outside.name });
    throw forbidden(
      `API key "${this.policy.id}" may not write tool "${outside.name}"${outside.server ? ` of server "${outside.server}"` : ''}: it is outside the key's tools or servers`,
      { catalog, tool: outside.name },
    );
  }

  /**
   * 409 `name_conflict` when a tool the key does not see holds one of the names a write of it would
   * take (never written over). It says that the name is taken, which any write of it would show,
   * and nothing of the holder: not its server, its source or its definition.
   */
  requireNamesFree(catalog: string, held: readonly { name: string; server: string | null }[]): void {
    const hidden = held.find((tool) => !this.seesTool({ catalog, ...tool }));
    if (!hidden) return;
    this.note('deny', 'write', { catalog, tool: hidden.name });
    throw new AppError(
      'name_conflict',
      `tool "${hidden.name}" of catalog "${catalog}" is held by a tool API key "${this.policy.id}" does not see: push it under another name`,
      { catalog, tool: hidden.name },
    );
  }

  /** 403 unless the key sees the upstream (server) by its name (an upstream's tools carry it as their server). */
  requireServer(catalog: string, server: string): void {
    if (canSeeServer(this.policy, catalog, server)) return;
    this.note('deny', 'see_tool', { catalog, server });
    throw forbidden(`API key "${this.policy.id}" may not use upstream "${server}": it is outside the key's servers`, { catalog, upstream: server });
  }

  /**
   * 403 unless the key may register, change or remove upstream `server` as a whole: it sees the
   * server, and no tool-name pattern hides some of the server's tools from it. An upstream's tools
   * are whatever the server lists, and a registration decides all of them at once (trust "auto"
   * serves them, a removal drops them): a key that sees only some by name would decide the others.
   */
  requireWholeServer(catalog: string, server: string): void {
    this.requireServer(catalog, server);
    if (!this.policy.tools) return;
    this.note('deny', 'write', { catalog, server });
    throw forbidden(
      `API key "${this.policy.id}" sees only some tools by name, so it may not register, change or remove upstreams (their tools may include ones it does not see): approve or reject the tools it sees`,
      { catalog, upstream: server },
    );
  }

  /** Why a call is refused before anything is looked up, or undefined when the key may call at all. */
  callRefusal(where: { catalog?: string; tool?: string } = {}): string | undefined {
    if (this.policy.call) return undefined;
    this.note('deny', 'call', where);
    return `API key "${this.policy.id}" may search and read tools but not call them (call: false); nothing was sent`;
  }

  /** Why a call of this tool, found and seen, is refused by a "read_only" key, or undefined. */
  readOnlyRefusal(where: { catalog: string; tool: string }, definition: unknown): string | undefined {
    if (this.policy.call !== 'read_only' || declaresReadOnly(definition)) return undefined;
    this.note('deny', 'call', where);
    return `API key "${this.policy.id}" may call only read-only tools (call: "read_only"): "${where.tool}" does not declare annotations.readOnlyHint; nothing was sent`;
  }

  private note(decision: 'allow' | 'deny', action: PolicyAction, where: { catalog?: string; tool?: string; server?: string }): void {
    const { server, ...rest } = where;
    this.record({
      decision,
      action,
      surface: this.surface,
      via: this.via,
      key: this.policy.id,
      tenant: this.policy.tenant,
      ...rest,
      ...(server ? { server } : {}),
    });
  }
}

const list = (patterns: readonly string[] | undefined) => (patterns ? patterns.join(', ') : 'all');

function forbidden(message: string, details: Record<string, unknown>): AppError {
  return new AppError('forbidden', message, details);
}

/**
 * The access of a service without keys: the default tenant, everything (it listens on loopback
 * only) but management over MCP, which an agent is offered only with a key given `manage`.
 */
export const openAccess = (tenant: string) => new Access(fullAccess(tenant, 'open'));

// ---- The keys file (API_KEYS_FILE) ----

const TENANT = /^[A-Za-z0-9._-]{1,64}$/;

const patternList = (what: string) =>
  z
    .array(z.string().min(1, 'a pattern may not be empty').max(256, 'a pattern is at most 256 characters'))
    .min(1, `an empty list would match no ${what}: leave the field out to allow all, or name at least one pattern`)
    .max(1000);

const namePatterns = (what: string) => z.object({ allow: patternList(what).optional(), deny: patternList(what).optional() }).strict();

const keyEntry = z
  .object({
    key: z
      .string()
      .min(16, 'keys are at least 16 characters')
      .max(512)
      .regex(/^[\x21-\x7e]+$/, 'keys are visible ASCII without spaces'),
    id: z.string().regex(TENANT, 'ids are 1-64 characters of A-Z a-z 0-9 . _ -').optional(),
    tenant: z.string().regex(TENANT, 'tenants are 1-64 characters of A-Z a-z 0-9 . _ -'),
    catalogs: patternList('catalog').optional(),
    tools: namePatterns('tool').optional(),
    servers: namePatterns('server').optional(),
    call: z.union([z.boolean(), z.literal('read_only')], { error: 'call is true, false or "read_only"' }).default(true),
    write: z.boolean().default(true),
    manage: z.boolean().default(false),
    requests_per_minute: z.number().int().min(1).max(1_000_000).optional(),
  })
  .strict();

const keysFile = z.object({ keys: z.array(z.unknown()).max(100_000) }).strict();

export class KeysFileError extends Error {}

/**
 * The keys file's keys and their policies: `{"keys": [{"key", "tenant", "id"?, "catalogs"?,
 * "tools"?, "servers"?, "call"?, "write"?, "manage"?, "requests_per_minute"?}]}`. Unknown fields are refused (a misspelt
 * scope must not pass for full access); a problem names the key's id (or its place) and the field.
 */
export function parseKeysFile(text: string): Map<string, KeyPolicy> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new KeysFileError(`not JSON: ${(error as Error).message}`);
  }
  const file = keysFile.safeParse(json);
  if (!file.success) throw new KeysFileError(`expected {"keys": [...]}: ${issueText(file.error.issues[0]!)}`);
  const keys = new Map<string, KeyPolicy>();
  const ids = new Set<string>();
  file.data.keys.forEach((raw, index) => {
    const named = typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'string' ? (raw as { id: string }).id : undefined;
    const label = named ? `key "${named}"` : `keys[${index}]`;
    const entry = keyEntry.safeParse(raw);
    if (!entry.success) throw new KeysFileError(`${label}: ${issueText(entry.error.issues[0]!)}`);
    const { key, id = keyDigest(entry.data.key), requests_per_minute: requestsPerMinute, ...scopes } = entry.data;
    if (keys.has(key)) throw new KeysFileError(`${label}: the same key is listed twice`);
    if (ids.has(id)) throw new KeysFileError(`${label}: id "${id}" is given to two keys`);
    ids.add(id);
    keys.set(key, { id, ...scopes, ...(requestsPerMinute ? { requestsPerMinute } : {}) });
  });
  return keys;
}

const issueText = (issue: z.core.$ZodIssue) => `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`;

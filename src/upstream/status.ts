/**
 * The management status view (issue 76): every upstream of a tenant that a key may see, with what
 * an operator (or an agent given `manage`) needs to act on it: whether it syncs, how many tools it
 * serves, which wait for approval, the class of its last error and the names of the credentials it
 * is given. Never a credential's value, an upstream's own error text or a definition.
 */
import { canSeeServer, type Access } from '../trust/policy.js';
import { isConflictsError, STDIO_URL_PREFIX, type UpstreamCredentials, type UpstreamService, type UpstreamState } from './upstreams.js';

/** What management reads and does through the upstream service. */
export type UpstreamManagement = Pick<UpstreamService, 'register' | 'remove' | 'listTenant' | 'review' | 'seen' | 'credentialNames'>;

/** A last_error (the gateway's own words, upstreams.ts) as a stable class an agent can branch on. */
export type UpstreamErrorClass =
  | 'connection_failed'
  | 'unauthorized'
  | 'http_error'
  | 'not_mcp'
  | 'too_large'
  | 'refused_address'
  | 'malformed_list'
  | 'name_conflict'
  | 'other';

export function errorClass(lastError: string): UpstreamErrorClass {
  if (lastError === 'connection failed') return 'connection_failed';
  if (/^HTTP 40[13]\b/.test(lastError)) return 'unauthorized';
  if (/^HTTP \d{3}\b/.test(lastError)) return 'http_error';
  if (lastError === 'not an MCP server') return 'not_mcp';
  if (lastError.startsWith('result too large')) return 'too_large';
  if (lastError.startsWith('refused by policy')) return 'refused_address';
  if (lastError.startsWith('malformed tool list')) return 'malformed_list';
  // A sync that served its tools but left some out (a name another source holds, or invisible characters).
  if (isConflictsError(lastError)) return 'name_conflict';
  return 'other';
}

/** Pending tools shown per upstream: the count says how many there are in all. */
const PENDING_SHOWN_MAX = 50;
/** A last_error is the gateway's own words, but a conflict's lists names: cut for an agent's context. */
const ERROR_CHARS_MAX = 300;

export interface UpstreamStatus {
  catalog: string;
  name: string;
  transport: 'http' | 'stdio';
  /** A remote server's address without its query string (which may carry a token); null for stdio. */
  url: string | null;
  /** synced: the last sync served its tools; failing: it failed (the previous tools are kept); not_synced: never synced. */
  state: 'synced' | 'failing' | 'not_synced';
  last_sync_at: string | null;
  trust: UpstreamState['trust'];
  /** How its tools' results are read; null: the service's RESULT_SCAN. */
  result_scan: UpstreamState['result_scan'];
  /** Tools served (of those the key sees). */
  tool_count: number;
  /** Tools whose current definition waits for approval, new or changed since approved (of those the key sees). */
  pending: number;
  /** Those of them the key sees, each with why it waits: its change and the scanner's finding codes. */
  pending_tools: { name: string; change: 'new' | 'changed'; findings: string[] }[];
  /** Tools left out because another source of the catalog holds their names (of those the key sees). */
  conflicts: number;
  last_error: { class: UpstreamErrorClass; message: string } | null;
  /** The credentials its tools are called with, by name only. */
  credentials: UpstreamCredentials;
}

/** One upstream's status for a key: `state` as the service gives it. */
export async function upstreamStatusOf(
  management: UpstreamManagement,
  access: Access,
  tenant: string,
  state: UpstreamState & { catalog: string },
): Promise<UpstreamStatus> {
  const [seen] = await management.seen(tenant, state.catalog, [state], access);
  return statusOf(management, access, tenant, seen!);
}

/** Every upstream of the tenant the key sees (its catalogs, and its servers' allow and deny lists). */
export async function upstreamStatus(management: UpstreamManagement, access: Access, tenant: string): Promise<UpstreamStatus[]> {
  const visible = (await management.listTenant(tenant)).filter((state) => canSeeServer(access.policy, state.catalog, state.name));
  const byCatalog = new Map<string, typeof visible>();
  for (const state of visible) {
    const group = byCatalog.get(state.catalog);
    if (group) group.push(state);
    else byCatalog.set(state.catalog, [state]);
  }
  const seen = await Promise.all([...byCatalog].map(([catalog, states]) => management.seen(tenant, catalog, states, access)));
  return Promise.all(seen.flat().map((state) => statusOf(management, access, tenant, state)));
}

/** The status of `state`, already as the key sees it. */
async function statusOf(management: UpstreamManagement, access: Access, tenant: string, state: UpstreamState & { catalog: string }): Promise<UpstreamStatus> {
  const { catalog } = state;
  const pendingTools =
    state.pending > 0
      ? (await management.review(tenant, catalog, state.name)).tools
          .filter((tool) => tool.status === 'pending' && access.seesTool({ catalog, name: tool.name, server: state.name }))
          .slice(0, PENDING_SHOWN_MAX)
          .map((tool) => ({ name: tool.name, change: tool.change, findings: tool.findings.map((finding) => finding.code) }))
      : [];
  const stdio = state.url.startsWith(STDIO_URL_PREFIX);
  const failing = state.last_error !== null && errorClass(state.last_error) !== 'name_conflict';
  return {
    catalog,
    name: state.name,
    transport: stdio ? 'stdio' : 'http',
    url: stdio ? null : withoutQuery(state.url),
    state: state.last_sync_at === null ? 'not_synced' : failing ? 'failing' : 'synced',
    last_sync_at: state.last_sync_at,
    trust: state.trust,
    result_scan: state.result_scan,
    tool_count: state.tool_count,
    pending: state.pending,
    pending_tools: pendingTools,
    conflicts: state.conflicts.length,
    last_error: state.last_error === null ? null : { class: errorClass(state.last_error), message: cut(state.last_error) },
    credentials: management.credentialNames({ tenant, ...state }),
  };
}

function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/)[0]!;
  }
}

const cut = (text: string) => (text.length > ERROR_CHARS_MAX ? `${text.slice(0, ERROR_CHARS_MAX - 3)}...` : text);

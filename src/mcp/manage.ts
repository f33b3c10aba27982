/**
 * Management over MCP (issue 76), for keys given `manage`: register and deregister an upstream at
 * run time, and the status of every upstream of the tenant. Only at `/mcp` (management spans the
 * tenant's catalogs, and may create one); `/mcp/{catalog}` stays a discovery endpoint.
 *
 * A registration goes through exactly what `PUT /v1/catalogs/{catalog}/upstreams/{name}` runs: the
 * same rules (upstream/registration.ts), the key's write and servers scope, then
 * UpstreamService.register (address policy, pinning, scanner, the store's handling of header
 * values). A refusal is the REST route's message, as an isError result.
 */
import { registrationOf, upstreamRef, upstreamRegistrationBody, parseRegistrationPart } from '../upstream/registration.js';
import { upstreamStatus, upstreamStatusOf, type UpstreamManagement, type UpstreamStatus } from '../upstream/status.js';
import type { DiscoveryScope } from './discovery.js';

export interface ManageDeps {
  /** The upstream service; null or absent: no management (and no upstreams). */
  management?: UpstreamManagement | null;
}

/** Whether the scope is offered the status view (resource and prompt): a key given `manage`, at `/mcp`. */
export function offersManagement(deps: ManageDeps, scope: DiscoveryScope): boolean {
  return Boolean(deps.management) && scope.catalog === undefined && scope.access?.policy.manage === true;
}

/** Whether it is offered register_upstream and deregister_upstream: management, and a key that may write. */
export function offersUpstreamChanges(deps: ManageDeps, scope: DiscoveryScope): boolean {
  return offersManagement(deps, scope) && scope.access!.policy.write;
}

export interface RegisterInput {
  catalog: string;
  name: string;
  url: string;
  headers?: Record<string, string>;
  refresh_seconds?: number;
  trust?: 'pin' | 'auto';
  result_scan?: 'flag' | 'block' | 'off';
}

/** The key's checks of a change to upstream `catalog`/`name`, in the order REST makes them; the names parsed by REST's rules. */
function admitChange(scope: DiscoveryScope, input: { catalog: string; name: string }) {
  const access = scope.access!;
  const { catalog, name } = parseRegistrationPart(upstreamRef, { catalog: input.catalog, name: input.name }, 'arguments');
  access.requireWrite(catalog);
  access.requireWholeServer(catalog, name);
  access.allowed('manage', { catalog });
  return { access, catalog, name, actor: { key: access.policy.id, via: 'mcp' } };
}

/** Registers (or changes) an upstream and syncs it now; its status as the key sees it. */
export async function registerUpstream(deps: ManageDeps, scope: DiscoveryScope, input: RegisterInput): Promise<UpstreamStatus> {
  const management = deps.management!;
  const { access, catalog, name, actor } = admitChange(scope, input);
  const { catalog: _catalog, name: _name, ...rest } = input;
  const body = parseRegistrationPart(upstreamRegistrationBody, rest, 'arguments');
  const state = await management.register(scope.tenant, catalog, registrationOf(name, body), actor);
  return upstreamStatusOf(management, access, scope.tenant, { catalog, ...state });
}

/** Removes an upstream and its tools. */
export async function deregisterUpstream(
  deps: ManageDeps,
  scope: DiscoveryScope,
  input: { catalog: string; name: string },
): Promise<{ catalog: string; name: string }> {
  const { catalog, name, actor } = admitChange(scope, input);
  await deps.management!.remove(scope.tenant, catalog, name, actor);
  return { catalog, name };
}

/** The status view of every upstream the key sees. */
export async function managementStatus(deps: ManageDeps, scope: DiscoveryScope): Promise<UpstreamStatus[]> {
  scope.access!.allowed('manage');
  return upstreamStatus(deps.management!, scope.access!, scope.tenant);
}

/** The status view as lines for a prompt: one upstream a line, then what waits and what fails. */
export function statusText(upstreams: readonly UpstreamStatus[]): string {
  if (upstreams.length === 0) return 'No upstream MCP servers are registered (that this key sees).';
  return upstreams
    .map((upstream) => {
      const parts = [
        `${upstream.catalog}/${upstream.name} (${upstream.transport}${upstream.url ? ` ${upstream.url}` : ''}): ${upstream.state}`,
        `${upstream.tool_count} tools served`,
        upstream.pending > 0
          ? `${upstream.pending} waiting for approval${upstream.pending_tools.length ? ` (${upstream.pending_tools.map((tool) => `${tool.name}: ${tool.change}${tool.findings.length ? ` [${tool.findings.join(', ')}]` : ''}`).join('; ')})` : ''}`
          : 'none waiting for approval',
        ...(upstream.last_error ? [`last error ${upstream.last_error.class}: ${upstream.last_error.message}`] : []),
        `credentials: ${[...upstream.credentials.headers.map((name) => `header ${name}`), ...upstream.credentials.env.map((name) => `env ${name}`)].join(', ') || 'none'}`,
      ];
      return `- ${parts.join('; ')}`;
    })
    .join('\n');
}

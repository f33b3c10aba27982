/**
 * The gateway's audit trail (issue 70): one structured log line and one metric per proxied call,
 * pin, quarantine, approval, rejection, name conflict, refused address, and upstream registered or
 * removed (with the key's id, and `via: "mcp"` from a management meta-tool). A line says who
 * (tenant), where (catalog, upstream, tool and its definition hash), what came of it and how long
 * it took; a call's arguments appear only as their shape (field names and JSON types), never their
 * values, which may hold anything a user typed.
 */
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';

export type AuditEventName =
  | 'call'
  | 'pinned'
  | 'quarantined'
  | 'auto_approved'
  | 'approved'
  | 'rejected'
  | 'removed'
  | 'name_conflict'
  | 'refused_address'
  | 'code_run'
  | 'policy'
  | 'registered'
  | 'deregistered'
  | 'oauth';

export interface AuditEvent {
  event: AuditEventName;
  tenant: string;
  catalog: string;
  upstream?: string;
  tool?: string;
  /** The tool definition's pin hash (upstream tools) or content hash (a call). */
  hash?: string;
  /** ok, error, refused, quarantined, ...: what came of it. */
  outcome: string;
  ms?: number;
  /** A call's arguments as field -> JSON type. */
  args?: Record<string, string>;
  /** Why, in the gateway's own words (never an upstream's text). */
  reason?: string;
  /** A call made by a run_code program (`run_code`), not by call_tool; `mcp`: a registration or removal by a management meta-tool. */
  via?: string;
  /** Tool calls a run_code program made. */
  calls?: number;
  /** Scanner finding codes behind a quarantine. */
  findings?: string[];
  /** The API key's id (trust/policy.ts; never the key) behind a policy decision, a call, or an upstream's registration or removal. */
  key?: string;
  /** What a policy decision was about: see_catalog, see_tool, call, write, manage; an OAuth event's step: start, callback, token, refresh. */
  action?: string;
}

export interface AuditLog {
  record(event: AuditEvent): void;
}

export function auditLog(logger: Logger, metrics?: Metrics): AuditLog {
  return {
    record(event) {
      logger.info({ audit: event.event, ...event, event: undefined, ...(event.ms !== undefined ? { ms: Math.round(event.ms * 100) / 100 } : {}) }, 'audit');
      metrics?.auditEvents.inc({ event: event.event, outcome: event.outcome });
    },
  };
}

/** A per-key policy decision as trust/policy.ts's `Access` reports it. */
export interface PolicyDecisionEvent {
  decision: 'allow' | 'deny';
  action: string;
  /** rest or mcp: the metric's label. */
  surface: 'rest' | 'mcp';
  /** The route or meta-tool. */
  via: string;
  key: string;
  tenant: string;
  catalog?: string;
  tool?: string;
  /** An upstream (server) the decision was about. */
  server?: string;
}

/** Every decision counts in the metric by surface and outcome; a denial is also an audit line (key id, route or meta-tool, catalog, tool). */
export function policyRecorder(audit: AuditLog | undefined, metrics: Metrics | undefined): (decision: PolicyDecisionEvent) => void {
  return (decision) => {
    metrics?.policyDecisions.inc({ surface: decision.surface, action: decision.action, decision: decision.decision });
    if (decision.decision !== 'deny') return;
    audit?.record({
      event: 'policy',
      tenant: decision.tenant,
      catalog: decision.catalog ?? '*',
      ...(decision.tool ? { tool: decision.tool } : {}),
      ...(decision.server ? { upstream: decision.server } : {}),
      outcome: 'deny',
      key: decision.key,
      action: decision.action,
      via: decision.via,
    });
  };
}

/** The JSON type of each top-level argument: enough to audit a call without keeping what was sent. */
export function argumentShape(args: Record<string, unknown>): Record<string, string> {
  const shape: Record<string, string> = {};
  const entries = Object.entries(args);
  // A key is a field name, but a hostile caller could make it long or many: bounded like any log field.
  for (const [key, value] of entries.slice(0, SHAPE_FIELDS_MAX)) {
    shape[key.slice(0, 64)] = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
  }
  if (entries.length > SHAPE_FIELDS_MAX) shape['…'] = `${entries.length - SHAPE_FIELDS_MAX} more`;
  return shape;
}

const SHAPE_FIELDS_MAX = 32;

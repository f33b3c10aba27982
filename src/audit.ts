/**
 * The gateway's audit trail (issue 70): one structured log line and one metric per proxied call,
 * pin, quarantine, approval, rejection, name conflict and refused address. A line says who
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
  | 'code_run';

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
  /** A call made by a run_code program (`run_code`), not by call_tool. */
  via?: string;
  /** Tool calls a run_code program made. */
  calls?: number;
  /** Scanner finding codes behind a quarantine. */
  findings?: string[];
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

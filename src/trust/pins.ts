/**
 * Pinning an upstream's tools (issue 70's rug pulls): what a sync does with each tool it lists,
 * without I/O. A tool is served only while what the upstream lists now (its pin hash) is what was
 * approved; anything else waits in quarantine for an operator, or is approved at once where the
 * rules allow (the registration's own listing, or `trust: "auto"`, and only when the scanner
 * passes it). A tool the upstream no longer lists leaves at once.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import { isFlagged, type Finding } from './scan-tool.js';

/** The parts of an MCP tool an agent reads or a call depends on: what a pin covers. */
export interface ListedDefinition {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** The fields of a `tools/list` entry a pin covers, and nothing else (`_meta`, icons and the like change freely). */
export function listedDefinition(tool: Record<string, unknown>): ListedDefinition {
  const definition: ListedDefinition = { name: String(tool.name) };
  if (typeof tool.title === 'string') definition.title = tool.title;
  if (typeof tool.description === 'string') definition.description = tool.description;
  for (const key of ['inputSchema', 'outputSchema', 'annotations'] as const) if (tool[key] !== undefined) definition[key] = tool[key];
  return definition;
}

const PIN_VERSION = 'toolsift/pin/v1';

/** SHA-256 of the definition's canonical JSON (key order does not count, every character does). */
export function pinHash(definition: ListedDefinition): string {
  return createHash('sha256')
    .update(canonicalJson({ v: PIN_VERSION, ...definition }))
    .digest('hex');
}

/** One tool of an upstream as pinned. */
export interface PinRow {
  name: string;
  currentHash: string;
  currentDefinition: ListedDefinition;
  findings: Finding[];
  approvedHash: string | null;
  approvedDefinition: ListedDefinition | null;
  rejectedHash: string | null;
  changedAt: Date;
}

export type PinStatus = 'approved' | 'pending' | 'rejected';

export function pinStatus(row: Pick<PinRow, 'currentHash' | 'approvedHash' | 'rejectedHash'>): PinStatus {
  if (row.approvedHash === row.currentHash) return 'approved';
  return row.rejectedHash === row.currentHash ? 'rejected' : 'pending';
}

/** A tool as a sync lists it: its definition, pin hash and the scanner's findings. */
export interface ListedTool {
  definition: ListedDefinition;
  hash: string;
  findings: Finding[];
}

export interface PinEvent {
  tool: string;
  event: 'pinned' | 'quarantined' | 'auto_approved' | 'removed';
  hash: string;
  change: 'new' | 'changed' | 'removed';
  findings: Finding[];
}

export interface PinPlan {
  /** Every listed tool's row after this sync. */
  rows: PinRow[];
  /** The rows this sync approves (their approved hash must be written; others keep the store's). */
  approvedNow: Set<string>;
  /** Names no longer listed: their rows go. */
  removed: string[];
  events: PinEvent[];
}

/**
 * What a sync does with the tools it lists, given the pins before it. `registering`: the
 * upstream's first listing since it was registered (or since its URL changed), which the
 * registration approves except what the scanner rates high. `trust: "auto"` approves every later
 * new or changed tool the scanner passes. A rejected definition stays out until it changes again.
 */
export function planPins(listed: ListedTool[], before: ReadonlyMap<string, PinRow>, mode: { registering: boolean; trust: 'pin' | 'auto' }, now: Date): PinPlan {
  const rows: PinRow[] = [];
  const approvedNow = new Set<string>();
  const events: PinEvent[] = [];
  for (const tool of listed) {
    const name = tool.definition.name;
    const pin = before.get(name);
    const row: PinRow = {
      name,
      currentHash: tool.hash,
      currentDefinition: tool.definition,
      findings: tool.findings,
      approvedHash: pin?.approvedHash ?? null,
      approvedDefinition: pin?.approvedDefinition ?? null,
      rejectedHash: pin?.rejectedHash ?? null,
      changedAt: pin && pin.currentHash === tool.hash ? pin.changedAt : now,
    };
    rows.push(row);
    if (row.approvedHash === tool.hash || row.rejectedHash === tool.hash) continue;
    const change = row.approvedHash === null ? 'new' : 'changed';
    const safe = !isFlagged(tool.findings);
    if (safe && (mode.registering || mode.trust === 'auto')) {
      row.approvedHash = tool.hash;
      row.approvedDefinition = tool.definition;
      approvedNow.add(name);
      events.push({ tool: name, event: mode.registering ? 'pinned' : 'auto_approved', hash: tool.hash, change, findings: tool.findings });
    } else if (pin?.currentHash !== tool.hash) {
      // Logged once, when the definition first arrives, not on every refresh that finds it still waiting.
      events.push({ tool: name, event: 'quarantined', hash: tool.hash, change, findings: tool.findings });
    }
  }
  const names = new Set(rows.map((row) => row.name));
  const removed = [...before.keys()].filter((name) => !names.has(name));
  for (const name of removed) events.push({ tool: name, event: 'removed', hash: before.get(name)!.currentHash, change: 'removed', findings: [] });
  return { rows, approvedNow, removed, events };
}

/** One difference between two definitions: a JSON path and the values on each side (absent: undefined). */
export interface DefinitionChange {
  path: string;
  before?: unknown;
  after?: unknown;
}

const DIFF_MAX_CHANGES = 200;

/**
 * The leaves that differ between an approved and a pending definition, by JSON path
 * (`description`, `inputSchema.properties.note`), so an operator sees exactly what an upstream
 * changed before approving it. At most DIFF_MAX_CHANGES; a subtree present on one side only is
 * one change.
 */
export function diffDefinitions(before: unknown, after: unknown): DefinitionChange[] {
  const changes: DefinitionChange[] = [];
  const walk = (a: unknown, b: unknown, path: string) => {
    if (changes.length >= DIFF_MAX_CHANGES) return;
    if (canonicalJson(a) === canonicalJson(b)) return;
    const objectLike = (value: unknown) => typeof value === 'object' && value !== null;
    if (objectLike(a) && objectLike(b) && Array.isArray(a) === Array.isArray(b)) {
      const left = a as Record<string, unknown>;
      const right = b as Record<string, unknown>;
      const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
      for (const key of keys) walk(left[key], right[key], path ? `${path}.${key}` : key);
      return;
    }
    changes.push({ path: path || '(definition)', ...(a === undefined ? {} : { before: a }), ...(b === undefined ? {} : { after: b }) });
  };
  walk(before, after, '');
  return changes;
}

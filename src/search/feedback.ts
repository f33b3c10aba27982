/**
 * Learning from use (issue 72): what an agent used after a search becomes an event of the
 * searched catalog. One function writes events, whoever observed the use: `POST /v1/feedback`,
 * the MCP server's correlation of a call with the search that showed the tool (`RecentSearches`),
 * and the replay evaluation (src/eval/replay.ts).
 */
import { randomBytes } from 'node:crypto';
import { notFound } from '../errors.js';
import type { Embedder } from '../embed/embedder.js';
import { getCatalog, loadCatalogTools } from '../store/catalog-store.js';
import type { Access } from '../trust/policy.js';
import type { Db } from '../store/database.js';
import { currentHashes, deleteFeedback, insertFeedback } from '../store/feedback-store.js';
import { LruCache } from '../lib/lru-cache.js';
import type { LearnedCache } from './learned-cache.js';
import { LEARNED_EVENTS_PER_TOOL } from '../ranking/learned.js';

/** Who calls without an API key (the keyless default): one caller for all. */
export const ANONYMOUS_CALLER = 'anonymous';

/** A use seen right after a search: a call is strong evidence, a look at the details weak. */
export const STRENGTH = { used: 1, called: 1, details: 0.3 } as const;

export interface FeedbackDeps {
  db: Db;
  embedder: Embedder | null;
  /** Absent with LEARNING=off: nothing is recorded. */
  learned?: LearnedCache;
}

export interface FeedbackInput {
  query: string;
  used: string[];
  /** Who reported it: a digest of the API key (never the key), or "anonymous". */
  caller: string;
  strength: number;
  /** The key reporting it: a tool it does not see is `unknown`, as an absent one (trust/policy.ts). */
  access?: Access;
  /**
   * What the model was shown with them, in order, when the caller knows: those not used were
   * passed over, and are no twins of the used ones for queries like this one (ranking/learned.ts).
   */
  shown?: readonly string[];
}

/** Passed-over tools kept per event: the head of what was shown, what a model reads first. */
export const PASSED_OVER_MAX = 20;

/**
 * Records that the tools `used` served `query` in the catalog. Names the catalog does not hold are
 * returned as `unknown` and not recorded; events judge the definition the catalog holds now.
 */
export async function recordFeedback(
  deps: FeedbackDeps,
  ref: { tenant: string; name: string },
  input: FeedbackInput,
): Promise<{ recorded: string[]; unknown: string[]; learning: boolean }> {
  const catalog = await getCatalog(deps.db, ref.tenant, ref.name);
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  const used = [...new Set(input.used)];
  if (!deps.learned) return { recorded: [], unknown: [], learning: false };
  // Of what was shown, the head not used: kept only where the catalog holds it (and the key sees it).
  const shown = input.shown ? [...new Set(input.shown)].filter((name) => !used.includes(name)).slice(0, PASSED_OVER_MAX) : undefined;
  const hashes = await currentHashes(deps.db, catalog.id, [...used, ...(shown ?? [])]);
  const access = input.access;
  if (access?.limitsTools) {
    const rows = await loadCatalogTools(deps.db, catalog.id, [...hashes.keys()]);
    for (const [name, row] of rows) if (!access.seesTool({ catalog: ref.name, name, server: row.server })) hashes.delete(name);
  }
  const recorded = used.filter((name) => hashes.has(name));
  const unknown = used.filter((name) => !hashes.has(name));
  if (recorded.length === 0) return { recorded, unknown, learning: true };
  // The query's embedding lets later queries that mean the same in other words find it; a model
  // that fails leaves the words alone.
  const vector = deps.embedder ? await deps.embedder.embedQuery(input.query).catch(() => undefined) : undefined;
  const passedOver = shown?.filter((name) => hashes.has(name));
  await insertFeedback(
    deps.db,
    catalog.id,
    recorded.map((name) => ({
      query: input.query,
      toolName: name,
      toolHash: hashes.get(name)!,
      caller: input.caller,
      strength: input.strength,
      ...(vector && deps.embedder ? { embedding: { model: deps.embedder.modelId, vector } } : {}),
      ...(passedOver ? { passedOver } : {}),
    })),
    // What a tool's window can hold of one caller: older events would never be read again.
    LEARNED_EVENTS_PER_TOOL,
  );
  deps.learned.changed(catalog.id);
  return { recorded, unknown, learning: true };
}

/** Forgets everything learned in the catalog; how many events were removed. */
export async function forgetFeedback(deps: FeedbackDeps, ref: { tenant: string; name: string }): Promise<number> {
  const catalog = await getCatalog(deps.db, ref.tenant, ref.name);
  if (!catalog) throw notFound(`catalog "${ref.name}"`);
  const removed = await deleteFeedback(deps.db, catalog.id);
  deps.learned?.forget(catalog.id);
  return removed;
}

/** A search as answered, for feedback that quotes its id and for MCP's correlation. */
export interface AnsweredSearch {
  id: string;
  tenant: string;
  caller: string;
  query: string;
  /** The catalogs searched and the tool names shown from each. */
  shown: { catalog: string; names: string[] }[];
  at: number;
  /** Uses already recorded for it (tool in catalog -> strength): each counted once, a call over a look. */
  recorded: Map<string, number>;
}

/** How long after a search a call or a look at details counts as its use (MCP has no sessions). */
export const CORRELATION_WINDOW_MS = 10 * 60_000;
/** Searches remembered per tenant and caller for the correlation. */
const PER_CALLER = 8;

/**
 * The searches answered here recently: by id (for `POST /v1/feedback {search_id}`), and per
 * tenant and caller, newest first (for the MCP correlation). In process: an id quoted at another
 * replica is not found there (the caller's query is used instead, when it sends one).
 */
export class RecentSearches {
  private readonly byId = new LruCache<string, AnsweredSearch>(20_000);
  private readonly byCaller = new LruCache<string, AnsweredSearch[]>(10_000);

  /**
   * Remembers an answered search; `correlate`: an MCP search_tools answer, which the same caller's
   * next calls are matched with (a REST search is judged only by feedback that quotes its id).
   */
  record(search: Omit<AnsweredSearch, 'id' | 'at' | 'recorded'>, options: { correlate: boolean }, now = Date.now()): string {
    const answered: AnsweredSearch = { ...search, id: `s_${randomBytes(12).toString('hex')}`, at: now, recorded: new Map() };
    this.byId.set(answered.id, answered);
    if (options.correlate) {
      const key = `${search.tenant}\u0000${search.caller}`;
      this.byCaller.set(key, [answered, ...(this.byCaller.get(key) ?? [])].slice(0, PER_CALLER));
    }
    return answered.id;
  }

  /** A search by its id, only for the tenant that made it. */
  get(id: string, tenant: string): AnsweredSearch | undefined {
    const found = this.byId.get(id);
    return found && found.tenant === tenant ? found : undefined;
  }

  /**
   * The newest MCP search of this tenant and caller, within the window, that showed `tool` of
   * `catalog`, and the evidence this use adds to what was recorded for it (none: undefined).
   */
  use(tenant: string, caller: string, catalog: string, tool: string, strength: number, now = Date.now()): { search: AnsweredSearch; add: number } | undefined {
    for (const search of this.byCaller.get(`${tenant}\u0000${caller}`) ?? []) {
      if (now - search.at > CORRELATION_WINDOW_MS) break;
      if (!search.shown.some((entry) => entry.catalog === catalog && entry.names.includes(tool))) continue;
      const key = `${catalog}\u0000${tool}`;
      const before = search.recorded.get(key) ?? 0;
      if (before >= strength) return undefined;
      search.recorded.set(key, strength);
      return { search, add: strength - before };
    }
    return undefined;
  }
}

/**
 * Each catalog's learned index in process (issue 72), read from the store's events: whole when the
 * catalog's revision or the model changes (a changed or removed tool's events drop out), the new
 * events only otherwise, at most every `refreshMs` (how far another replica's events may lag
 * behind) and at once after a write here. Past `memoryBytes` (LEARNED_MEMORY, by the indexes' own
 * estimates) the least recently searched catalogs' indexes are let go, to be read again when
 * searched; the one being searched is always kept, and when it alone outgrows the budget it keeps
 * its newest events within KEEP_SHARE of it (LearnedIndex.keepNewest).
 */
import { queryTerms } from '../ranking/search-text.js';
import { distinctTerms } from '../ranking/bm25.js';
import { DEFAULT_LEARNED_PARAMS, LearnedIndex, type LearnedParams } from '../ranking/learned.js';
import { feedbackStart, loadFeedback } from '../store/feedback-store.js';
import type { Db } from '../store/database.js';

/** How often a search looks for events written by other replicas (their lag, at most), ms. */
export const LEARNED_REFRESH_MS = 2_000;
/** Events read at once per catalog: a first read starts at the newest this many stored. */
export const LEARNED_EVENTS_MAX = 200_000;
const PAGE = 20_000;
/** What a catalog's index alone past LEARNED_MEMORY keeps of it: its newest events within this share of the budget. */
export const KEEP_SHARE = 0.8;

interface Held {
  revision: number;
  model: string | null;
  lastId: number;
  /** Whether a read has placed `lastId` (at the newest LEARNED_EVENTS_MAX events). */
  started?: boolean;
  checkedAt: number;
  stale: boolean;
  index: LearnedIndex;
  loading?: Promise<LearnedIndex>;
  /** When a search last asked for it (performance.now()). */
  usedAt: number;
}

export class LearnedCache {
  private readonly held = new Map<number, Held>();
  readonly params: LearnedParams;

  constructor(private readonly options: { retentionSeconds: number; halfLifeSeconds: number; refreshMs: number; memoryBytes?: number }) {
    this.params = { ...DEFAULT_LEARNED_PARAMS, halfLifeSeconds: options.halfLifeSeconds };
  }

  /** The catalog's learned index for a search, current within `refreshMs`; undefined when nothing was learned. */
  async forSearch(db: Db, catalog: { id: number; revision: number }, model: string | null): Promise<LearnedIndex | undefined> {
    let held = this.held.get(catalog.id);
    if (!held || held.revision !== catalog.revision || held.model !== model) {
      if (held?.loading && held.revision === catalog.revision && held.model === model) return nonEmpty(await held.loading);
      held = { revision: catalog.revision, model, lastId: 0, checkedAt: 0, stale: true, index: new LearnedIndex(), usedAt: 0 };
      this.held.set(catalog.id, held);
    }
    held.usedAt = performance.now();
    if (held.loading) return nonEmpty(await held.loading);
    if (held.stale || performance.now() - held.checkedAt > this.options.refreshMs) {
      const entry = held;
      entry.stale = false;
      entry.loading = this.readNew(db, catalog.id, entry).finally(() => {
        entry.loading = undefined;
      });
      try {
        await entry.loading;
      } catch (error) {
        entry.stale = true;
        throw error;
      }
      this.trim(catalog.id);
    }
    return nonEmpty(held.index);
  }

  /** The memory the held indexes take, by their own estimates. */
  get bytes(): number {
    let sum = 0;
    for (const held of this.held.values()) sum += held.index.bytes;
    return sum;
  }

  /** The bytes it may hold (LEARNED_MEMORY); unbounded when not set. */
  get budget(): number {
    return this.options.memoryBytes ?? Number.POSITIVE_INFINITY;
  }

  /** Catalogs whose learned index is held. */
  get catalogs(): number {
    return this.held.size;
  }

  /** Past the budget, lets the least recently searched indexes go (never `keep`, nor one being read). */
  private trim(keep: number): void {
    const budget = this.options.memoryBytes;
    if (budget === undefined) return;
    let total = this.bytes;
    if (total <= budget) return;
    const oldestFirst = [...this.held.entries()].filter(([id, held]) => id !== keep && !held.loading).sort((a, b) => a[1].usedAt - b[1].usedAt);
    for (const [id, held] of oldestFirst) {
      if (total <= budget) break;
      this.held.delete(id);
      total -= held.index.bytes;
    }
  }

  /** The index as last read here, for an answer from memory while the store does not answer. */
  remembered(catalogId: number): LearnedIndex | undefined {
    const held = this.held.get(catalogId);
    return held ? nonEmpty(held.index) : undefined;
  }

  /** Events were written for the catalog here: the next search reads them. */
  changed(catalogId: number): void {
    const held = this.held.get(catalogId);
    if (held) held.stale = true;
  }

  /** The catalog's events were forgotten (or it was deleted). */
  forget(catalogId: number): void {
    this.held.delete(catalogId);
  }

  private async readNew(db: Db, catalogId: number, held: Held): Promise<LearnedIndex> {
    held.checkedAt = performance.now();
    // A first read starts at the newest LEARNED_EVENTS_MAX events (a later one reads what came since).
    if (!held.started) {
      held.lastId = await feedbackStart(db, catalogId, LEARNED_EVENTS_MAX);
      held.started = true;
    }
    const budget = this.options.memoryBytes;
    for (let read = 0; read < LEARNED_EVENTS_MAX; read += PAGE) {
      const rows = await loadFeedback(db, catalogId, {
        afterId: held.lastId,
        sinceSeconds: this.options.retentionSeconds,
        model: held.model,
        limit: PAGE,
      });
      for (const row of rows) {
        held.index.add(row.query, distinctTerms(queryTerms(row.query)), row.queryVector, {
          tool: row.toolName,
          caller: row.caller,
          strength: row.strength,
          at: row.at,
          ...(row.passedOver?.length ? { passedOver: row.passedOver } : {}),
        });
        held.lastId = row.id;
      }
      // One catalog's index alone past the budget keeps its newest events within KEEP_SHARE of it,
      // so that it is not cut again at each of the next few events.
      if (budget !== undefined && held.index.bytes > budget) held.index = held.index.keepNewest(budget * KEEP_SHARE);
      if (rows.length < PAGE) break;
    }
    return held.index;
  }
}

const nonEmpty = (index: LearnedIndex) => (index.eventCount > 0 ? index : undefined);

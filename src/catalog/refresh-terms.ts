import type { Logger } from '../logger.js';
import type { Db } from '../store/database.js';
import { inBackground } from '../store/priority.js';
import { documentsWithStaleTerms, replaceTerms, termsRecipeCounts } from '../store/tool-store.js';
import { documentTerms, TERMS_VERSION } from '../ranking/search-text.js';
import { mapYielding } from '../lib/time-slice.js';

/** Documents a page when not told (PostgreSQL); the service pages by the store's write slice (tool-store.ts STORE_SLICE). */
const BATCH = 500;
/** After a failed page (the store away), the refresh starts again this much later. */
const RETRY_MS = 5_000;
/**
 * The pause after each page, as a share of the page's time: the refresh leaves the thread and the
 * store to searches at least a third of the time (a 100,000-document refresh takes minutes, not the
 * 80-107 s it took at full speed before the service listened).
 */
const PAUSE_SHARE = 0.5;

/**
 * Recomputes the BM25 terms of documents stored by an older tokenizer or document recipe, page
 * after page in hash order; `pace` runs after each page (the background refresh pauses there).
 * Documents keep their content hash: only derived data changes. Terms of a newer recipe are left
 * as they are (a later release sharing the store wrote them).
 */
export async function refreshStaleTerms(
  db: Db,
  logger: Logger,
  version: number = TERMS_VERSION,
  pace: (page: { documents: number; ms: number }) => Promise<void> = async () => {},
  pageSize: number = BATCH,
): Promise<number> {
  let refreshed = 0;
  // In hash order, each page past the last: one pass over the documents.
  for (let after: string | undefined; ; ) {
    const started = performance.now();
    const stale = await inBackground(() => documentsWithStaleTerms(db, version, pageSize, after));
    if (stale.length === 0) break;
    const terms = await mapYielding(stale, (doc) => ({ hash: doc.hash, ...documentTerms(doc) }));
    await inBackground(() => replaceTerms(db, terms, version));
    refreshed += stale.length;
    after = stale[stale.length - 1]!.hash;
    await pace({ documents: stale.length, ms: performance.now() - started });
  }
  if (refreshed > 0) logger.info({ refreshed, termsVersion: version }, 'recomputed BM25 terms of documents from an older recipe');
  return refreshed;
}

/**
 * Whether the store's BM25 terms are all of this release's recipe, and the refresh that makes them
 * so, in the background after the start (deps.ts). The store's BM25 lists (SQL) mix recipes while
 * some documents have terms of another one, so a search uses them only while `current`; otherwise
 * a catalog ranks from its in-process index, whose rows of another recipe take their terms from
 * their text (store/search-store.ts `loadCatalogIndexRows`): one recipe in every score.
 */
export class TermsRefresh {
  /** `checking` until the first count; `newer`: documents of a later release's recipe remain (never rewritten here). */
  state: 'checking' | 'current' | 'refreshing' | 'newer' = 'checking';
  /** Documents recomputed by this process. */
  refreshed = 0;
  /** Documents of an older and of a newer recipe at the last count. */
  counted = { older: 0, newer: 0 };
  /** The last failure of the refresh, while it retries. */
  failure: string | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private wake: (() => void) | undefined;

  /**
   * `pageSize`: documents a transaction. PGlite runs one statement at a time, and every search's
   * statements wait for a transaction to end: there pages are as small as its write slices.
   */
  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly pageSize: number = BATCH,
    readonly version: number = TERMS_VERSION,
  ) {}

  /** The store's BM25 lists rank one recipe, this release's: no document has terms of another. */
  get current(): boolean {
    return this.state === 'current';
  }

  /** Counts the documents of other recipes (one pass over the documents). */
  async check(): Promise<void> {
    this.counted = await termsRecipeCounts(this.db, this.version);
    this.state = this.counted.older > 0 ? 'refreshing' : this.counted.newer > 0 ? 'newer' : 'current';
  }

  /** Starts the refresh of older documents, once `begin()` says so (after the catalogs are read at start). */
  start(begin: () => boolean = () => true): void {
    if (this.state !== 'refreshing' || this.running || this.closed) return;
    this.running = this.run(begin).finally(() => (this.running = undefined));
  }

  /** A search met documents of another recipe in the store's lists (another release wrote them since the count). */
  stale(): void {
    if (this.state !== 'current') return;
    this.state = 'refreshing';
    this.start();
  }

  /** What /readyz says of it; throws (a degraded, not required, component) when something is amiss. */
  report(): Record<string, unknown> {
    if (this.failure)
      throw new Error(`recomputing BM25 terms for recipe ${this.version} failed (${this.failure}); retrying; searches rank in process meanwhile`);
    if (this.state === 'newer') {
      throw new Error(
        `${this.counted.newer} documents have BM25 terms of a newer recipe than this release's (${this.version}), written by a later release sharing the store; ` +
          'this release ranks them from their text in process and leaves them as they are: finish the upgrade',
      );
    }
    return {
      recipe: this.version,
      state: this.state,
      ...(this.state === 'refreshing' ? { refreshed: this.refreshed, of: this.counted.older } : {}),
    };
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.running;
  }

  private async run(begin: () => boolean): Promise<void> {
    while (!this.closed && !begin()) await this.pause(100);
    while (!this.closed) {
      try {
        await refreshStaleTerms(
          this.db,
          this.logger,
          this.version,
          async ({ documents, ms }) => {
            this.refreshed += documents;
            if (this.closed) throw new Closed();
            await this.pause(ms * PAUSE_SHARE);
          },
          this.pageSize,
        );
        // Older documents another release wrote meanwhile are refreshed in another round.
        await this.check();
        this.failure = undefined;
        if (this.state !== 'refreshing') return;
      } catch (error) {
        if (this.closed) return;
        this.failure = (error as Error).message;
        this.logger.warn({ err: error }, 'recomputing BM25 terms of an older recipe failed; retrying');
        await this.pause(RETRY_MS);
      }
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** Thrown inside a page's pace to end the refresh at shutdown. */
class Closed extends Error {}

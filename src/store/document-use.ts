import type { Logger } from '../logger.js';
import { LruCache } from '../lib/lru-cache.js';
import type { Db } from './database.js';
import { touchDocuments } from './document-gc.js';
import { inBackground } from './priority.js';

/** Hashes this process remembers marking (~100 bytes each): more than the selector's caches hold. */
export const DOCUMENT_USE_REMEMBERED = 100_000;

/** How long marks gather before they are written: a burst of turns shares one statement. */
export const DOCUMENT_USE_DELAY_MS = 1_000;

/** Hashes a marking statement carries. */
const TOUCH_STATEMENT = 1_000;

const NOTHING_MISSING: Promise<ReadonlySet<string>> = Promise.resolve(new Set());

interface Batch {
  hashes: Set<string>;
  done: Promise<ReadonlySet<string>>;
  resolve: (missing: ReadonlySet<string>) => void;
  timer: NodeJS.Timeout;
}

/**
 * Keeps the documents requests use from being swept (store/document-gc.ts). Gateways send the same
 * tools every turn, so marking them on every turn would be a write a turn: a hash is marked by this
 * process at most once per `everyMs` (remembered here, bounded; a hash forgotten is only marked
 * sooner), and the statement skips the rows another replica marked within it. Marks gather for
 * DOCUMENT_USE_DELAY_MS and are written in the background: a request never waits for them, and a
 * failed write is logged, its hashes marked again on their next use.
 */
export class DocumentUse {
  readonly everyMs: number;
  readonly #marked: LruCache<string, number>;
  readonly #flushing = new Set<Promise<void>>();
  #batch: Batch | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: { everyMs: number; logger: Logger; remembered?: number; delayMs?: number; now?: () => number },
  ) {
    this.everyMs = options.everyMs;
    this.#marked = new LruCache(options.remembered ?? DOCUMENT_USE_REMEMBERED);
  }

  /**
   * Marks `hashes` as used (those due). Resolves, once written, with those of them found not stored:
   * the sweep removed them while the caller held them as stored. Never rejects.
   */
  touch(hashes: Iterable<string>): Promise<ReadonlySet<string>> {
    const now = this.now();
    let batch: Batch | undefined;
    for (const hash of hashes) {
      const at = this.#marked.get(hash);
      if (at !== undefined && now - at < this.everyMs) continue;
      this.#marked.set(hash, now);
      batch ??= this.#pending();
      batch.hashes.add(hash);
    }
    return batch?.done ?? NOTHING_MISSING;
  }

  /** Writes the marks gathered so far, and waits for those being written. */
  async flush(): Promise<void> {
    if (this.#batch) this.#write();
    await Promise.all([...this.#flushing]);
  }

  /** The clock marks are throttled by (callers that throttle a whole list use it too). */
  now(): number {
    return this.options.now?.() ?? performance.now();
  }

  #pending(): Batch {
    if (this.#batch) return this.#batch;
    let resolve!: (missing: ReadonlySet<string>) => void;
    const done = new Promise<ReadonlySet<string>>((settle) => (resolve = settle));
    const timer = setTimeout(() => this.#write(), this.options.delayMs ?? DOCUMENT_USE_DELAY_MS);
    timer.unref();
    this.#batch = { hashes: new Set(), done, resolve, timer };
    return this.#batch;
  }

  #write(): void {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = undefined;
    clearTimeout(batch.timer);
    const writing = inBackground(async () => {
      const hashes = [...batch.hashes];
      const missing = new Set<string>();
      try {
        for (let start = 0; start < hashes.length; start += TOUCH_STATEMENT) {
          for (const hash of await touchDocuments(this.db, hashes.slice(start, start + TOUCH_STATEMENT), this.everyMs)) missing.add(hash);
        }
      } catch (error) {
        for (const hash of hashes) this.#marked.delete(hash);
        this.options.logger.warn({ err: error, documents: hashes.length }, 'could not mark documents as used; their next use tries again');
      }
      batch.resolve(missing);
    });
    this.#flushing.add(writing);
    void writing.finally(() => this.#flushing.delete(writing));
  }
}

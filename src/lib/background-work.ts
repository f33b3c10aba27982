/**
 * Work a request starts but does not answer with (the selector stores a request's new tools after
 * it has answered). Shutdown waits for it before closing the database, so an answered request's
 * writes are never cut off; tests wait for it before looking at the store.
 */
export class BackgroundWork {
  readonly #running = new Set<Promise<unknown>>();

  /** Tracks `work` until it settles; the caller handles its outcome. */
  run<T>(work: Promise<T>): Promise<T> {
    this.#running.add(work);
    const forget = () => this.#running.delete(work);
    work.then(forget, forget);
    return work;
  }

  get size(): number {
    return this.#running.size;
  }

  /** Resolves once nothing is running, including work started while waiting. */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }
}

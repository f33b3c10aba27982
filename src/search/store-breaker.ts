/**
 * Whether the gateway selector should ask the store at all. After the store missed the selector's
 * deadline (or refused), every turn would wait that deadline again (400 ms at the default budget)
 * before answering from memory; while the breaker is open, a selection from a catalog held in
 * memory answers at once, and one probe at a time reads the store instead. The probe's answer
 * closes the breaker; its failure keeps it open.
 */

/**
 * How long the breaker stays open after a failure with no probe in flight. Short: a store that
 * answers again is asked again within this, and a probe in flight keeps it open for as long as
 * the store takes to fail it (DB_TIMEOUT_MS).
 */
export const STORE_BREAKER_OPEN_MS = 1_000;

export class StoreBreaker {
  #failedAt = Number.NEGATIVE_INFINITY;
  #probing: Promise<void> | undefined;

  constructor(
    private readonly openMs = STORE_BREAKER_OPEN_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A failure within `openMs`, or a probe still waiting for the store. */
  get open(): boolean {
    return this.#probing !== undefined || this.now() - this.#failedAt < this.openMs;
  }

  failed(): void {
    this.#failedAt = this.now();
  }

  succeeded(): void {
    this.#failedAt = Number.NEGATIVE_INFINITY;
  }

  /** Starts `read` unless a probe is in flight; it closes the breaker when it resolves, and keeps it open when it rejects. */
  probe(read: () => Promise<unknown>): void {
    if (this.#probing) return;
    this.#probing = Promise.resolve()
      .then(read)
      .then(
        () => this.succeeded(),
        () => this.failed(),
      )
      .finally(() => {
        this.#probing = undefined;
      });
  }
}

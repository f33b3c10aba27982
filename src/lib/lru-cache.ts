export interface LruWeight<V> {
  /** Most total weight held; the least recently used entries go first to stay under it. */
  max: number;
  weigh: (value: V) => number;
}

/**
 * A bounded map that forgets the least recently used entry first (Map keeps insertion order):
 * at most `capacity` entries, and optionally at most a total weight (say, tools across tool lists).
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  /** Each entry's weight when it was set (or last weighed again): what leaves with it. */
  private readonly weights = new Map<K, number>();
  private totalWeight = 0;
  /** The key last read or written, while it is held. */
  private newestKey: K | undefined;

  constructor(
    readonly capacity: number,
    private readonly weight?: LruWeight<V>,
  ) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    this.newestKey = key;
    return value;
  }

  /** The value last read or written (undefined once that entry is gone, until the next read or write). */
  newest(): V | undefined {
    return this.newestKey === undefined ? undefined : this.entries.get(this.newestKey);
  }

  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weight?.weigh(value) ?? 0;
    // An entry heavier than the whole budget would only evict everything else, then itself.
    if (this.weight && weight > this.weight.max) return;
    this.entries.set(key, value);
    if (this.weight) this.weights.set(key, weight);
    this.newestKey = key;
    this.totalWeight += weight;
    while (this.entries.size > this.capacity || (this.weight && this.totalWeight > this.weight.max)) {
      this.delete(this.entries.keys().next().value as K);
    }
  }

  /**
   * An entry grew (or shrank) where it is held: its weight is taken again and, past the budget, the
   * least recently used others go. The entry itself stays, even alone over the budget.
   */
  reweigh(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined || !this.weight) return;
    const weight = this.weight.weigh(value);
    this.totalWeight += weight - (this.weights.get(key) ?? 0);
    this.weights.set(key, weight);
    for (const other of [...this.entries.keys()]) {
      if (this.totalWeight <= this.weight.max) break;
      if (other !== key) this.delete(other);
    }
  }

  delete(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.totalWeight -= this.weights.get(key) ?? this.weight?.weigh(value) ?? 0;
    this.weights.delete(key);
    if (this.newestKey === key) this.newestKey = undefined;
  }

  /** Total weight held. */
  get heldWeight(): number {
    return this.totalWeight;
  }

  get size(): number {
    return this.entries.size;
  }
}

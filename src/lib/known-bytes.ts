/**
 * Byte strings remembered by key, found again where they sit in a larger buffer by one compare of
 * their bytes: a gateway resends the same tool list (the same bytes) every turn, and finding that
 * list by a structural scan and a SHA-256 of the whole body cost more than everything else a turn
 * does besides the query embedding (docs/benchmarks.md, "The selector's repeated list").
 *
 * Candidates are looked up by their first HEAD_BYTES bytes, so the caller says only where a string
 * starts; which one is there, and where it ends, is a byte compare (exact, unlike a digest). Bounded
 * by total bytes, the least recently found forgotten first.
 */
export const HEAD_BYTES = 64;
/** Most strings sharing one head that a lookup compares (the most recent first): a bound on its work. */
export const CANDIDATES_PER_HEAD = 8;

export class KnownBytes {
  /** By key, least recently found first (Map keeps insertion order). */
  readonly #byKey = new Map<string, Buffer>();
  readonly #byHead = new Map<string, string[]>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The remembered string that `buffer` holds from `start` on (the most recently found, if several could), or undefined. */
  find(buffer: Buffer, start: number): { key: string; end: number } | undefined {
    if (start < 0 || start + HEAD_BYTES > buffer.length) return undefined;
    const keys = this.#byHead.get(buffer.toString('latin1', start, start + HEAD_BYTES));
    if (!keys) return undefined;
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index]!;
      const bytes = this.#byKey.get(key)!;
      const end = start + bytes.length;
      if (end <= buffer.length && buffer.compare(bytes, 0, bytes.length, start, end) === 0) {
        this.#byKey.delete(key);
        this.#byKey.set(key, bytes);
        return { key, end };
      }
    }
    return undefined;
  }

  /** Remembers a copy of `bytes` under `key` (strings shorter than HEAD_BYTES, or over the whole bound, are not kept). */
  remember(key: string, bytes: Buffer): void {
    if (bytes.length < HEAD_BYTES || bytes.length > this.maxBytes || this.#byKey.has(key)) return;
    const copy = Buffer.from(bytes);
    const head = copy.toString('latin1', 0, HEAD_BYTES);
    const keys = this.#byHead.get(head) ?? [];
    keys.push(key);
    this.#byHead.set(head, keys);
    this.#byKey.set(key, copy);
    this.#bytes += copy.length;
    if (keys.length > CANDIDATES_PER_HEAD) this.#forget(keys[0]!);
    while (this.#bytes > this.maxBytes) this.#forget(this.#byKey.keys().next().value!);
  }

  /** Total bytes held. */
  get heldBytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#byKey.size;
  }

  #forget(key: string): void {
    const bytes = this.#byKey.get(key);
    if (!bytes) return;
    this.#byKey.delete(key);
    this.#bytes -= bytes.length;
    const head = bytes.toString('latin1', 0, HEAD_BYTES);
    const keys = this.#byHead.get(head)!.filter((other) => other !== key);
    if (keys.length > 0) this.#byHead.set(head, keys);
    else this.#byHead.delete(head);
  }
}

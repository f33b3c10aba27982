/**
 * The tools catalog searches answered with, as the store gave them (description, schema,
 * definition), by catalog and name: the text an answer from memory gives while the store does not
 * answer (tool-search's `openai` format, MCP search_tools' descriptions). A catalog's index holds
 * terms, not text. The latest row seen for a name is kept, whatever the revision it was read at:
 * an answer from memory is the catalog as last seen here. Bounded by entries and by bytes.
 */
import { LruCache } from '../lib/lru-cache.js';
import type { CatalogToolRow } from '../store/catalog-store.js';

/** The most tools kept, and the bytes of their JSON (as UTF-16) they may hold together. */
export const SEEN_TOOLS_MAX = 20_000;
export const SEEN_TOOLS_BYTES = 32 * 2 ** 20;

interface Seen {
  row: CatalogToolRow;
  bytes: number;
}

export class SeenTools {
  private readonly rows: LruCache<string, Seen>;

  constructor(maxTools = SEEN_TOOLS_MAX, maxBytes = SEEN_TOOLS_BYTES) {
    this.rows = new LruCache(maxTools, { max: maxBytes, weigh: (seen) => seen.bytes });
  }

  /** A search's rows: a row already held with the same content hash is only marked as used. */
  remember(catalogId: number, rows: Iterable<CatalogToolRow>): void {
    for (const row of rows) {
      const key = seenKey(catalogId, row.name);
      if (this.rows.get(key)?.row.hash === row.hash) continue;
      this.rows.set(key, { row, bytes: 2 * JSON.stringify(row).length + 2 * key.length + 64 });
    }
  }

  get(catalogId: number, name: string): CatalogToolRow | undefined {
    return this.rows.get(seenKey(catalogId, name))?.row;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.rows.heldWeight;
  }

  get size(): number {
    return this.rows.size;
  }
}

const seenKey = (catalogId: number, name: string) => `${catalogId}\u0000${name}`;

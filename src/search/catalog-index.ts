/**
 * A stored catalog's BM25 statistics in process, one index per catalog revision: what makes a
 * search's cost follow the query's postings instead of the catalog's size.
 *
 * In SQL every search recomputed N, avgdl and every query term's df over the whole catalog (and
 * each server's document for server votes): 69 ms at 10,000 tools, 926 ms at 100,000 on
 * PostgreSQL. A catalog changes only with its revision, so its documents' terms are read once per
 * revision (one statement, which also reads the revision, so the index is exactly that revision's
 * content) and kept. Postgres stays the source of truth: every search reads the catalog's revision
 * first, and while the index of a newer revision is being read (seconds at 100,000 tools) that
 * search ranks in SQL, so a write on any replica is seen by the next search anywhere. Scores are
 * the BM25 of ranking/bm25.ts over the same corpus (tag filter first), tested equal to the SQL.
 * Memory is bounded in bytes across catalogs (CATALOG_INDEX_MEMORY), least recently used first.
 */
import { LruCache } from '../lib/lru-cache.js';
import { forEachTerm, loadCatalogChanges, loadCatalogIndexRows, type CatalogChanges, type CatalogIndexRow } from '../store/search-store.js';
import type { WireShape } from '../catalog/tokens.js';
import { REPLACE_LOGGED_NAMES_MAX, type CatalogSummary } from '../store/catalog-store.js';
import type { Executor } from '../store/tool-store.js';
import { TimeSlice } from '../lib/time-slice.js';
import { Bm25Builder, Bm25Index, patchLists, pushTo, slotPlan, TwoPassPostings, type SlotPlan } from '../ranking/bm25-index.js';
import type { ToolWords } from '../ranking/learned.js';
import { serverPostings, ServerDocumentsBuilder } from '../ranking/servers.js';
import { REREAD_MAX, type ChangedServers, type ServerIndex, type ToolServers } from './server-stats.js';

/** Older revisions a derived index remembers the changed servers since. */
const CHANGED_SINCE_DEPTH = 8;

/** A changed tool's row (an object of its own per change: a merge tells later changes by it). */
interface DeltaRow {
  row: CatalogIndexRow;
}

/**
 * An overlay's base and what changed since it (`CatalogIndex.overlay`): the rows of the names
 * changed and present, the names gone, and the base's servers whose tools changed (their
 * documents' lengths now and their tools' places), whose documents a search makes from its terms.
 */
interface Delta {
  root: CatalogIndex;
  rows: ReadonlyMap<string, DeltaRow>;
  removed: ReadonlySet<string>;
  servers: ReadonlyMap<string, { length: number; places: number[] }>;
  /** The root server index's places of those servers. */
  serverPlaces: ReadonlySet<number>;
}

export class CatalogIndex {
  /** A rough size in bytes (strings, postings, maps) of its own. */
  readonly ownBytes: number;
  /** What was laid over it and lives as long as it does (limited keys' views: search/visibility.ts). */
  private attachedBytes = 0;
  /** Told when something is attached (the cache holding it weighs it again). */
  onAttach?: () => void;
  /** Lowercased tag -> indexes of the documents carrying it. */
  private readonly tagged: Map<string, Int32Array>;
  /** `totalTokens`, once asked. */
  private readonly totals = new Map<WireShape, number | undefined>();
  /** The catalog's servers as BM25 documents (all their tools' terms), with their members and each tool's server. */
  readonly servers: ServerIndex & { serverOf: ToolServers };

  private constructor(
    readonly catalogId: number,
    readonly revision: number,
    readonly bm25: Bm25Index,
    servers: ServerIndex,
    /** Each document's tags, server and definition tokens, by its index in `bm25`. */
    private readonly tags: string[][],
    private readonly serverAt: (string | null)[],
    private readonly tokens: CatalogIndexRow['tokens'][],
    /** Characters of the tools' names and servers' names (for `bytes`). */
    private readonly stringBytes: number,
    /**
     * When derived from older revisions' indexes: those revisions, newest first, each with the
     * servers whose tools changed since it (the dense server list re-reads only those).
     */
    readonly changedSince?: readonly ChangedServers[],
    /** `tagged` when derived (patched from the base's), else built from `tags`. */
    tagged?: Map<string, Int32Array>,
    /** An overlay's base and changes (`overlay`); absent for an index of its own (built, derived or merged). */
    readonly delta?: Delta,
  ) {
    if (tagged) {
      this.tagged = tagged;
    } else {
      const lists = new Map<string, number[]>();
      tags.forEach((list, index) => {
        for (const tag of lowercased(list)) pushTo(lists, tag, index);
      });
      this.tagged = new Map([...lists].map(([tag, members]) => [tag, Int32Array.from(members)]));
    }
    const serverOf: ToolServers = { get: (name) => this.serverOfTool(name) };
    if (delta) {
      // The servers' BM25 documents over every term only when asked (the search makes them from its terms: `serversFor`).
      let whole: Bm25Index | undefined;
      const self = this;
      this.servers = {
        members: servers.members,
        serverOf,
        get bm25() {
          return (whole ??= self.serversFor(undefined).bm25);
        },
      };
    } else {
      this.servers = { ...servers, serverOf };
    }
    // Per tool ~300 bytes of ids, lengths, map entries, member lists and its server, ~50 of tokens; per posting 8; per distinct term ~100.
    const serverBm25 = delta ? delta.root.servers.bm25 : servers.bm25;
    const postings = bm25.postingCount + serverBm25.postingCount;
    this.ownBytes = 350 * bm25.size + 2 * stringBytes + 8 * postings + 100 * (bm25.termCount + serverBm25.termCount);
  }

  /** A rough size in bytes, with what is attached to it, for the cache's bound. */
  get bytes(): number {
    return this.ownBytes + this.attachedBytes;
  }

  /** Counts `bytes` more held as long as this index is (a limited key's view of it). */
  attach(bytes: number): void {
    this.attachedBytes += bytes;
    this.onAttach?.();
  }

  /** Of `words`, those each of `tools` holds, and each word's idf in the catalog (ranking/learned.ts ToolWords). */
  toolWords(tools: readonly string[], words: readonly string[]): ReturnType<ToolWords> {
    const places = new Map<number, string>();
    for (const tool of tools) {
      const at = this.bm25.indexOf(tool);
      if (at !== undefined && this.bm25.isLive(at)) places.set(at, tool);
    }
    const terms = this.bm25.termsOf(new Set(places.keys()), words);
    const held = new Map<string, ReadonlySet<string>>();
    for (const [place, termFreqs] of terms) held.set(places.get(place)!, new Set(termFreqs.keys()));
    const weight = new Map(words.map((word) => [word, this.bm25.df(word) > 0 ? this.bm25.idf(word) : 0]));
    return { held, weight };
  }

  /**
   * How alike `tools`' definitions are by their words (ranking/learned.ts ToolLikeness): the cosine
   * of their word sets, each word weighted by its idf; with `only`, of those words alone, read from
   * their postings (a search's cost). Without it, one pass over every posting: a forward index
   * would be needed before a large catalog reads whole definitions.
   */
  toolLikeness(tools: readonly string[], only?: readonly string[], minShared = 0): (a: string, b: string) => number {
    const places = new Map<number, string>();
    for (const tool of tools) {
      const at = this.bm25.indexOf(tool);
      if (at !== undefined && this.bm25.isLive(at)) places.set(at, tool);
    }
    const weighted = new Map<string, { words: Map<string, number>; norm: number }>();
    const idf = new Map<string, number>();
    for (const [place, termFreqs] of this.bm25.termsOf(new Set(places.keys()), only)) {
      const words = new Map<string, number>();
      let norm = 0;
      for (const term of termFreqs.keys()) {
        let weight = idf.get(term);
        if (weight === undefined) idf.set(term, (weight = this.bm25.idf(term) ** 2));
        words.set(term, weight);
        norm += weight;
      }
      weighted.set(places.get(place)!, { words, norm: Math.sqrt(norm) });
    }
    return (a, b) => {
      const one = weighted.get(a);
      const other = weighted.get(b);
      if (!one || !other || one.norm === 0 || other.norm === 0) return 0;
      let shared = 0;
      let count = 0;
      for (const [term, weight] of one.words)
        if (other.words.has(term)) {
          shared += weight;
          count++;
        }
      // Alike in fewer words than `minShared` (of those read) is no likeness: two tools holding one word of a few alone.
      return count < minShared ? 0 : shared / (one.norm * other.norm);
    };
  }

  private serverOfTool(name: string): string | undefined {
    const at = this.bm25.indexOf(name);
    return at === undefined ? undefined : (this.serverAt[at] ?? undefined);
  }

  /**
   * Builds the index from the catalog's rows, between time slices (a 100,000-tool catalog's rows
   * take seconds). Postings are counted, then written in place (`TwoPassPostings`), and the
   * servers' come from the tools' (`serverPostings`): no list grown per term, no map of terms per
   * server, so what the build leaves behind is mostly what the index keeps.
   */
  static async build(catalogId: number, revision: number, rows: readonly CatalogIndexRow[]): Promise<CatalogIndex> {
    const slice = new TimeSlice();
    const postings = new TwoPassPostings();
    const lengths = new Float64Array(rows.length);
    const serverAt: (string | null)[] = [];
    const tags: string[][] = [];
    const tokens: CatalogIndexRow['tokens'][] = [];
    // Servers are numbered as their first tools come (the order ServerDocumentsBuilder gives them).
    const serverNumbers = new Map<string, number>();
    const serverNames: string[] = [];
    const members = new Map<string, string[]>();
    const serverOf = new Int32Array(rows.length);
    let stringBytes = 0;
    const count = (term: string, tf: number) => tf > 0 && postings.counted(term);
    for (let doc = 0; doc < rows.length; doc++) {
      if (slice.due()) await slice.yield();
      const row = rows[doc]!;
      forEachTerm(row.terms, count);
      lengths[doc] = row.length;
      tags.push(row.tags);
      tokens.push(row.tokens);
      stringBytes += row.name.length;
      serverOf[doc] = -1;
      if (row.server === null) {
        serverAt.push(null);
        continue;
      }
      let number = serverNumbers.get(row.server);
      if (number === undefined) {
        serverNumbers.set(row.server, (number = serverNumbers.size));
        serverNames.push(row.server);
        members.set(row.server, []);
        stringBytes += row.server.length;
      }
      // One string per server, not one per tool as read: 100,000 strings fewer for a major GC to mark.
      serverAt.push(serverNames[number]!);
      serverOf[doc] = number;
      members.get(row.server)!.push(row.name);
    }
    let doc = 0;
    const put = (term: string, tf: number) => tf > 0 && postings.put(term, doc, tf);
    for (; doc < rows.length; doc++) {
      if (slice.due()) await slice.yield();
      forEachTerm(rows[doc]!.terms, put);
    }
    const toolLists = postings.lists();
    const tools = new Bm25Builder();
    tools.ids = rows.map((row) => row.name);
    tools.lengths = lengths;
    tools.building = toolLists;
    tools.count = postings.count;
    const toolIndex = new Bm25Index(tools);

    const servers = new Bm25Builder();
    servers.ids = serverNames;
    const serverLengths = new Float64Array(serverNumbers.size);
    for (let doc = 0; doc < rows.length; doc++) {
      const server = serverOf[doc]!;
      if (server >= 0) serverLengths[server] = serverLengths[server]! + lengths[doc]!;
    }
    servers.lengths = serverLengths;
    const serverLists = await serverPostings(toolLists, serverOf, serverNumbers.size, slice);
    servers.building = serverLists.lists;
    servers.count = serverLists.count;
    return new CatalogIndex(catalogId, revision, toolIndex, { bm25: new Bm25Index(servers), members }, tags, serverAt, tokens, stringBytes);
  }

  /**
   * The index of a later revision from this one and what the revisions between changed: what
   * `build` over that revision's rows makes (same scores, tested), at the cost of the changed
   * tools' and servers' postings (plus one pass over the postings for the dropped tools' terms)
   * instead of reading every tool's terms from the store again. Unchanged tools keep their places
   * (`slotPlan`), so their tags, servers and lookups are shared or copied, not rebuilt.
   */
  static async derive(base: CatalogIndex, changes: CatalogChanges): Promise<CatalogIndex> {
    const changed = new Set([...changes.rows.map((row) => row.name), ...changes.removed]);
    const dropped = new Set<number>();
    const touched = new Set<string>();
    let stringBytes = base.stringBytes;
    for (const name of changed) {
      const at = base.bm25.indexOf(name);
      if (at === undefined) continue;
      dropped.add(at);
      stringBytes -= name.length;
      const server = base.serverAt[at];
      if (server !== null && server !== undefined) touched.add(server);
    }
    for (const row of changes.rows) {
      stringBytes += row.name.length;
      if (row.server !== null) touched.add(row.server);
    }
    const pairs = (row: CatalogIndexRow) => {
      const list: [string, number][] = [];
      forEachTerm(row.terms, (term, tf) => list.push([term, tf]));
      return list;
    };
    // A replaced tool goes back to its own place, so the lists of the terms it kept stay as they are.
    const plan = slotPlan(
      base.size,
      dropped,
      changes.rows.length,
      changes.rows.map((row) => base.bm25.indexOf(row.name)),
    );
    // The dropped and moved tools' terms, read once for the tools' index and the servers' documents.
    const droppedTerms = base.bm25.termsOf(plan.gone);
    const bm25 = await Bm25Index.derive(
      base.bm25,
      plan,
      changes.rows.map((row) => ({ id: row.name, length: row.length, termFreqs: pairs(row) })),
      droppedTerms,
    );
    const tags = plan.apply(
      base.tags,
      changes.rows.map((row) => row.tags),
    );
    const serverAt = plan.apply(
      base.serverAt,
      changes.rows.map((row) => row.server),
    );
    const tokens = plan.apply(
      base.tokens,
      changes.rows.map((row) => row.tokens),
    );
    const tagged = await derivedTagged(
      base.tagged,
      base.tags,
      plan,
      changes.rows.map((row) => row.tags),
    );

    // The touched servers' documents: their old terms, less the dropped tools', plus the new rows'.
    const oldAt = new Map<string, number | undefined>([...touched].map((server) => [server, base.servers.bm25.indexOf(server)]));
    const oldServers = new Set([...oldAt.values()].filter((at) => at !== undefined));
    // Their tools first: how many servers stay decides which others move (`slotPlan`), whose terms are read too.
    const memberLists = new Map([...touched].map((server) => [server, (base.servers.members.get(server) ?? []).filter((name) => !changed.has(name))]));
    for (const row of changes.rows) if (row.server !== null) memberLists.get(row.server)!.push(row.name);
    let staying = 0;
    for (const list of memberLists.values()) if (list.length > 0) staying++;
    // The staying servers in the order their documents are rebuilt below, each back in its own place.
    const stayingAt = [...oldAt].filter(([server]) => memberLists.get(server)!.length > 0).map(([, at]) => at);
    const serverPlan = slotPlan(base.servers.bm25.size, oldServers, staying, stayingAt);
    const oldServerTerms = base.servers.bm25.termsOf(serverPlan.gone);
    const members = new Map(base.servers.members);
    const documents = new Map<string, { termFreqs: Map<string, number>; length: number; members: string[] }>();
    for (const [server, at] of oldAt) {
      documents.set(server, {
        termFreqs: new Map(at === undefined ? [] : oldServerTerms.get(at)!),
        length: at === undefined ? 0 : base.servers.bm25.lengthAt(at),
        members: memberLists.get(server)!,
      });
    }
    for (const doc of dropped) {
      const server = base.serverAt[doc];
      if (server === null || server === undefined) continue;
      const document = documents.get(server)!;
      for (const [term, tf] of droppedTerms.get(doc)!) {
        const left = document.termFreqs.get(term)! - tf;
        if (left > 0) document.termFreqs.set(term, left);
        else document.termFreqs.delete(term);
      }
      document.length -= base.bm25.lengthAt(doc);
    }
    for (const row of changes.rows) {
      if (row.server === null) continue;
      const document = documents.get(row.server)!;
      for (const [term, tf] of pairs(row)) document.termFreqs.set(term, (document.termFreqs.get(term) ?? 0) + tf);
      document.length += row.length;
    }
    const rebuilt: { id: string; length: number; termFreqs: Map<string, number> }[] = [];
    for (const [server, document] of documents) {
      if (document.members.length === 0) {
        if (members.delete(server)) stringBytes -= server.length;
        continue;
      }
      if (!members.has(server)) stringBytes += server.length;
      members.set(server, document.members);
      rebuilt.push({ id: server, length: document.length, termFreqs: document.termFreqs });
    }
    const servers = await Bm25Index.derive(base.servers.bm25, serverPlan, rebuilt, oldServerTerms);

    // Older revisions carry the new changes too; a set past what would be re-read is dropped.
    const changedSince = [
      { revision: base.revision, servers: touched },
      ...(base.changedSince ?? []).map((since) => ({ revision: since.revision, servers: new Set([...since.servers, ...touched]) })),
    ]
      .filter((since) => since.servers.size <= REREAD_MAX)
      .slice(0, CHANGED_SINCE_DEPTH);
    return new CatalogIndex(base.catalogId, changes.revision, bm25, { bm25: servers, members }, tags, serverAt, tokens, stringBytes, changedSince, tagged);
  }

  /**
   * The index of a later revision as this one's base (its own base, when this is an overlay) with
   * every change since laid over it (`Bm25Index.overlay`): the same scores, filters, server votes
   * and typo matching as `build` over that revision's rows (tested), at the cost of the changed
   * tools (their postings, their servers' lengths and members) and copies of the per-tool arrays,
   * not of the postings. What the first search after a write ranks with, within milliseconds;
   * `derive` then merges the change into a base of its own in the background.
   */
  static overlay(prev: CatalogIndex, changes: CatalogChanges): CatalogIndex {
    const root = prev.delta?.root ?? prev;
    const rows = new Map(prev.delta?.rows ?? []);
    const removed = new Set(prev.delta?.removed ?? []);
    // The servers this change touches (for the dense server list's re-reads: `changedSince`).
    const touched = new Set<string>();
    for (const name of [...changes.removed, ...changes.rows.map((row) => row.name)]) {
      const server = prev.serverOfTool(name);
      if (server !== undefined) touched.add(server);
    }
    for (const name of changes.removed) {
      rows.delete(name);
      removed.add(name);
    }
    for (const row of changes.rows) {
      removed.delete(row.name);
      rows.set(row.name, { row });
      if (row.server !== null) touched.add(row.server);
    }
    const dead = new Set<number>();
    for (const name of [...removed, ...rows.keys()]) {
      const at = root.bm25.indexOf(name);
      if (at !== undefined) dead.add(at);
    }
    const added = [...rows.values()];
    const bm25 = Bm25Index.overlay(
      root.bm25,
      dead,
      added.map(({ row }) => ({ id: row.name, length: row.length, eachTerm: (visit: (term: string, tf: number) => void) => forEachTerm(row.terms, visit) })),
    );
    const tags = root.tags.concat(added.map(({ row }) => row.tags));
    const serverAt = root.serverAt.concat(added.map(({ row }) => row.server));
    const tokens = root.tokens.concat(added.map(({ row }) => row.tokens));
    const more = new Map<string, number[]>();
    added.forEach(({ row }, i) => {
      for (const tag of lowercased(row.tags)) pushTo(more, tag, root.size + i);
    });
    const tagged = new Map(root.tagged);
    for (const [tag, places] of more) {
      const list = root.tagged.get(tag) ?? new Int32Array(0);
      const merged = new Int32Array(list.length + places.length);
      merged.set(list);
      merged.set(places, list.length);
      tagged.set(tag, merged);
    }

    // The root's servers with a tool changed since it: their members, lengths and tools' places now.
    const changedServers = new Map<string, { length: number; places: number[]; members: string[] }>();
    const serverOfRoot = (at: number) => root.serverAt[at] ?? null;
    for (const at of dead) {
      const server = serverOfRoot(at);
      if (server !== null) changedServers.set(server, { length: 0, places: [], members: [] });
    }
    for (const { row } of added) if (row.server !== null) changedServers.set(row.server, { length: 0, places: [], members: [] });
    const members = new Map(root.servers.members);
    let stringBytes = root.stringBytes;
    const serverPlaces = new Set<number>();
    for (const [server, document] of changedServers) {
      const at = root.servers.bm25.indexOf(server);
      if (at !== undefined) serverPlaces.add(at);
      for (const name of root.servers.members.get(server) ?? []) {
        if (rows.has(name) || removed.has(name)) continue;
        const place = root.bm25.indexOf(name)!;
        document.members.push(name);
        document.places.push(place);
        document.length += root.bm25.lengthAt(place);
      }
      members.set(server, document.members);
    }
    added.forEach(({ row }, i) => {
      stringBytes += row.name.length;
      if (row.server === null) return;
      const document = changedServers.get(row.server)!;
      document.members.push(row.name);
      document.places.push(root.size + i);
      document.length += row.length;
    });
    for (const [server, document] of changedServers) {
      if (document.places.length > 0) continue;
      members.delete(server);
      changedServers.delete(server);
    }
    const changedSince = [
      { revision: prev.revision, servers: touched },
      ...(prev.changedSince ?? []).map((since) => ({ revision: since.revision, servers: new Set([...since.servers, ...touched]) })),
    ]
      .filter((since) => since.servers.size <= REREAD_MAX)
      .slice(0, CHANGED_SINCE_DEPTH);
    return new CatalogIndex(
      root.catalogId,
      changes.revision,
      bm25,
      { bm25: root.servers.bm25, members },
      tags,
      serverAt,
      tokens,
      stringBytes,
      changedSince,
      tagged,
      {
        root,
        rows,
        removed,
        servers: changedServers,
        serverPlaces,
      },
    );
  }

  /**
   * `now` (a later overlay over the same base as `then`) laid over `merged` (`then` merged): the
   * changes since `then` are its entries that are not `then`'s own (a name changed again, or anew)
   * and the names gone since. Undefined when `now` is not such an overlay.
   */
  static rebase(merged: CatalogIndex, then: CatalogIndex, now: CatalogIndex): CatalogIndex | undefined {
    if (!then.delta || !now.delta || now.delta.root !== then.delta.root || now.revision <= merged.revision) return undefined;
    const before = then.delta;
    const rows = [...now.delta.rows.values()].filter((entry) => before.rows.get(entry.row.name) !== entry).map(({ row }) => row);
    const removed = [...now.delta.removed].filter((name) => !before.removed.has(name));
    return CatalogIndex.overlay(merged, { revision: now.revision, rows, removed });
  }

  /** An overlay's changes since its base, as one change (what a merge derives the base through). */
  deltaChanges(): CatalogChanges | undefined {
    if (!this.delta) return undefined;
    return { revision: this.revision, rows: [...this.delta.rows.values()].map(({ row }) => row), removed: [...this.delta.removed] };
  }

  /** Names an overlay changed since its base (0 for an index of its own). */
  get deltaNames(): number {
    return this.delta ? this.delta.rows.size + this.delta.removed.size : 0;
  }

  /**
   * The servers as BM25 documents for a search of `terms`: an overlay's changed servers' documents
   * hold only those terms (each at its full length: the same scores for that query, from those
   * terms' postings), laid over the base's (every term, when `terms` is undefined).
   */
  serversFor(terms: Iterable<string> | undefined): ServerIndex & { serverOf: ToolServers } {
    const delta = this.delta;
    if (!delta) return this.servers;
    const places = new Set<number>();
    for (const document of delta.servers.values()) for (const place of document.places) places.add(place);
    const held = this.bm25.termsOf(places, terms);
    const documents = [...delta.servers].map(([server, document]) => {
      const termFreqs = new Map<string, number>();
      for (const place of document.places) for (const [term, tf] of held.get(place)!) termFreqs.set(term, (termFreqs.get(term) ?? 0) + tf);
      return {
        id: server,
        length: document.length,
        eachTerm: (visit: (term: string, tf: number) => void) => termFreqs.forEach((tf, term) => visit(term, tf)),
      };
    });
    return {
      bm25: Bm25Index.overlay(delta.root.servers.bm25, delta.serverPlaces, documents),
      members: this.servers.members,
      serverOf: this.servers.serverOf,
    };
  }

  /** Tools in the catalog. */
  get size(): number {
    return this.bm25.documents;
  }

  /** BM25 over the catalog (query terms and their weights, as `Bm25Index.searchWeighted`), or over its tools carrying one of `tags` (case-insensitive) when given. */
  search(weights: ReadonlyMap<string, number>, limit: number, tags?: readonly string[]): [string, number][] {
    if (!tags?.length) return this.bm25.searchWeighted(weights, limit);
    const within = new Uint8Array(this.bm25.size);
    for (const tag of lowercased(tags)) for (const index of this.tagged.get(tag) ?? []) within[index] = 1;
    return this.bm25.searchWeighted(weights, limit, within);
  }

  /** The names of the tools carrying one of `tags` (case-insensitive): what a tag-filtered search ranks. */
  namesCarrying(tags: readonly string[]): Set<string> {
    const names = new Set<string>();
    for (const tag of lowercased(tags)) for (const index of this.tagged.get(tag) ?? []) if (this.bm25.isLive(index)) names.add(this.bm25.idAt(index));
    return names;
  }

  /**
   * The servers of the tools carrying one of `tags` (case-insensitive) as BM25 documents of those
   * tools' terms only: the server lists of a tag-filtered search, which the store builds in SQL
   * from the filtered tools. With `terms` (a query's), the documents hold only those terms, each
   * server at its full length: the same BM25 scores for that query, from those terms' postings
   * alone instead of one pass over every posting (ranking/bm25-index.ts `termsOf`).
   */
  serversCarrying(tags: readonly string[], terms?: Iterable<string>): ServerIndex & { serverOf: ToolServers } {
    const docs = new Set<number>();
    for (const tag of lowercased(tags)) {
      // A derived index's place of a removed tool may hold a name the lookup no longer knows there.
      for (const at of this.tagged.get(tag) ?? []) if (this.serverAt[at] != null && this.bm25.indexOf(this.bm25.idAt(at)) === at) docs.add(at);
    }
    const held = this.bm25.termsOf(docs, terms);
    const servers = new ServerDocumentsBuilder();
    for (const at of [...docs].sort((a, b) => a - b)) servers.add(this.bm25.idAt(at), this.serverAt[at]!, this.bm25.lengthAt(at), held.get(at)!);
    return { bm25: new Bm25Index(servers.documents()), members: servers.members, serverOf: this.servers.serverOf };
  }

  /**
   * A tool's definition tokens in `shape` as stored (what the store's rows say), or undefined when
   * the catalog has no such tool or its row was not counted yet (an older release's).
   */
  tokensOf(name: string, shape: WireShape): number | undefined {
    const index = this.bm25.indexOf(name);
    return index === undefined ? undefined : (this.tokens[index]![shape] ?? undefined);
  }

  /** Definition tokens of every tool in `shape` (what the catalog's row sums), or undefined when some row was not counted yet. */
  totalTokens(shape: WireShape): number | undefined {
    if (!this.totals.has(shape)) {
      let total: number | undefined = 0;
      this.tokens.forEach((counted, at) => {
        if (this.bm25.isLive(at)) total = counted[shape] === null || total === undefined ? undefined : total + counted[shape];
      });
      this.totals.set(shape, total);
    }
    return this.totals.get(shape);
  }

  /** Stored tags of the named tools (for the tag boost). */
  tagsOf(names: readonly string[]): Map<string, string[]> {
    const tags = new Map<string, string[]>();
    for (const name of names) {
      const index = this.bm25.indexOf(name);
      if (index !== undefined) tags.set(name, this.tags[index]!);
    }
    return tags;
  }
}

/** A tool's tags as the tag filter matches them: lowercased, each once. */
function lowercased(tags: readonly string[]): Set<string> {
  return new Set(tags.map((tag) => tag.toLowerCase()));
}

/**
 * The tag -> documents map after a change (`slotPlan`): the lists of the tags the dropped, moved
 * and added documents carry are written again, every other list is the base's.
 */
async function derivedTagged(
  base: ReadonlyMap<string, Int32Array>,
  baseTags: readonly string[][],
  plan: SlotPlan,
  addedTags: readonly string[][],
): Promise<Map<string, Int32Array>> {
  const more = new Map<string, number[]>();
  for (const [from, to] of plan.moved) for (const tag of lowercased(baseTags[from]!)) pushTo(more, tag, to);
  addedTags.forEach((tags, i) => {
    for (const tag of lowercased(tags)) pushTo(more, tag, plan.addedAt[i]!);
  });
  const touched: string[] = [];
  for (const doc of plan.gone) touched.push(...lowercased(baseTags[doc]!));
  return (await patchLists(base, plan, touched, more, 1)).lists;
}

/** CATALOG_INDEX_MEMORY's default, in MiB. */
export const DEFAULT_CATALOG_INDEX_MEMORY_MB = 512;
/** After a failed load, the same catalog revision is not read again for this long. */
const RETRY_AFTER_MS = 5_000;
/**
 * The most changed names an index is derived through (CatalogIndex.derive); more, and the new
 * revision is read whole. A push's slice is 5,000 tools; deriving through 20,000 names of a
 * 100,000-tool catalog costs about what reading it whole does. A whole-catalog replace logs its
 * names up to the same number.
 */
export const DERIVE_MAX_NAMES = REPLACE_LOGGED_NAMES_MAX;

/**
 * When an overlay's changes since its base pass max(MERGE_MIN_NAMES, MERGE_SHARE of the base), they
 * are merged into a base of its own (`CatalogIndex.derive`, O(catalog)) in the background, once the
 * catalog has had no new revision for MERGE_QUIET_MS (a merge's passes over the postings would hold
 * the thread from the searches that follow a write). Below it a search pays for the changed tools
 * twice at most (their terms' lists, and their servers' documents for the query's terms).
 */
export const MERGE_MIN_NAMES = 1_000;
const MERGE_SHARE = 0.01;
export const MERGE_QUIET_MS = 1_000;

/** Catalog rows `CatalogIndexCache.lastSeen` remembers (a few hundred bytes each). */
export const LAST_SEEN_CATALOGS = 4096;

const seenKey = (tenant: string, name: string): string => `${tenant}\u0000${name}`;

export class CatalogIndexCache {
  /** Keyed by catalog: a newer revision replaces the older one (no search asks for an older one). */
  private readonly entries: LruCache<number, CatalogIndex>;
  private readonly loading = new Map<number, { revision: number; done: Promise<CatalogIndex | undefined> }>();
  private readonly deriving = new Map<number, { revision: number; done: Promise<CatalogIndex | undefined> }>();
  /** Catalog -> the revision that failed to load or did not fit, and when. */
  private readonly skipped = new Map<number, { revision: number; at: number; tooLarge: boolean }>();
  /** Each catalog's row as last read here, by tenant and name (`lastSeen`). */
  private readonly seenRows = new LruCache<string, CatalogSummary>(LAST_SEEN_CATALOGS);
  /** Catalog -> its merge waiting for quiet or running (one at a time). */
  private readonly merging = new Map<number, { timer?: NodeJS.Timeout; done?: Promise<void> }>();
  private readonly merge: { minNames: number; quietMs: number };

  /**
   * `db` reads the rows: a connection without the request path's deadline (the read takes seconds
   * at 100,000 tools, in the background). `merge`: when an overlay's changes are merged (tests
   * lower them).
   */
  constructor(
    private readonly db: Executor,
    private readonly memoryBytes = DEFAULT_CATALOG_INDEX_MEMORY_MB * 2 ** 20,
    merge: { minNames?: number; quietMs?: number } = {},
  ) {
    this.entries = new LruCache(Number.MAX_SAFE_INTEGER, { max: memoryBytes, weigh: (index) => index.bytes });
    this.merge = { minNames: merge.minNames ?? MERGE_MIN_NAMES, quietMs: merge.quietMs ?? MERGE_QUIET_MS };
  }

  /**
   * The catalog's index when one of this revision or later is in hand. Otherwise it starts reading
   * it (once, however many searches ask) and answers undefined: the caller ranks in SQL meanwhile.
   */
  current(catalog: { id: number; revision: number }): CatalogIndex | undefined {
    const held = this.held(catalog);
    if (!held) void this.load(catalog);
    return held;
  }

  /** The index in hand for this revision of `catalog` or a later one; starts no read. */
  held(catalog: { id: number; revision: number }): CatalogIndex | undefined {
    const kept = this.entries.get(catalog.id);
    return kept && kept.revision >= catalog.revision ? kept : undefined;
  }

  /**
   * The index a search of `catalog` ranks with: the one in hand; else one derived from an older
   * revision's index in hand and the changes logged since (read through `db`, the caller's, with
   * its deadline: one short statement); else undefined, and the whole revision is read in the
   * background while the caller ranks in SQL (the first search after a start of a catalog not read
   * at start, or more than DERIVE_MAX_NAMES changed names).
   */
  async forSearch(catalog: { id: number; revision: number }, db: Executor): Promise<CatalogIndex | undefined> {
    const held = this.held(catalog);
    if (held) return held;
    const kept = this.entries.get(catalog.id);
    const derived = kept && (await this.derive(kept, catalog, db));
    if (derived) return derived;
    void this.load(catalog);
    return undefined;
  }

  /**
   * After a write on this replica: when an older revision's index is held (the catalog is being
   * searched here), the new one is derived now, in the background, so the next search finds it
   * (from `written`, the write's own changes, when they apply to the index held).
   */
  refresh(catalog: { id: number; revision: number }, db: Executor, written?: { from: number; rows: CatalogIndexRow[]; removed: string[] }): void {
    const kept = this.entries.get(catalog.id);
    if (kept && kept.revision < catalog.revision) void this.derive(kept, catalog, db, written?.from === kept.revision ? written : undefined).catch(() => {});
  }

  /**
   * The index of `catalog`'s revision from `base` and the changes since: the writer's own
   * (`written`, laid over once the write has answered; a search meanwhile joins it), else those
   * logged, read back (another replica's write, or one between). Laid over base's own base
   * (`CatalogIndex.overlay`, milliseconds), its merge planned; derived whole at once only when the
   * changes since that base pass DERIVE_MAX_NAMES (a run of writes no merge kept up with).
   */
  private derive(
    base: CatalogIndex,
    catalog: { id: number; revision: number },
    db: Executor,
    written?: { rows: CatalogIndexRow[]; removed: string[] },
  ): Promise<CatalogIndex | undefined> {
    return this.once(this.deriving, catalog, async () => {
      if (written) await new Promise((resolve) => setImmediate(resolve));
      const changes = written
        ? { revision: catalog.revision, rows: written.rows, removed: written.removed }
        : await loadCatalogChanges(db, catalog.id, base.revision, DERIVE_MAX_NAMES);
      if (!changes) return undefined;
      let index = CatalogIndex.overlay(base, changes);
      if (index.deltaNames > DERIVE_MAX_NAMES) index = await CatalogIndex.derive(index.delta!.root, index.deltaChanges()!);
      if (index.bytes > this.memoryBytes) return undefined;
      this.keep(index);
      this.planMerge(index);
      return index;
    });
  }

  /** Merges `index`'s changes into a base of its own once they are many and the catalog is quiet. */
  private planMerge(index: CatalogIndex): void {
    const root = index.delta?.root;
    if (!root || index.deltaNames < Math.max(this.merge.minNames, Math.ceil(MERGE_SHARE * root.size))) return;
    const planned = this.merging.get(index.catalogId);
    if (planned?.done) return; // running: the next write plans the next one
    clearTimeout(planned?.timer);
    const timer = setTimeout(() => {
      const running = { done: this.mergeNow(index.catalogId).finally(() => this.merging.delete(index.catalogId)) };
      this.merging.set(index.catalogId, running);
    }, this.merge.quietMs);
    timer.unref();
    this.merging.set(index.catalogId, { timer });
  }

  /**
   * The overlay in hand merged (`CatalogIndex.derive` of its base through its changes), between
   * time slices; searches meanwhile rank with the overlay. Kept when it is still the catalog's
   * index; when a later revision's overlay over the same base came meanwhile, that one's changes
   * since the merged revision are laid over the merged index instead.
   */
  private async mergeNow(catalogId: number): Promise<void> {
    const index = this.entries.get(catalogId);
    if (!index?.delta) return;
    const merged = await CatalogIndex.derive(index.delta.root, index.deltaChanges()!);
    const now = this.entries.get(catalogId);
    if (now === index) {
      this.hold(merged);
      return;
    }
    const rebased = now && CatalogIndex.rebase(merged, index, now);
    if (rebased && this.entries.get(catalogId) === now) this.hold(rebased);
  }

  /** Resolves when no merge is planned or running (tests). */
  async merged(): Promise<void> {
    for (;;) {
      const [pending] = this.merging.values();
      if (!pending) return;
      if (pending.timer) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      await pending.done;
    }
  }

  /** The index of this revision or later, read now if need be; undefined when it cannot be kept (too large, or the read failed). */
  async get(catalog: { id: number; revision: number }): Promise<CatalogIndex | undefined> {
    return this.current(catalog) ?? (await this.load(catalog));
  }

  /** Notes `catalog` as the latest row of `tenant`'s catalog of its name that this process read. */
  seen(tenant: string, catalog: CatalogSummary): void {
    this.seenRows.set(seenKey(tenant, catalog.name), catalog);
  }

  /** The catalog of this name as last read here, whether or not an index of it is held (MCP's scope while the store does not answer). */
  lastRow(tenant: string, name: string): CatalogSummary | undefined {
    return this.seenRows.get(seenKey(tenant, name));
  }

  /**
   * The catalog of this name as last read here, with the index held for it (of that revision, or
   * an older or later one): what the gateway selector answers from while the store does not answer
   * (search/catalog-search.ts). Undefined when this process has no index of it.
   */
  lastSeen(tenant: string, name: string): { catalog: CatalogSummary; index: CatalogIndex } | undefined {
    const catalog = this.lastRow(tenant, name);
    const index = catalog && this.entries.get(catalog.id);
    return catalog && index ? { catalog, index } : undefined;
  }

  /** Bytes held (estimated). */
  get bytes(): number {
    return this.entries.heldWeight;
  }

  /** The bytes it may hold (CATALOG_INDEX_MEMORY). */
  get budget(): number {
    return this.memoryBytes;
  }

  private load(catalog: { id: number; revision: number }): Promise<CatalogIndex | undefined> {
    const pending = this.loading.get(catalog.id);
    if (pending && pending.revision >= catalog.revision) return pending.done;
    const skipped = this.skipped.get(catalog.id);
    if (skipped && skipped.revision >= catalog.revision && (skipped.tooLarge || Date.now() - skipped.at < RETRY_AFTER_MS)) return Promise.resolve(undefined);
    return this.once(this.loading, catalog, async () => {
      try {
        const loaded = await loadCatalogIndexRows(this.db, catalog.id);
        if (!loaded) return undefined; // deleted meanwhile
        const index = await CatalogIndex.build(catalog.id, loaded.revision, loaded.rows);
        if (index.bytes > this.memoryBytes) {
          this.skipped.set(catalog.id, { revision: index.revision, at: Date.now(), tooLarge: true });
          return undefined;
        }
        this.keep(index);
        this.skipped.delete(catalog.id);
        return index;
      } catch {
        // The search that started the read ranks in SQL, which reports a database failure itself.
        this.skipped.set(catalog.id, { revision: catalog.revision, at: Date.now(), tooLarge: false });
        return undefined;
      }
    });
  }

  /** Keeps `index` unless a later revision of its catalog is held already. */
  private keep(index: CatalogIndex): void {
    const current = this.entries.get(index.catalogId);
    if (!current || current.revision < index.revision) this.hold(index);
  }

  /** Holds `index` as its catalog's; keys' views laid over it later count in CATALOG_INDEX_MEMORY with it. */
  private hold(index: CatalogIndex): void {
    this.entries.set(index.catalogId, index);
    index.onAttach = () => {
      if (this.entries.get(index.catalogId) === index) this.entries.reweigh(index.catalogId);
    };
  }

  /**
   * Runs `work` for the catalog once however many callers ask: a caller asking for this revision or
   * an older one while it runs gets the same promise; it is forgotten when it settles.
   */
  private once(
    flights: Map<number, { revision: number; done: Promise<CatalogIndex | undefined> }>,
    catalog: { id: number; revision: number },
    work: () => Promise<CatalogIndex | undefined>,
  ): Promise<CatalogIndex | undefined> {
    const pending = flights.get(catalog.id);
    if (pending && pending.revision >= catalog.revision) return pending.done;
    const token = { revision: catalog.revision, done: undefined as unknown as Promise<CatalogIndex | undefined> };
    token.done = (async () => {
      await Promise.resolve(); // the token is in `flights` before any of this runs
      try {
        return await work();
      } finally {
        if (flights.get(catalog.id) === token) flights.delete(catalog.id);
      }
    })();
    flights.set(catalog.id, token);
    return token.done;
  }
}

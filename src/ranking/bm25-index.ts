/**
 * BM25 over a fixed corpus with its statistics computed once: the selector's repeated tool lists
 * and stored catalogs (search/catalog-index.ts). N, avgdl and the postings of a corpus never change
 * between its searches; only the query does, so a search costs the postings of the query's terms
 * (plus, under a filter, one pass over the corpus's lengths), not a pass over every document's terms.
 * Scores are the same floating-point operations, in the same order, as `scoreBm25` (the reference
 * the SQL is tested against) over the same corpus, so they are identical to it; Postgres groups the
 * arithmetic differently, so against SQL only near-ties can order differently.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { TimeSlice } from '../lib/time-slice.js';
import { VocabularyIndex, type Vocabulary } from './fuzzy-terms.js';
import { bm25Idf, distinctTerms, DEFAULT_BM25_PARAMS, lengthNorm, type Bm25Document, type Bm25Params } from './bm25.js';

/** A corpus's ids, lengths and postings, gathered one document at a time (stored catalogs' indexes, the selector's request lists). */
export class Bm25Builder {
  ids: string[] = [];
  /**
   * The order of tied documents when it is not their ids' (a request's list: its tools' names, so a
   * tie is cut where the same tools stored in a catalog, whose ids are names, cut theirs).
   */
  keys?: string[];
  lengths: number[] | Float64Array = [];
  /** term -> [document index, tf] pairs; a derived index passes typed lists it can share (Bm25Index.derive). */
  building = new Map<string, number[] | Int32Array>();
  count = 0;
  /** An overlay's parts (`Bm25Index.overlay`): `building` is then its base's postings, shared. */
  overlay?: { dead: Uint8Array; extra: ReadonlyMap<string, Int32Array>; base: Bm25Index };

  /** Adds the next document: its id, its length, and its (term, tf) pairs (each term once); `key` orders its ties. */
  add(id: string, length: number, termFreqs: Iterable<readonly [string, number]>, key?: string): void {
    const index = this.ids.length;
    if (key !== undefined) (this.keys ??= this.ids.slice()).push(key);
    else this.keys?.push(id);
    this.ids.push(id);
    (this.lengths as number[]).push(length);
    for (const [term, tf] of termFreqs) {
      if (tf <= 0) continue;
      let list = this.building.get(term) as number[] | undefined;
      if (!list) this.building.set(term, (list = []));
      list.push(index, tf);
      this.count++;
    }
  }
}

const EMPTY = new Int32Array(0);

/**
 * A corpus's postings made in two passes over its documents' terms, for a stored catalog's index
 * (search/catalog-index.ts): each (term, document) counted first, then written in place into one
 * Int32Array of which every term's list is a view. Growing a list per term and packing it after
 * made a 100,000-tool build's largest garbage (its lists outlived the build's minor GCs, so a
 * major GC collected them, later, among the searches). A derived index's rewritten lists are
 * arrays of their own, and the first build's array lives while any of its views does: at most
 * its postings' bytes more than the cache's estimate.
 */
export class TwoPassPostings {
  /** term -> its entries while counting, then where its next pair goes, then (`lists`) its list. */
  private readonly at = new Map<string, number>();
  private flat = EMPTY;
  private writing = false;
  /** Postings entries over all terms. */
  count = 0;

  /** First pass: `term` occurs in one more document. */
  counted(term: string): void {
    this.at.set(term, (this.at.get(term) ?? 0) + 1);
    this.count++;
  }

  /** Second pass, documents in any order: `doc` holds `term` `tf` times (every counted pair once). */
  put(term: string, doc: number, tf: number): void {
    if (!this.writing) this.startWriting();
    const at = this.at.get(term)!;
    this.flat[at] = doc;
    this.flat[at + 1] = tf;
    this.at.set(term, at + 2);
  }

  private startWriting(): void {
    this.writing = true;
    this.flat = new Int32Array(2 * this.count);
    let start = 0;
    for (const [term, entries] of this.at) {
      this.at.set(term, start);
      start += 2 * entries;
    }
  }

  /** Each term's list, in first-counted order (the map is this builder's own, its values replaced). */
  lists(): Map<string, Int32Array> {
    if (!this.writing) this.startWriting();
    const lists = this.at as unknown as Map<string, number | Int32Array>;
    let start = 0;
    // Each term's list ends where its cursor stopped, and the next one starts there.
    for (const [term, end] of this.at) {
      lists.set(term, this.flat.subarray(start, end));
      start = end;
    }
    return lists as Map<string, Int32Array>;
  }
}

/**
 * A corpus's id -> document index lookup: a map, or the ids a derivation moved over the lookup of
 * the index it derived from. A lookup walks at most LOOKUP_DEPTH links, and the links hold at most
 * a quarter of the corpus's ids; past either the derived index builds one map on first use
 * (100,000 ids: 25-50 ms on a 2-core machine).
 */
interface Lookup {
  map?: Map<string, number>;
  changed?: Map<string, number | undefined>;
  parent?: Lookup;
  depth: number;
  /** Ids held by the links down to the map. */
  entries: number;
}
const LOOKUP_DEPTH = 16;

/**
 * Where a change puts a corpus's documents: an added document given a preferred place (its own
 * old place: a tool whose content was replaced) takes it when the change drops it and it is below
 * the new size; the others take the remaining dropped places (lowest first), then new places at the
 * end; when fewer come than go, the last documents move into the places left below the new size.
 * Every other document keeps its index, so per-document arrays (ids, lengths, a catalog's tags and
 * servers) are copied and patched, not rebuilt, and a document replaced in its own place leaves the
 * lists of the terms it kept as they were (Bm25Index.derive). One plan serves every index of a
 * change (a catalog's tools, tags and servers).
 */
export interface SlotPlan {
  /** The corpus's size before the change. */
  before: number;
  /** The corpus's size after the change. */
  size: number;
  /** The places the change takes out. */
  dropped: ReadonlySet<number>;
  /** Each added document's place. */
  addedAt: readonly number[];
  /** Old place -> new place of the documents that move into places below the new size. */
  moved: ReadonlyMap<number, number>;
  /** Old places whose documents leave them: the dropped and the moved. */
  gone: ReadonlySet<number>;
  /** `values` (one per document of the old corpus) for the new one: `added`'s at their places, moved ones moved. */
  apply<T>(values: readonly T[], added: readonly T[]): T[];
}

export function slotPlan(size: number, dropped: ReadonlySet<number>, addedCount: number, preferred: readonly (number | undefined)[] = []): SlotPlan {
  const newSize = size - dropped.size + addedCount;
  const addedAt = new Array<number>(addedCount);
  const taken = new Set<number>();
  for (let i = 0; i < addedCount; i++) {
    const place = preferred[i];
    if (place === undefined || place >= newSize || !dropped.has(place) || taken.has(place)) continue;
    addedAt[i] = place;
    taken.add(place);
  }
  const holes = [...dropped].filter((place) => !taken.has(place)).sort((a, b) => a - b);
  let h = 0;
  let end = size;
  // Enough holes lie below the new size for every added document without a place (the dropped
  // places below it number the kept documents above it plus the added ones), so none lands past it.
  for (let i = 0; i < addedCount; i++) if (addedAt[i] === undefined) addedAt[i] = h < holes.length ? holes[h++]! : end++;
  const moved = new Map<number, number>();
  let from = size - 1;
  for (; h < holes.length && holes[h]! < newSize; h++) {
    while (dropped.has(from)) from--;
    moved.set(from--, holes[h]!);
  }
  return {
    before: size,
    size: newSize,
    dropped,
    addedAt,
    moved,
    gone: new Set([...dropped, ...moved.keys()]),
    apply<T>(values: readonly T[], added: readonly T[]): T[] {
      const out = values.slice(0, Math.min(values.length, newSize));
      for (let i = 0; i < added.length; i++) out[addedAt[i]!] = added[i]!;
      for (const [old, at] of moved) out[at] = values[old]!;
      return out;
    },
  };
}

/**
 * Lists of entries keyed by term or tag (`stride` numbers an entry, a document's place first)
 * after a change: each list of a key in `more` or `touched` loses the entries at places the plan
 * empties and gains `more`'s; every other list is `lists`' own, shared. Returns the lists and how
 * many entries they gained (less those lost). Yields now and then on long lists.
 */
export async function patchLists(
  lists: ReadonlyMap<string, Int32Array>,
  plan: SlotPlan,
  touched: Iterable<string>,
  more: ReadonlyMap<string, readonly number[]>,
  stride: number,
): Promise<{ lists: Map<string, Int32Array>; gained: number }> {
  const isGone = new Uint8Array(plan.before);
  for (const doc of plan.gone) isGone[doc] = 1;
  const patched = new Map(lists);
  let gained = 0;
  let work = 0;
  for (const key of new Set([...more.keys(), ...touched])) {
    if (work > 200_000) {
      work = 0;
      await nextTurn();
    }
    const list = lists.get(key) ?? EMPTY;
    const added = more.get(key) ?? [];
    work += list.length;
    let kept = 0;
    for (let i = 0; i < list.length; i += stride) if (!isGone[list[i]!]) kept++;
    const merged = new Int32Array(stride * kept + added.length);
    let at = 0;
    for (let i = 0; i < list.length; i += stride) {
      if (isGone[list[i]!]) continue;
      for (let k = 0; k < stride; k++) merged[at++] = list[i + k]!;
    }
    merged.set(added, at);
    gained += (merged.length - list.length) / stride;
    if (merged.length > 0) patched.set(key, merged);
    else patched.delete(key);
  }
  return { lists: patched, gained };
}

/** Appends `values` to the list of `key` in `lists` (made when missing). */
export function pushTo(lists: Map<string, number[]>, key: string, ...values: number[]): void {
  let list = lists.get(key);
  if (!list) lists.set(key, (list = []));
  list.push(...values);
}

export class Bm25Index {
  /**
   * The index over `builder`'s documents, its postings packed into typed lists between time slices
   * (a 10,000-tool request list's take 13-25 ms on a 2-core machine; the constructor packs in one piece).
   */
  static async packed(builder: Bm25Builder, slice: TimeSlice, params: Bm25Params = DEFAULT_BM25_PARAMS): Promise<Bm25Index> {
    for (const [term, list] of builder.building) {
      if (slice.due()) await slice.yield();
      if (!(list instanceof Int32Array)) builder.building.set(term, Int32Array.from(list));
    }
    return new Bm25Index(builder, params);
  }

  /** Places of the corpus: its documents, and in an overlay the base's places of the documents it drops. */
  readonly size: number;
  /** Documents of the corpus (N): `size` but for an overlay's dropped places. */
  readonly documents: number;
  private readonly ids: string[];
  /** What orders tied documents: the ids, or the builder's keys. */
  private readonly keys: string[];
  private readonly lengths: Float64Array;
  private readonly avgDocLength: number;
  /** term -> [document index, term frequency] pairs (in corpus order when built; a derived index appends its changes). */
  private readonly postings: Map<string, Int32Array>;
  /** Postings entries over all terms (for memory estimates). */
  readonly postingCount: number;
  /** Each document's length normalisation against the whole corpus, as bm25TermScore computes it. */
  private readonly norms: Float64Array;
  /** Scratch for one search at a time (searches are synchronous): cleared after use, never reallocated. */
  private readonly scores: Float64Array;
  private readonly matched: Uint8Array;
  /** The documents a search touched, in the order it touched them (the first `count` places). */
  private readonly touched: Int32Array;
  /**
   * An overlay's (`Bm25Index.overlay`): the base's places it drops (1), the postings of the
   * documents it adds (after the base's places), and each term's documents as counted once asked.
   */
  private readonly dead?: Uint8Array;
  private readonly extra?: ReadonlyMap<string, Int32Array>;
  private readonly liveDf?: Map<string, number>;
  /** An overlay's base (ids, postings and vocabulary shared with it). */
  private readonly base?: Bm25Index;

  constructor(
    corpus: readonly Bm25Document[] | Bm25Builder,
    private readonly params: Bm25Params = DEFAULT_BM25_PARAMS,
  ) {
    let builder: Bm25Builder;
    if (corpus instanceof Bm25Builder) {
      builder = corpus;
    } else {
      builder = new Bm25Builder();
      for (const doc of corpus) builder.add(doc.id, doc.length, doc.termFreqs);
    }
    this.size = builder.ids.length;
    this.ids = builder.ids;
    this.keys = builder.keys ?? builder.ids;
    this.lengths = builder.lengths instanceof Float64Array ? builder.lengths : Float64Array.from(builder.lengths);
    const { overlay } = builder;
    let total = 0;
    let documents = 0;
    for (let doc = 0; doc < this.size; doc++) {
      if (overlay?.dead[doc]) continue;
      total += this.lengths[doc]!;
      documents++;
    }
    this.documents = documents;
    this.avgDocLength = documents === 0 ? 0 : total / documents;
    if (overlay) {
      this.dead = overlay.dead;
      this.extra = overlay.extra;
      this.base = overlay.base;
      this.liveDf = new Map();
    } else {
      // Term frequencies are counts: typed arrays hold a 100,000-tool catalog's postings in a quarter of the memory.
      for (const [term, list] of builder.building) if (!(list instanceof Int32Array)) builder.building.set(term, Int32Array.from(list));
    }
    this.postings = builder.building as Map<string, Int32Array>;
    builder.building = new Map();
    this.postingCount = builder.count;
    this.norms = new Float64Array(this.size);
    for (let doc = 0; doc < this.size; doc++) this.norms[doc] = lengthNorm(this.lengths[doc]!, this.avgDocLength, params);
    this.scores = new Float64Array(this.size);
    this.matched = new Uint8Array(this.size);
    this.touched = new Int32Array(this.size);
  }

  /**
   * This corpus with the documents at the plan's dropped places taken out and `added` put in at its places: the index that a
   * build over the changed corpus makes (the same statistics and scores; the documents in another
   * order, which no ranking reads, ties going by id). The documents keep their places but for the
   * change (`slotPlan`), so only the lists of the changed documents' terms are written again; every
   * other list, and the id lookup but for the changed ids, is shared with `base` (nothing is written
   * after a build). Cost: one pass over the postings to find the dropped documents' terms, plus the
   * touched lists, not a copy of every list (a one-tool change of a 100,000-tool catalog rewrote
   * all of them when later documents moved down a place).
   */
  static async derive(
    base: Bm25Index,
    plan: SlotPlan,
    added: readonly { id: string; length: number; termFreqs: Iterable<readonly [string, number]> }[],
    goneTerms: ReadonlyMap<number, ReadonlyMap<string, number>> = base.termsOf(plan.gone),
  ): Promise<Bm25Index> {
    if (added.length !== plan.addedAt.length) throw new Error(`a plan for ${plan.addedAt.length} added documents was given ${added.length}`);
    // A catalog's index (ties by id) is derived; a request's list, built with keys, never is.
    if (base.keys !== base.ids) throw new Error('an index whose ties go by keys is not derived');
    if (base.base) throw new Error('an overlay is not derived: its base is, with its changes (merge)');
    // The terms whose lists change: every term of a moved or dropped document, and of an added one,
    // but for a document replaced in its own place, whose terms kept at the same tf keep their
    // entries (a 5,000-tool revision of descriptions rewrites the lists of the words it changed,
    // not of every word those tools hold).
    const addedTerms = added.map((doc) => {
      const terms = new Map<string, number>();
      for (const [term, tf] of doc.termFreqs) if (tf > 0) terms.set(term, tf);
      return terms;
    });
    const touched = new Set<string>();
    const inPlace = new Map<number, ReadonlyMap<string, number>>();
    addedTerms.forEach((terms, i) => {
      const at = plan.addedAt[i]!;
      const before = plan.dropped.has(at) ? goneTerms.get(at) : undefined;
      if (before) inPlace.set(at, terms);
      for (const [term, tf] of terms) if (before?.get(term) !== tf) touched.add(term);
    });
    for (const doc of plan.gone) {
      const after = inPlace.get(doc);
      for (const [term, tf] of goneTerms.get(doc)!) if (after?.get(term) !== tf) touched.add(term);
    }
    // Each touched term's new entries: moved documents' at their new places, then the added ones'.
    const extra = new Map<string, number[]>();
    for (const [from, to] of plan.moved) for (const [term, tf] of goneTerms.get(from)!) pushTo(extra, term, to, tf);
    addedTerms.forEach((terms, i) => {
      for (const [term, tf] of terms) if (touched.has(term)) pushTo(extra, term, plan.addedAt[i]!, tf);
    });

    const builder = new Bm25Builder();
    builder.ids = plan.apply(
      base.ids,
      added.map((doc) => doc.id),
    );
    const lengths = new Float64Array(plan.size);
    lengths.set(base.lengths.subarray(0, Math.min(base.size, plan.size)));
    added.forEach((doc, i) => (lengths[plan.addedAt[i]!] = doc.length));
    for (const [from, to] of plan.moved) lengths[to] = base.lengths[from]!;
    builder.lengths = lengths;
    const { lists, gained } = await patchLists(base.postings, plan, touched, extra, 2);
    builder.building = lists;
    builder.count = base.postingCount + gained;
    const index = new Bm25Index(builder, base.params);
    // The ids whose place changed, over the base's lookup (built now if need be); a long chain is
    // dropped and the lookup built again on first use.
    const parent = base.lookup();
    const entries = parent.entries + plan.dropped.size + plan.moved.size + added.length;
    if (parent.depth < LOOKUP_DEPTH && entries <= plan.size / 4) {
      const changed = new Map<string, number | undefined>();
      for (const doc of plan.dropped) changed.set(base.ids[doc]!, undefined);
      for (const [from, to] of plan.moved) changed.set(base.ids[from]!, to);
      added.forEach((doc, i) => changed.set(doc.id, plan.addedAt[i]!));
      index.positions = { changed, parent, depth: parent.depth + 1, entries };
    }
    return index;
  }

  /**
   * `base` with the documents at `dead` (its places) taken out and `added` put in after its places:
   * the same statistics and scores as a build over that corpus (N, avgdl and each term's df are
   * counted over the live documents; a document's score is the same operations in the same order;
   * ties by id), at the cost of the added documents' postings and a copy of the per-place arrays,
   * not of the postings: they are the base's, shared, and a dropped place is skipped where it is
   * met. What a revision's first search needs within milliseconds of a write; the catalog's index
   * merges the change into a new base (`derive`) in the background.
   */
  static overlay(
    base: Bm25Index,
    dead: ReadonlySet<number>,
    added: readonly { id: string; length: number; eachTerm: (visit: (term: string, tf: number) => void) => void }[],
  ): Bm25Index {
    if (base.keys !== base.ids) throw new Error('an index whose ties go by keys has no overlay');
    if (base.base) throw new Error('an overlay is made over a base, not over another overlay');
    const places = base.size + added.length;
    const deadAt = new Uint8Array(places);
    for (const doc of dead) deadAt[doc] = 1;
    const builder = new Bm25Builder();
    builder.ids = base.ids.concat(added.map((doc) => doc.id));
    const lengths = new Float64Array(places);
    lengths.set(base.lengths);
    // Counted, then written in place (TwoPassPostings): no list grown per term.
    const extra = new TwoPassPostings();
    const count = (term: string, tf: number) => tf > 0 && extra.counted(term);
    added.forEach((doc, i) => {
      lengths[base.size + i] = doc.length;
      doc.eachTerm(count);
    });
    let place = 0;
    const put = (term: string, tf: number) => tf > 0 && extra.put(term, place, tf);
    added.forEach((doc, i) => {
      place = base.size + i;
      doc.eachTerm(put);
    });
    builder.lengths = lengths;
    builder.building = base.postings as Map<string, Int32Array>;
    builder.count = base.postingCount + extra.count;
    builder.overlay = { dead: deadAt, extra: extra.lists(), base };
    const index = new Bm25Index(builder, base.params);
    const changed = new Map<string, number | undefined>();
    for (const doc of dead) changed.set(base.ids[doc]!, undefined);
    added.forEach((doc, i) => changed.set(doc.id, base.size + i));
    index.positions = { changed, parent: base.lookup(), depth: 1, entries: changed.size };
    return index;
  }

  /** Whether the document at `index` is in the corpus (an overlay's dropped places are not). */
  isLive(index: number): boolean {
    return index >= 0 && index < this.size && !this.dead?.[index];
  }

  /** `term`'s lists: the base's (an overlay's dropped places in it are skipped by the reader) and an overlay's added documents'. */
  private listsOf(term: string): (Int32Array | undefined)[] {
    return this.extra ? [this.postings.get(term), this.extra.get(term)] : [this.postings.get(term)];
  }

  private positions?: Lookup;
  private lookup(): Lookup {
    if (this.positions) return this.positions;
    const map = new Map<string, number>();
    for (let doc = 0; doc < this.size; doc++) map.set(this.ids[doc]!, doc);
    return (this.positions = { map, depth: 0, entries: 0 });
  }

  /** The index of the document `id` (a map built on first use, or a derived index's changes over its base's). */
  indexOf(id: string): number | undefined {
    for (let at = this.lookup(); ; at = at.parent!) {
      if (at.map) return at.map.get(id);
      if (at.changed!.has(id)) return at.changed!.get(id);
    }
  }

  /** The id of the document at `index`. */
  idAt(index: number): string {
    return this.ids[index]!;
  }

  /** The length of the document at `index`. */
  lengthAt(index: number): number {
    return this.lengths[index]!;
  }

  /**
   * The (term, tf) pairs of the documents at `docs`: one pass over every posting, or with `only`,
   * over those terms' postings alone (the pairs of those terms).
   */
  termsOf(docs: ReadonlySet<number>, only?: Iterable<string>): Map<number, Map<string, number>> {
    const terms = new Map<number, Map<string, number>>();
    if (docs.size === 0) return terms;
    const wanted = new Uint8Array(this.size);
    for (const doc of docs) {
      wanted[doc] = 1;
      terms.set(doc, new Map());
    }
    const each = (term: string, list: Int32Array | undefined) => {
      if (!list) return;
      for (let i = 0; i < list.length; i += 2) if (wanted[list[i]!]) terms.get(list[i]!)!.set(term, list[i + 1]!);
    };
    if (only) {
      for (const term of new Set(only)) for (const list of this.listsOf(term)) each(term, list);
    } else {
      for (const [term, list] of this.postings) each(term, list);
      for (const [term, list] of this.extra ?? []) each(term, list);
    }
    return terms;
  }

  /** Whether any document of the corpus holds `term`. */
  has(term: string): boolean {
    return this.df(term) > 0;
  }

  /** Whether a document `keep` accepts (by its index) holds `term`: its postings read until one does. */
  hasIn(term: string, keep: (index: number) => boolean): boolean {
    for (const list of this.listsOf(term)) {
      if (!list) continue;
      for (let i = 0; i < list.length; i += 2) if (!this.dead?.[list[i]!] && keep(list[i]!)) return true;
    }
    return false;
  }

  /** Documents holding `term` (the Vocabulary of ranking/fuzzy-terms.ts). */
  df(term: string): number {
    const base = (this.postings.get(term)?.length ?? 0) / 2;
    if (!this.dead) return base;
    let df = this.liveDf!.get(term);
    if (df === undefined) {
      df = (this.extra!.get(term)?.length ?? 0) / 2;
      const list = this.postings.get(term);
      if (list) for (let i = 0; i < list.length; i += 2) df += 1 - this.dead[list[i]!]!;
      this.liveDf!.set(term, df);
    }
    return df;
  }

  private words?: Vocabulary;
  /**
   * The corpus's words for typo matching, bucketed on first use (a search without an unknown word
   * never pays for it). An overlay's: its base's buckets (shared) and its added words', less the
   * words only its dropped documents held.
   */
  vocabulary(): Vocabulary {
    if (this.words) return this.words;
    if (!this.base) return (this.words = new VocabularyIndex(this.postings.keys(), (term) => this.df(term)));
    const base = this.base.vocabulary();
    const added = new VocabularyIndex(
      [...this.extra!.keys()].filter((term) => !this.postings.has(term)),
      (term) => this.df(term),
    );
    return (this.words = {
      df: (term) => this.df(term),
      near: (term) => [...[...base.near(term)].filter((word) => this.df(word) > 0), ...added.near(term)],
    });
  }

  /** Distinct terms of the corpus (an overlay's: its base's and its added documents', an estimate). */
  get termCount(): number {
    return this.postings.size + (this.extra?.size ?? 0);
  }

  /** The documents holding a query term, best first, ties by key (the id unless built with keys), at most `limit`. */
  search(queryTerms: readonly string[], limit = Number.POSITIVE_INFINITY): [string, number][] {
    return this.searchWeighted(new Map(distinctTerms(queryTerms).map((term) => [term, 1])), limit);
  }

  /**
   * `search` with each term's contribution multiplied by its weight, like the SQL's `weights`
   * (added terms, such as feedback or expansion terms, can count less than the query's own).
   * Weight 1 multiplies exactly, so `search` keeps `scoreBm25`'s scores to the last bit.
   *
   * With `within` (1 for each document to keep), the corpus is the kept documents alone: N, avgdl
   * and df are theirs, as `scoreBm25` over that sub-corpus (the SQL's tag filter comes first too).
   */
  searchWeighted(weights: ReadonlyMap<string, number>, limit = Number.POSITIVE_INFINITY, within?: Uint8Array): [string, number][] {
    let n = this.documents;
    let avgDocLength = this.avgDocLength;
    const dead = this.dead;
    if (within) {
      n = 0;
      let total = 0;
      for (let doc = 0; doc < this.size; doc++) {
        if (!within[doc] || dead?.[doc]) continue;
        n++;
        total += this.lengths[doc]!;
      }
      avgDocLength = n === 0 ? 0 : total / n;
    }
    // Scratch arrays, not a list grown per search: a common term of a 100,000-tool catalog touches
    // tens of thousands of documents, and the garbage of a growing list (~1 MB a search) was
    // collected in the timed searches' minor GCs.
    const { scores, matched, touched } = this;
    let count = 0;
    const saturation = this.params.k1 + 1;
    for (const [term, weight] of weights) {
      const lists = this.listsOf(term);
      let df = 0;
      if (within) {
        for (const list of lists) if (list) for (let i = 0; i < list.length; i += 2) df += within[list[i]!]! & (dead ? 1 - dead[list[i]!]! : 1);
      } else {
        df = this.df(term);
      }
      if (df === 0) continue;
      const idf = bm25Idf(n, df);
      for (const list of lists) {
        if (!list) continue;
        for (let i = 0; i < list.length; i += 2) {
          const doc = list[i]!;
          if ((within && !within[doc]) || dead?.[doc]) continue;
          const tf = list[i + 1]!;
          // bm25TermScore's operations in its order, with the length normalisation of the whole
          // corpus computed once per document (under a filter, against the kept documents' avgdl).
          const norm = within ? lengthNorm(this.lengths[doc]!, avgDocLength, this.params) : this.norms[doc]!;
          scores[doc] = scores[doc]! + weight * ((idf * tf * saturation) / (tf + norm));
          if (!matched[doc]) {
            matched[doc] = 1;
            touched[count++] = doc;
          }
        }
      }
    }
    try {
      return this.best(touched.subarray(0, count), scores, limit);
    } finally {
      for (let i = 0; i < count; i++) {
        scores[touched[i]!] = 0;
        matched[touched[i]!] = 0;
      }
    }
  }

  /** The `limit` best of the touched documents, best first, ties by key: sorted outright when few, else through a bounded heap. */
  private best(touched: Int32Array, scores: Float64Array, limit: number): [string, number][] {
    const { ids, keys } = this;
    const ranked = (docs: ArrayLike<number>): [string, number][] =>
      Array.from(docs)
        .sort((a, b) => scores[b]! - scores[a]! || (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0))
        .map((doc): [string, number] => [ids[doc]!, scores[doc]!]);
    if (touched.length <= limit || touched.length <= 256) {
      const all = ranked(touched);
      return all.length > limit ? all.slice(0, limit) : all;
    }
    // A min-heap of the best `limit` so far, its worst on top; a common term in a large catalog
    // touches tens of thousands of documents, and sorting them all cost more than the scoring.
    // Swaps go through a variable: a destructuring swap iterated (and allocated) at every step.
    const heap = new Int32Array(limit);
    let size = 0;
    const worse = (a: number, b: number) => scores[a]! < scores[b]! || (scores[a] === scores[b] && keys[a]! > keys[b]!);
    for (let i = 0; i < touched.length; i++) {
      const doc = touched[i]!;
      let at: number;
      if (size < limit) {
        at = size++;
        while (at > 0) {
          const parent = (at - 1) >> 1;
          if (!worse(doc, heap[parent]!)) break;
          heap[at] = heap[parent]!;
          at = parent;
        }
      } else if (worse(heap[0]!, doc)) {
        at = 0;
        for (;;) {
          const left = 2 * at + 1;
          const right = left + 1;
          let worst = left < size && worse(heap[left]!, doc) ? left : at;
          if (right < size && worse(heap[right]!, worst === at ? doc : heap[worst]!)) worst = right;
          if (worst === at) break;
          heap[at] = heap[worst]!;
          at = worst;
        }
      } else {
        continue;
      }
      heap[at] = doc;
    }
    return ranked(heap.subarray(0, size));
  }

  /** The IDF of a term over this corpus (0 documents holding it: the largest). */
  idf(term: string): number {
    return bm25Idf(this.documents, this.df(term));
  }
}

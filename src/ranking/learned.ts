/**
 * The learned list (issue 72): the tools agents used after past queries like this one. Pure maths,
 * no I/O: the events come in, a ranked list and each tool's evidence come out.
 *
 * Only the tools the other lists rank are judged (they alone can receive a vote): for each, the
 * past queries it was used after. A past query is "like" this one by its words (cosine of
 * idf-weighted word sets, idf over the past queries) or by its embedding (cosine, counted above
 * LEARNED_SEMANTIC_FLOOR), whichever is closer. Each event adds similarity^LEARNED_SIMILARITY_POWER x strength x decay to its tool; one
 * caller's sum for a tool saturates at LEARNED_CALLER_CAP, so a caller flooding events counts as
 * a few honest ones. The fusion then adds the list's votes only to tools another list already
 * ranks (addLearnedVotes): events alone never bring in a tool that neither the words nor the
 * meaning of the query support, and a tool's vote grows with its evidence up to LEARNED_EVIDENCE_FULL.
 *
 * Where the catalog's words are in hand (its in-process index), a loose match's vote is held to the
 * words that tied the past query to its tool and to this query's words neither it nor another past
 * request for the tool holds (anchorPower, gainedPower, gainedPooled), and tools alike in the words
 * in play are twins that take the places their group reached (twinSimilarity, twinSwap,
 * twinLocal): a catalog holding one function twice learns both, unless agents shown both chose
 * one (an event's passedOver). Without them only near-repeats count (LEARNED_STRICT_SIMILARITY).
 */
import { byScoreThenId, distinctTerms } from './bm25.js';
import { queryTerms } from './search-text.js';
import { BM25_PEAK_REFERENCE, RRF_K } from './rrf.js';

/** A tool's learned vote, relative to BM25's (1): chosen by the replay (docs/ranking.md, "Learning from use"). */
export const LEARNED_WEIGHT = 4;
/** Evidence at which a tool's vote is whole: two uses after the very same query. Fewer give a share. */
export const LEARNED_EVIDENCE_FULL = 2;
/** One caller's evidence for one tool counts up to this, however many events it sends. */
export const LEARNED_CALLER_CAP = 2;
/**
 * Of one caller's events for a tool, its this many closest count: a caller sending many events after
 * queries loosely like this one counts as a few uses, not as their sum (the replay's flooding caller
 * put an unearned tool in a top 3 through its sum; docs/ranking.md, "Learning's bounds, measured again").
 */
export const LEARNED_CALLER_BEST = 4;
/**
 * Twins by their words share at least this many of the words in play: two tools holding one or two
 * of them and nothing else are not alike (a chart tool and a directory lister over "list").
 * Chosen by the replay (docs/ranking.md, "Learning's bounds, measured again").
 */
export const LEARNED_TWIN_MIN_SHARED = 3;
/** Embedding cosine at or under which past queries are unlike (the default model's unrelated sentences sit near 0.2-0.4). */
export const LEARNED_SEMANTIC_FLOOR = 0.5;
/** Similarities are raised to this power: near-repeats count far more than loose matches. */
export const LEARNED_SIMILARITY_POWER = 2;
/**
 * Similarities under this count nothing: loose matches count (similarity^2: a loose match counts
 * little alone, many of them for one tool add up), held to the words that tied them to their tool
 * and to this query's other words (anchorPower 2, gainedPower 1, gainedPooled; where the catalog's
 * words are not in hand, LEARNED_STRICT_SIMILARITY instead). Chosen by the replay
 * (docs/ranking.md, "Learning from use", sixth attempt).
 */
export const LEARNED_MIN_SIMILARITY = 0.1;
/**
 * Where the catalog's words are not in hand (a store-path ranking: nothing holds a loose match to
 * the words that tied it to its tool, nor tells twins), past queries count from this similarity
 * only: near-repeats.
 */
export const LEARNED_STRICT_SIMILARITY = 0.85;
/**
 * The events held per tool, read per search: its evidence, and the search's cost, stay bounded.
 * When a tool's window is full, a new event pushes out the oldest of the caller holding the most of
 * it (LearnedIndex.add): one caller alone keeps its newest 32, and a caller flooding a tool's events
 * cannot push the other callers' out of its window.
 */
export const LEARNED_EVENTS_PER_TOOL = 32;
/** How much a tool's evidence is scaled by its share of all the candidates' (LearnedParams.concentration). */
export const LEARNED_CONCENTRATION = 0;
/** LearnedParams.peakExponent, and the most the scale may reach when BM25's head is flat. */
export const LEARNED_PEAK_EXPONENT = 0;
export const LEARNED_PEAK_SCALE_MAX = 2;
/** How many tools the learned list hands the fusion. */
export const LEARNED_DEPTH = 50;

export interface LearnedEvent {
  tool: string;
  caller: string;
  strength: number;
  /** Seconds since the epoch. */
  at: number;
  /**
   * The tools shown with it and not used, when the caller told: for queries like this one they are
   * no twins of the tool used (the agent told them apart), so learning may put it above them.
   */
  passedOver?: readonly string[];
}

interface PastQuery {
  text: string;
  terms: readonly string[];
  /** Its embedding, of unit length, in bytes (`quantized`): a quarter of the floats' memory. */
  vector: QuantizedVector | null;
  /** Its requests' words (requestTerms), read when segmentMin first asks. */
  segments?: readonly (readonly string[])[];
}

/**
 * A query's separate requests: its sentences, and clauses a new step opens ("then", "after that",
 * "additionally", "finally"). A long task asks for several tools, one per request; a past task
 * shares one request with this one without being like it as a whole.
 */
export function splitRequests(text: string): string[] {
  return text
    .split(/(?<=[.?!;])\s+|\s*\b(?:and then|then|after that|afterwards|additionally|also|finally|lastly|next|moreover|furthermore)\b[,:]?\s*/i)
    .map((piece) => piece.trim())
    .filter((piece) => piece.length > 0);
}

/** The distinct words of each of a query's requests (splitRequests); none when it makes only one. */
export function requestTerms(text: string): string[][] {
  const requests = splitRequests(text)
    .map((request) => distinctTerms(queryTerms(request)))
    .filter((terms) => terms.length > 0);
  return requests.length > 1 ? requests : [];
}

export interface LearnedParams {
  /** The list's vote relative to BM25's (LEARNED_WEIGHT), and the evidence at which it is whole. */
  weight: number;
  evidenceFull: number;
  halfLifeSeconds: number;
  semanticFloor: number;
  similarityPower: number;
  minSimilarity: number;
  callerCap: number;
  /**
   * Of one caller's events for a tool, only its this many closest count (0: all): a caller sending
   * many events after queries loosely like this one counts as a few uses, not as their sum.
   */
  callerBest: number;
  /** Twins by their words must share at least this many of the words read (0: any likeness counts). */
  twinMinShared: number;
  /**
   * How much a tool's evidence is scaled by its share of all the candidates' evidence (0: not at
   * all, 1: in proportion): past queries like this one that led to many different tools say little.
   */
  concentration: number;
  /**
   * How much BM25's confidence in its own head holds the learned vote back: the vote is scaled by
   * (BM25_PEAK_REFERENCE / BM25's peak) ^ this, at most LEARNED_PEAK_SCALE_MAX (0: not at all). A
   * query BM25 answers with a head that stands out needs no help, and past queries like it in
   * words may have wanted a sibling tool.
   */
  peakExponent: number;
  /**
   * How much a past query's vote for a tool is held to the words that tied it to that tool: the
   * vote is scaled by the idf share of the past query's words the tool holds that this query holds
   * too, raised to this (0: not at all). A sibling's request in nearly the same words differs in
   * the words that named the sibling.
   */
  anchorPower: number;
  /**
   * How much this query's own words that the tool lacks, and the past query lacked, hold the vote
   * back: scaled by (1 - their share of this query's words, by the catalog's idf) ^ this (0: not at
   * all). A word no tool holds (a number, a name) weighs nothing.
   */
  gainedPower: number;
  /**
   * Tools whose own definitions are this alike (ToolLikeness, 0 to 1) are twins: an event for one
   * counts for each, once, and twins' equal evidence shares its votes (0: no twins). A catalog
   * holding the same function twice (`gcd` and `math.gcd`) then learns both together, and a past
   * query that led to one never puts it above the other for a request labelled with the other.
   * Tools of one server are never twins (the source's ToolLikeness says 0).
   */
  twinSimilarity: number;
  /**
   * 1: twins' likeness by words reads only the words in play (this query's and the counted past
   * queries'), from those words' postings: its cost is a search's, not a pass over the catalog. 0:
   * all their words.
   */
  twinLocal: number;
  /** The same by the cosine of the tools' stored embeddings (0: not by embedding). */
  twinCosine: number;
  /**
   * 1: twins do not share events; instead, after the votes, a group of twins takes the places its
   * members reached in the order the other lists gave them (learning lifts the group's places, the
   * words and meaning of the query decide who fills them). 0: twins share events (above).
   */
  twinSwap: number;
  /**
   * 1: of a query of several requests (splitRequests), gainedPower judges only the request that
   * holds most of the tool's words (the others ask for other tools); 0: the whole query.
   */
  gainedLocal: number;
  /**
   * A past query of several requests (splitRequests) is also like this one by its closest request:
   * the share of that request's words (by the catalog's idf: a value no tool holds weighs nothing)
   * that this query holds. Counted when it reaches this (0: requests are not read).
   */
  segmentMin: number;
  /**
   * 1: gainedPower reads this query's words that neither the tool nor any of its counted past
   * queries holds (a detail some past request for the tool carried is no sign of another intent);
   * 0: those the one past query judged lacks.
   */
  gainedPooled: number;
}

/**
 * Of `words`, those each of `tools` holds, and each word's weight in the catalog (its idf; 0: no
 * tool holds it): the evidence the anchor reads (LearnedParams.anchorPower).
 */
export type ToolWords = (
  tools: readonly string[],
  words: readonly string[],
) => { held: ReadonlyMap<string, ReadonlySet<string>>; weight: ReadonlyMap<string, number> };

/**
 * How alike two of `tools`' own definitions are, by their words (0 to 1: twinSimilarity) and by
 * their embeddings (cosine, 0 when either is not in hand: twinCosine); read once per search.
 */
export type ToolLikeness = (tools: readonly string[], words?: readonly string[]) => (a: string, b: string) => { words: number; meaning: number };

export const DEFAULT_LEARNED_PARAMS: LearnedParams = {
  weight: LEARNED_WEIGHT,
  evidenceFull: LEARNED_EVIDENCE_FULL,
  halfLifeSeconds: 30 * 86_400,
  semanticFloor: LEARNED_SEMANTIC_FLOOR,
  similarityPower: LEARNED_SIMILARITY_POWER,
  minSimilarity: LEARNED_MIN_SIMILARITY,
  callerCap: LEARNED_CALLER_CAP,
  callerBest: LEARNED_CALLER_BEST,
  twinMinShared: LEARNED_TWIN_MIN_SHARED,
  concentration: LEARNED_CONCENTRATION,
  peakExponent: LEARNED_PEAK_EXPONENT,
  anchorPower: 2,
  gainedPower: 1,
  twinSimilarity: 0.55,
  twinCosine: 0,
  twinSwap: 1,
  twinLocal: 1,
  segmentMin: 0,
  gainedLocal: 0,
  gainedPooled: 1,
};

/** The learned list for one query: tools by evidence, and how many events stand behind each. */
export interface LearnedList {
  ranked: [string, number][];
  events: Map<string, number>;
  /** How the fusion weighs it (the params it was read with). */
  weight: number;
  evidenceFull: number;
  peakExponent: number;
  /** Tools of equal evidence share their places' votes (twins: twinSimilarity). */
  tiesShare: boolean;
  /** With twinSwap: groups of twin candidates, each holding a tool with evidence. */
  twinGroups?: string[][];
}

const unit = (vector: ArrayLike<number>): Float32Array => {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  const out = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! * scale;
  return out;
};

/** A unit vector in signed bytes: `values[i] x scale` is its component (the largest maps to 127). */
export interface QuantizedVector {
  values: Int8Array;
  scale: number;
}

/**
 * A past query's vector as held: unit length, each component rounded to 1/127 of the largest. Its
 * cosine with a new query's float vector moves by at most 0.0011 (median 0.0002) over 500 random
 * 512-d pairs (learned.test.ts asks < 0.004); each past query holds 1.5 KB less.
 */
export function quantized(vector: ArrayLike<number>): QuantizedVector {
  const floats = unit(vector);
  let largest = 0;
  for (let i = 0; i < floats.length; i++) largest = Math.max(largest, Math.abs(floats[i]!));
  const values = new Int8Array(floats.length);
  if (largest === 0) return { values, scale: 0 };
  const step = 127 / largest;
  for (let i = 0; i < floats.length; i++) values[i] = Math.round(floats[i]! * step);
  return { values, scale: largest / 127 };
}

/** The dot product of a float vector and a held one (their cosine when both are unit vectors). */
export const dot = (a: Float32Array, b: QuantizedVector): number => {
  const values = b.values;
  if (a.length !== values.length) return 0;
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * values[i]!;
  return sum * b.scale;
};

/** The cosine of two vectors (0 when either is missing). */
export function cosine(a: Float32Array | undefined, b: Float32Array | undefined): number {
  if (!a || !b || a.length !== b.length) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return normA > 0 && normB > 0 ? dot / Math.sqrt(normA * normB) : 0;
}

/**
 * Where in a tool's full window (oldest first) the event to push out is: the oldest of the caller
 * holding the most of it (ties: the caller whose oldest event is older).
 */
function largestShareOldest(events: readonly { event: LearnedEvent }[]): number {
  const held = new Map<string, { count: number; first: number }>();
  events.forEach(({ event }, at) => {
    const caller = held.get(event.caller);
    if (caller) caller.count++;
    else held.set(event.caller, { count: 1, first: at });
  });
  let out = { count: 0, first: 0 };
  for (const caller of held.values()) if (caller.count > out.count || (caller.count === out.count && caller.first < out.first)) out = caller;
  return out.first;
}

/**
 * What the index holds, estimated as it grows (`LearnedIndex.bytes`, for LEARNED_MEMORY): a past
 * query's objects, its text and words, its vector; an event's objects and the names it passed over.
 * Fitted to bench:learned's measure (heap and array buffers after a full GC).
 */
const PAST_QUERY_BYTES = 220;
const WORD_BYTES = 48;
const VECTOR_BYTES = 96;
const EVENT_BYTES = 100;
const PASSED_OVER_BYTES = 20;

const eventBytes = (event: LearnedEvent) => EVENT_BYTES + PASSED_OVER_BYTES * (event.passedOver?.length ?? 0);
const pastQueryBytes = (past: PastQuery) =>
  PAST_QUERY_BYTES +
  past.text.length +
  (past.vector ? VECTOR_BYTES + past.vector.values.length : 0) +
  past.terms.reduce((sum, term) => sum + WORD_BYTES + term.length, 0);

/** A catalog's past queries and the tools used after each, grown event by event. */
export class LearnedIndex {
  private readonly queries: PastQuery[] = [];
  private readonly byText = new Map<string, number>();
  /** How many past queries hold each word (the idf). */
  private readonly df = new Map<string, number>();
  /** Each tool's events, oldest first, with the past query they followed. */
  private readonly byTool = new Map<string, { query: number; event: LearnedEvent }[]>();
  private readonly names = new Map<string, string>();
  /** Each past query's idf norm, as of `normsAt` past queries (recomputed when their number grew by a tenth). */
  private norms: number[] = [];
  private normsAt = 0;
  eventCount = 0;
  /** The memory it holds, estimated (see PAST_QUERY_BYTES). */
  bytes = 0;

  /** Adds one event; `terms` are the query's distinct words, `vector` its embedding when known. */
  add(text: string, terms: readonly string[], vector: ArrayLike<number> | null, event: LearnedEvent): void {
    let id = this.byText.get(text);
    if (id === undefined) id = this.addQuery({ text, terms: [...new Set(terms)], vector: vector ? quantized(vector) : null });
    const past = this.queries[id]!;
    if (!past.vector && vector) {
      past.vector = quantized(vector);
      this.bytes += VECTOR_BYTES + vector.length;
    }
    this.addEvent(id, event);
  }

  /** A past query not held yet (its words distinct, its vector quantized); its id. */
  private addQuery(past: PastQuery): number {
    const id = this.queries.length;
    this.byText.set(past.text, id);
    this.queries.push(past);
    this.bytes += pastQueryBytes(past);
    for (const term of past.terms) this.df.set(term, (this.df.get(term) ?? 0) + 1);
    if (this.queries.length > this.normsAt * 1.1 + 10) this.recomputeNorms();
    else this.norms[id] = this.norm(past.terms);
    return id;
  }

  /**
   * A new index of the newest events that fit in `maxBytes` (by the same estimate), with only the
   * past queries they follow: what LEARNED_MEMORY keeps of a catalog whose index alone outgrew it.
   * Past queries whose events every tool's window pushed out go too. Each tool's events keep their
   * order, so its window and what a search counts of it are as they were for the events kept.
   */
  keepNewest(maxBytes: number): LearnedIndex {
    const held = [...this.byTool.values()].flat();
    // Newest first by time; ties keep the windows' order (the sort is stable).
    const newestFirst = held.map((entry, at) => ({ entry, at })).sort((a, b) => b.entry.event.at - a.entry.event.at || b.at - a.at);
    const kept: typeof held = [];
    const counted = new Set<number>();
    let bytes = 0;
    for (const { entry } of newestFirst) {
      const more = eventBytes(entry.event) + (counted.has(entry.query) ? 0 : pastQueryBytes(this.queries[entry.query]!));
      if (bytes + more > maxBytes) break;
      bytes += more;
      counted.add(entry.query);
      kept.push(entry);
    }
    const index = new LearnedIndex();
    const ids = new Map<number, number>();
    for (const entry of kept.reverse()) {
      let id = ids.get(entry.query);
      if (id === undefined) ids.set(entry.query, (id = index.addQuery(this.queries[entry.query]!)));
      index.addEvent(id, entry.event);
    }
    return index;
  }

  /** Holds one event of past query `id` in its tool's window (a full window pushes one out). */
  private addEvent(id: number, event: LearnedEvent): void {
    // Names passed over are held once each however many events name them.
    if (event.passedOver) event = { ...event, passedOver: event.passedOver.map((name) => this.names.get(name) ?? (this.names.set(name, name), name)) };
    const events = this.byTool.get(event.tool);
    if (!events) this.byTool.set(event.tool, [{ query: id, event }]);
    else {
      if (events.length >= LEARNED_EVENTS_PER_TOOL) this.bytes -= eventBytes(events.splice(largestShareOldest(events), 1)[0]!.event);
      events.push({ query: id, event });
    }
    this.bytes += eventBytes(event);
    this.eventCount++;
  }

  get size(): number {
    return this.queries.length;
  }

  private idf(term: string): number {
    return Math.log(1 + this.queries.length / Math.max(this.df.get(term) ?? 0, 0.5));
  }

  private norm(terms: readonly string[]): number {
    let sum = 0;
    for (const term of terms) sum += this.idf(term) ** 2;
    return Math.sqrt(sum);
  }

  private recomputeNorms(): void {
    this.norms = this.queries.map((past) => this.norm(past.terms));
    this.normsAt = this.queries.length;
  }

  /**
   * The learned list for a query at time `now` (seconds), over `candidates`: the tools the other
   * lists rank (only they can receive a learned vote), each judged by its most recent
   * LEARNED_EVENTS_PER_TOOL events. The cost grows with the candidates' events, not the catalog's.
   */
  list(
    candidates: Iterable<string>,
    terms: readonly string[],
    vector: ArrayLike<number> | undefined,
    now: number,
    params: LearnedParams = DEFAULT_LEARNED_PARAMS,
    toolWords?: ToolWords,
    toolLikeness?: ToolLikeness,
    text?: string,
  ): LearnedList {
    if (!toolWords && (params.anchorPower > 0 || params.gainedPower > 0))
      params = { ...params, minSimilarity: Math.max(params.minSimilarity, LEARNED_STRICT_SIMILARITY) };
    const weights = new Map([...new Set(terms)].map((term) => [term, this.idf(term) ** 2]));
    let queryNorm = 0;
    for (const weight of weights.values()) queryNorm += weight;
    queryNorm = Math.sqrt(queryNorm);
    const query = vector ? unit(vector) : undefined;
    const similarities = new Map<number, number>();
    const similarity = (id: number): number => {
      const known = similarities.get(id);
      if (known !== undefined) return known;
      const past = this.queries[id]!;
      let shared = 0;
      for (const term of past.terms) shared += weights.get(term) ?? 0;
      const norm = this.norms[id]!;
      let close = queryNorm > 0 && norm > 0 ? Math.min(1, shared / (queryNorm * norm)) : 0;
      // By embedding only past queries sharing a word: a pair close enough to count (cosine 0.925 at
      // the shipped floor and minimum) shares one, and the dot products are most of the list's cost.
      if (query && past.vector && shared > 0) close = Math.max(close, (dot(query, past.vector) - params.semanticFloor) / (1 - params.semanticFloor));
      let counted = close >= params.minSimilarity ? close ** params.similarityPower : 0;
      if (segmentWeight && this.segmentsOf(past).length) {
        let best = 0;
        for (const segment of this.segmentsOf(past)) {
          let whole = 0;
          let held = 0;
          for (const term of segment) {
            const weight = segmentWeight(term);
            whole += weight;
            if (weights.has(term)) held += weight;
          }
          if (whole > 0) best = Math.max(best, held / whole);
        }
        if (best >= params.segmentMin) counted = Math.max(counted, best ** params.similarityPower);
      }
      similarities.set(id, counted);
      return counted;
    };
    // The events that count, by tool: each past query like this one, its similarity and the event.
    const counting = new Map<string, { id: number; weight: number; event: LearnedEvent }[]>();
    // The requests' words weigh by the catalog's idf (a value or name no tool holds: nothing). Without
    // the catalog's words (a store-path ranking) requests are not read: the anchor that keeps a past
    // task's vote to the tool of the request shared cannot be read either.
    let segmentWeight: ((term: string) => number) | undefined;
    if (params.segmentMin > 0 && toolWords) {
      const words = new Set<string>();
      for (const tool of new Set(candidates)) {
        const used = this.byTool.get(tool);
        if (!used) continue;
        for (let at = used.length - 1; at >= Math.max(0, used.length - LEARNED_EVENTS_PER_TOOL); at--)
          for (const segment of this.segmentsOf(this.queries[used[at]!.query]!)) for (const term of segment) words.add(term);
      }
      if (words.size) {
        const catalog = toolWords([], [...words]).weight;
        segmentWeight = (term) => (catalog.get(term) ?? 0) ** 2;
      }
    }
    for (const tool of new Set(candidates)) {
      const used = this.byTool.get(tool);
      if (!used) continue;
      const kept: { id: number; weight: number; event: LearnedEvent }[] = [];
      for (let at = used.length - 1; at >= Math.max(0, used.length - LEARNED_EVENTS_PER_TOOL); at--) {
        const { query: id, event } = used[at]!;
        const weight = similarity(id);
        if (weight > 0) kept.push({ id, weight, event });
      }
      if (kept.length) counting.set(tool, kept);
    }
    const anchored = (params.anchorPower > 0 || params.gainedPower > 0) && toolWords && counting.size > 0;
    const requests = anchored && params.gainedLocal > 0 && text !== undefined ? requestTerms(text) : [];
    const anchor = anchored ? this.anchor(counting, terms, toolWords, params, requests) : undefined;
    const twinned = (params.twinSimilarity > 0 || params.twinCosine > 0) && toolLikeness !== undefined && counting.size > 0;
    const swapped = twinned && params.twinSwap > 0;
    // Twins by the words in play (twinLocal): this query's and the counted past queries' (read from their postings only).
    let inPlay: string[] | undefined;
    if (twinned && params.twinLocal > 0) {
      const words = new Set(terms);
      for (const kept of counting.values()) for (const { id } of kept) for (const term of this.queries[id]!.terms) words.add(term);
      inPlay = [...words];
    }
    const likeness: ToolLikeness | undefined = toolLikeness && inPlay ? (tools) => toolLikeness(tools, inPlay) : toolLikeness;
    const pooled = twinned && !swapped ? twinEvents(counting, [...new Set(candidates)], likeness!, params) : counting;
    const ranked: [string, number][] = [];
    const events = new Map<string, number>();
    for (const [tool, kept] of pooled) {
      const byCaller = new Map<string, number[]>();
      let counted = 0;
      for (const { id, weight, event } of kept) {
        const held = anchor ? anchor(event.tool, id) : 1;
        if (held === 0) continue;
        const decay = 0.5 ** (Math.max(0, now - event.at) / params.halfLifeSeconds);
        const uses = byCaller.get(event.caller);
        const use = weight * held * event.strength * decay;
        if (uses) uses.push(use);
        else byCaller.set(event.caller, [use]);
      }
      let score = 0;
      for (const uses of byCaller.values()) {
        // A caller's best `callerBest` uses (0: all of them), at most callerCap: the events behind the vote.
        if (params.callerBest > 0 && uses.length > params.callerBest) uses.sort((a, b) => b - a).length = params.callerBest;
        let sum = 0;
        for (const use of uses) sum += use;
        score += Math.min(sum, params.callerCap);
        counted += uses.length;
      }
      if (score > 0) {
        ranked.push([tool, score]);
        events.set(tool, counted);
      }
    }
    if (params.concentration > 0) {
      const total = ranked.reduce((sum, [, score]) => sum + score, 0);
      for (const entry of ranked) entry[1] *= (entry[1] / total) ** params.concentration;
    }
    ranked.sort(byScoreThenId);
    return {
      ranked: ranked.slice(0, LEARNED_DEPTH),
      events,
      weight: params.weight,
      evidenceFull: params.evidenceFull,
      peakExponent: params.peakExponent,
      tiesShare: twinned && !swapped,
      ...(swapped ? { twinGroups: twinGroups(counting, [...new Set(candidates)], likeness!, params) } : {}),
    };
  }

  private segmentsOf(past: PastQuery): readonly (readonly string[])[] {
    past.segments ??= requestTerms(past.text);
    return past.segments;
  }

  /**
   * How much of a past query's vote for a tool this query keeps (LearnedParams.anchorPower,
   * gainedPower): the share of the words that tied the past query to the tool that this query
   * holds too, and the share of this query's own words that neither the tool nor the past query holds.
   */
  private anchor(
    counting: ReadonlyMap<string, readonly { id: number }[]>,
    terms: readonly string[],
    toolWords: ToolWords,
    params: LearnedParams,
    requests: readonly (readonly string[])[],
  ): (tool: string, id: number) => number {
    const own = new Set(terms);
    const words = new Set(own);
    for (const kept of counting.values()) for (const { id } of kept) for (const term of this.queries[id]!.terms) words.add(term);
    const { held, weight } = toolWords([...counting.keys()], [...words]);
    const weightOf = (term: string) => weight.get(term) ?? 0;
    let ownTotal = 0;
    for (const term of own) ownTotal += weightOf(term);
    const kept = new Map<string, number>();
    const pooledWords = new Map<string, Set<string>>();
    return (tool, id) => {
      const key = `${id} ${tool}`;
      const known = kept.get(key);
      if (known !== undefined) return known;
      const holds = held.get(tool) ?? new Set<string>();
      const past = this.queries[id]!.terms;
      let tied = 0;
      let tiedKept = 0;
      for (const term of past) {
        if (!holds.has(term)) continue;
        tied += weightOf(term);
        if (own.has(term)) tiedKept += weightOf(term);
      }
      let share = tied > 0 ? (tiedKept / tied) ** params.anchorPower : 1;
      if (params.gainedPower > 0 && ownTotal > 0) {
        // Of a query of several requests, only the one that holds most of the tool's words is judged (gainedLocal).
        let judged: Iterable<string> = own;
        let judgedTotal = ownTotal;
        if (params.gainedLocal > 0 && requests.length > 1) {
          let best = -1;
          for (const request of requests) {
            let kept = 0;
            let total = 0;
            for (const term of request) {
              total += weightOf(term);
              if (holds.has(term)) kept += weightOf(term);
            }
            if (kept > best && total > 0) {
              best = kept;
              judged = new Set(request);
              judgedTotal = total;
            }
          }
        }
        let pastWords: ReadonlySet<string>;
        if (params.gainedPooled > 0) {
          let pooled = pooledWords.get(tool);
          if (!pooled) {
            pooled = new Set<string>();
            for (const { id: other } of counting.get(tool) ?? []) for (const term of this.queries[other]!.terms) pooled.add(term);
            pooledWords.set(tool, pooled);
          }
          pastWords = pooled;
        } else pastWords = new Set(past);
        let gained = 0;
        for (const term of judged) if (!pastWords.has(term) && !holds.has(term)) gained += weightOf(term);
        share *= (1 - gained / judgedTotal) ** params.gainedPower;
      }
      kept.set(key, share);
      return share;
    };
  }
}

type Counted = { id: number; weight: number; event: LearnedEvent };

/**
 * Each candidate's events with its twins' (twinSimilarity): every candidate alike enough to a tool
 * with events counts that tool's events too, each event once (one past query's events for two
 * twins, from the same caller at the same time, are one use).
 */
function twinEvents(
  counting: ReadonlyMap<string, readonly Counted[]>,
  candidates: readonly string[],
  toolLikeness: ToolLikeness,
  params: LearnedParams,
): Map<string, Counted[]> {
  const twins = twinsBy(toolLikeness(candidates), params, counting);
  const pooled = new Map<string, Counted[]>();
  for (const tool of candidates) {
    const seen = new Set<string>();
    const kept: Counted[] = [];
    for (const [voted, counted] of counting) {
      if (!twins(tool, voted)) continue;
      for (const entry of counted) {
        const key = `${entry.id} ${entry.event.caller} ${entry.event.at}`;
        if (seen.has(key)) continue;
        seen.add(key);
        kept.push(entry);
      }
    }
    if (kept.length) pooled.set(tool, kept);
  }
  return pooled;
}

/**
 * Whether a candidate is a twin of a tool with events: alike enough (twinSimilarity, twinCosine),
 * and never passed over for it: an agent shown both after a query like this one that used one of
 * them told them apart.
 */
function twinsBy(
  likeness: ReturnType<ToolLikeness>,
  params: LearnedParams,
  counting: ReadonlyMap<string, readonly { event: LearnedEvent }[]>,
): (a: string, b: string) => boolean {
  const passed = new Map<string, Set<string>>();
  for (const [used, counted] of counting)
    for (const { event } of counted) {
      if (!event.passedOver?.length) continue;
      const names = passed.get(used) ?? new Set<string>();
      for (const name of event.passedOver) names.add(name);
      passed.set(used, names);
    }
  const apart = (used: string, other: string) => passed.get(used)?.has(other) ?? false;
  return (a, b) => {
    if (a === b) return true;
    if (apart(a, b) || apart(b, a)) return false;
    const { words, meaning } = likeness(a, b);
    return (params.twinSimilarity > 0 && words >= params.twinSimilarity) || (params.twinCosine > 0 && meaning >= params.twinCosine);
  };
}

/** The candidates' twin groups that hold a tool with events (twinSwap): each such tool with its twins, overlapping groups merged. */
function twinGroups(
  counting: ReadonlyMap<string, readonly Counted[]>,
  candidates: readonly string[],
  toolLikeness: ToolLikeness,
  params: LearnedParams,
): string[][] {
  const twins = twinsBy(toolLikeness(candidates), params, counting);
  const parent = new Map<string, string>();
  const root = (tool: string): string => {
    let at = tool;
    while (parent.get(at) !== at) at = parent.get(at)!;
    return at;
  };
  for (const voted of counting.keys()) {
    if (!parent.has(voted)) parent.set(voted, voted);
    for (const tool of candidates) {
      if (tool === voted || !twins(tool, voted)) continue;
      if (!parent.has(tool)) parent.set(tool, tool);
      parent.set(root(tool), root(voted));
    }
  }
  const groups = new Map<string, string[]>();
  for (const tool of parent.keys()) {
    const key = root(tool);
    const group = groups.get(key);
    if (group) group.push(tool);
    else groups.set(key, [tool]);
  }
  return [...groups.values()].filter((group) => group.length > 1);
}

/** The learned weight for a query whose BM25 head stands out by `peak` (ranking/rrf.ts bm25Peak). */
export function learnedWeight(weight: number, peakExponent: number, peak: number): number {
  return weight * Math.min(LEARNED_PEAK_SCALE_MAX, (BM25_PEAK_REFERENCE / peak) ** peakExponent);
}

/**
 * Adds the learned list's reciprocal-rank votes to the fused list: weight x min(1, evidence /
 * LEARNED_EVIDENCE_FULL) / (k + rank), only to tools `fused` already holds (a retriever supports
 * them); with `tiesShare`, tools of equal evidence share their places' votes. The votes added, by id.
 */
export function addLearnedVotes(
  fused: readonly (readonly [string, number])[],
  learned: readonly (readonly [string, number])[],
  options: { weight: number; evidenceFull: number; k: number; tiesShare?: boolean; twinGroups?: readonly (readonly string[])[] } = {
    weight: LEARNED_WEIGHT,
    evidenceFull: LEARNED_EVIDENCE_FULL,
    k: RRF_K,
  },
): { fused: [string, number][]; votes: Map<string, number> } {
  const scores = new Map(fused.map(([id, score]) => [id, score]));
  const votes = new Map<string, number>();
  const supported = learned.filter(([id]) => scores.has(id));
  for (let start = 0; start < supported.length; ) {
    // A tie (when tiesShare) takes the mean of its places' 1 / (k + rank); otherwise each its own place.
    let end = start + 1;
    if (options.tiesShare) while (end < supported.length && supported[end]![1] === supported[start]![1]) end++;
    let share = 0;
    for (let rank = start + 1; rank <= end; rank++) share += 1 / (options.k + rank);
    const place = end - start === 1 ? options.k + end : (end - start) / share;
    for (let at = start; at < end; at++) {
      const [id, evidence] = supported[at]!;
      const vote = (options.weight * Math.min(1, evidence / options.evidenceFull)) / place;
      votes.set(id, vote);
      scores.set(id, scores.get(id)! + vote);
    }
    start = end;
  }
  // Twins (twinSwap) take the scores their group reached in the order the other lists gave them.
  const before = options.twinGroups?.length ? new Map(fused.map(([id, score]) => [id, score])) : undefined;
  for (const group of options.twinGroups ?? []) {
    const members = group.filter((id) => scores.has(id));
    if (members.length < 2 || !members.some((id) => votes.has(id))) continue;
    const reached = members.map((id) => scores.get(id)!).sort((a, b) => b - a);
    const byBase = members.map((id): [string, number] => [id, before!.get(id)!]).sort(byScoreThenId);
    byBase.forEach(([id, base], at) => {
      scores.set(id, reached[at]!);
      if (reached[at]! !== base) votes.set(id, reached[at]! - base);
      else votes.delete(id);
    });
  }
  return { fused: votes.size === 0 ? fused.map(([id, score]): [string, number] => [id, score]) : [...scores].sort(byScoreThenId), votes };
}

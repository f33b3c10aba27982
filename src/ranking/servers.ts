/**
 * Server votes: a tool also scores through the server it belongs to. Agent tasks often need
 * several tools of one MCP server (search a paper and read it; list a recipe and open it), and a
 * server described by all its tools together matches a task that no single tool's text matches
 * well. Two server lists vote, like two more RRF lists whose every entry stands for all the
 * server's tools: BM25 over each server's tools as one document, and the cosine to the mean of
 * its tools' vectors (an average of many tool texts is a steadier signal than one, from a model
 * as weak as USE Lite).
 *
 * Measured on the dev splits (README, "Measured quality and speed"): livemcpbench hybrid R@10
 * 0.448 -> 0.474, toolbench_stable unchanged or better; a broad region of settings (BM25 weight
 * 0.1-0.2, dense 0.25-0.35, 3-5 servers) passes every target, and the weights below are its middle.
 * Tools without a server (sealtools, most gateway requests) get no vote.
 */
import type { TimeSlice } from '../lib/time-slice.js';
import { byScoreThenId, type Bm25Document } from './bm25.js';
import { Bm25Builder, Bm25Index } from './bm25-index.js';
import { fuseRrf, RRF_K, type Ranked } from './rrf.js';

/** Under the tool-level lists' 1 and 0.4: a server's vote reorders its tools, it does not decide. */
export const SERVER_BM25_WEIGHT = 0.2;
/** The mean vector is the better server signal of the two (the eval preferred it above BM25's). */
export const SERVER_VECTOR_WEIGHT = 0.3;
/** Servers read from each list: a task names one to three (5 also passes; 2 and 10 lose recall). */
export const SERVER_DEPTH = 3;
/**
 * Above this many servers the dense server list scores only candidate servers: those of the dense
 * tool list's tools and of the BM25 server list (a server whose mean is near the query has tools
 * near it). Below it every server is scored, as the SQL does. At 20,000 servers scoring all of
 * them cost ~15 ms a query on a 2-core machine; the candidates cost what the query found.
 */
export const SERVER_SCAN_MAX = 2000;

/**
 * The entries of `map` for `keys` (undefined and absent keys skipped): the servers among
 * SERVER_SCAN_MAX's candidates that have a mean vector; a request's tagged tools' vectors.
 */
export function entriesFor<V>(keys: Iterable<string | undefined>, map: ReadonlyMap<string, V>): Map<string, V> {
  const chosen = new Map<string, V>();
  for (const key of keys) {
    const value = key === undefined ? undefined : map.get(key);
    if (value !== undefined) chosen.set(key!, value);
  }
  return chosen;
}

/** Each server's tools, as corpus ids, in corpus order. */
export type ServerMembers = ReadonlyMap<string, readonly string[]>;

/**
 * The corpus's servers as BM25 documents, gathered one tool at a time (so a caller can yield
 * between tools): a server's terms and length are its tools' added together.
 */
export class ServerDocumentsBuilder {
  /** Each server's tools, as corpus ids, in corpus order. */
  readonly members = new Map<string, string[]>();
  private readonly merged = new Map<string, { termFreqs: Map<string, number>; length: number }>();

  /** Adds a tool's terms to its server's document (a tool without a server has none). */
  add(id: string, server: string | null, length: number, termFreqs: Iterable<readonly [string, number]>): void {
    if (server === null) return;
    let document = this.merged.get(server);
    if (!document) {
      this.merged.set(server, (document = { termFreqs: new Map(), length: 0 }));
      this.members.set(server, []);
    }
    for (const [term, tf] of termFreqs) document.termFreqs.set(term, (document.termFreqs.get(term) ?? 0) + tf);
    document.length += length;
    this.members.get(server)!.push(id);
  }

  /** The servers' documents, in the order their first tools came. */
  documents(): Bm25Document[] {
    return [...this.merged].map(([id, { termFreqs, length }]) => ({ id, termFreqs, length }));
  }

  /** The servers' BM25 index, built between time slices (the documents' order, as `documents`). */
  async index(slice: TimeSlice): Promise<Bm25Index> {
    const builder = new Bm25Builder();
    for (const [id, { termFreqs, length }] of this.merged) {
      if (slice.due()) await slice.yield();
      builder.add(id, length, termFreqs);
    }
    return Bm25Index.packed(builder, slice);
  }
}

/**
 * The servers' postings from their tools' (a server's tf of a term is its tools' added together),
 * as `ServerDocumentsBuilder` makes them from each tool's terms but without a map of terms per
 * server (a 100,000-tool catalog's 20,000 such maps were garbage once its index was built).
 * `serverOf[doc]` is a tool's server number, -1 for none; a list's servers come in its tools' order.
 */
export async function serverPostings(
  tools: ReadonlyMap<string, Int32Array>,
  serverOf: Int32Array,
  servers: number,
  slice: TimeSlice,
): Promise<{ lists: Map<string, Int32Array>; count: number }> {
  // Which term last saw each server (its number in `tools`' order), and the server's tf so far.
  const seenBy = new Int32Array(servers).fill(-1);
  const tfs = new Int32Array(servers);
  const order = new Int32Array(servers);
  const sizes = new Int32Array(tools.size);
  let count = 0;
  let t = 0;
  for (const list of tools.values()) {
    if (slice.due()) await slice.yield();
    for (let i = 0; i < list.length; i += 2) {
      const server = serverOf[list[i]!]!;
      if (server < 0 || seenBy[server] === t) continue;
      seenBy[server] = t;
      sizes[t] = sizes[t]! + 1;
    }
    count += sizes[t++]!;
  }
  seenBy.fill(-1);
  const flat = new Int32Array(2 * count);
  const lists = new Map<string, Int32Array>();
  let at = 0;
  t = 0;
  for (const [term, list] of tools) {
    if (slice.due()) await slice.yield();
    let found = 0;
    for (let i = 0; i < list.length; i += 2) {
      const server = serverOf[list[i]!]!;
      if (server < 0) continue;
      if (seenBy[server] !== t) {
        seenBy[server] = t;
        tfs[server] = 0;
        order[found++] = server;
      }
      tfs[server] = tfs[server]! + list[i + 1]!;
    }
    for (let k = 0; k < found; k++) {
      flat[at + 2 * k] = order[k]!;
      flat[at + 2 * k + 1] = tfs[order[k]!]!;
    }
    if (found > 0) lists.set(term, flat.subarray(at, at + 2 * found));
    at += 2 * found;
    t++;
  }
  return { lists, count };
}

/** The corpus's servers as BM25 documents: every tool's terms of one server, added together. */
export function serverDocuments(tools: Iterable<{ id: string; server: string | null; termFreqs: ReadonlyMap<string, number>; length: number }>): {
  documents: Bm25Document[];
  members: Map<string, string[]>;
} {
  const servers = new ServerDocumentsBuilder();
  for (const tool of tools) servers.add(tool.id, tool.server, tool.length, tool.termFreqs);
  return { documents: servers.documents(), members: servers.members };
}

/** Each server's mean tool vector, unit length (so a dot product is its cosine); tools without a vector are left out. */
export function serverCentroids(members: ServerMembers, vectors: ReadonlyMap<string, ArrayLike<number>>): Map<string, Float32Array> {
  const centroids = new Map<string, Float32Array>();
  const dimension = vectors.values().next().value?.length ?? 0;
  // One buffer for every server's sum, each mean a view of it: an array per server (with a
  // number[] and a copy to normalize it) took twice as long for a tag filter's thousands of servers
  // (bench/probes/servers-carrying.ts). The views keep the whole buffer, sized for every server,
  // including those without a vector.
  const sums = new Float32Array(members.size * dimension);
  let at = 0;
  for (const [server, ids] of members) {
    let found = false;
    for (const id of ids) {
      const vector = vectors.get(id);
      if (!vector) continue;
      found = true;
      const length = Math.min(dimension, vector.length);
      for (let i = 0; i < length; i++) sums[at + i] = sums[at + i]! + vector[i]!;
    }
    if (!found) continue;
    // Unit length as the store's means are (server-stats.ts): the float32 of each double quotient,
    // as Float32Array.from(l2Normalize(sum)) gave.
    let squares = 0;
    for (let i = at; i < at + dimension; i++) squares += sums[i]! * sums[i]!;
    const norm = Math.sqrt(squares);
    if (norm === 0) continue;
    for (let i = at; i < at + dimension; i++) sums[i] = sums[i]! / norm;
    centroids.set(server, sums.subarray(at, at + dimension));
    at += dimension;
  }
  return centroids;
}

export interface ServerLists {
  /** Servers by BM25 over their tools together, best first. */
  bm25: Ranked;
  /** Servers by cosine to their mean tool vector, best first. */
  vector: Ranked;
  members: ServerMembers;
}

/**
 * Adds each server's vote to every tool of that server, then re-sorts: a server's vote is
 * weight / (k + rank) over its list's first `depth` servers, BM25's scaled by score / top score
 * as the tool-level BM25 list is. Returns the fused list and each tool's added vote.
 */
export function addServerVotes(
  fused: readonly (readonly [string, number])[],
  lists: ServerLists,
  options: { bm25Weight: number; vectorWeight: number; depth: number; k: number } = {
    bm25Weight: SERVER_BM25_WEIGHT,
    vectorWeight: SERVER_VECTOR_WEIGHT,
    depth: SERVER_DEPTH,
    k: RRF_K,
  },
): { fused: [string, number][]; votes: Map<string, number> } {
  const serverVotes = fuseRrf(
    [
      { ranked: lists.bm25, weight: options.bm25Weight, scaleByScore: true },
      { ranked: lists.vector, weight: options.vectorWeight, scaleByScore: false },
    ],
    { k: options.k, depth: options.depth },
  );
  const votes = new Map<string, number>();
  for (const [server, vote] of serverVotes) for (const id of lists.members.get(server) ?? []) votes.set(id, (votes.get(id) ?? 0) + vote);
  const scores = new Map(fused.map(([id, score]) => [id, score]));
  for (const [id, vote] of votes) scores.set(id, (scores.get(id) ?? 0) + vote);
  return { fused: [...scores].sort(byScoreThenId), votes };
}

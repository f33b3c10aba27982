import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadQueries, readJsonl } from './run-eval.js';
import { seededRandom } from './seeded-random.js';

/**
 * A small catalog of short descriptions drawn from a labelled corpus: the shape of a team's own
 * few hundred tools with one-line descriptions, where BM25 has few words to match and the dense list
 * is often the better one (the case docs/ranking.md's small catalogs check). Deterministic: queries
 * in a seeded order are kept while their relevant tools fit in `relevantShare` of `size`; seeded
 * distractors fill the rest; each description is cut to its first sentence, the schema kept or
 * dropped.
 */
export interface SmallCatalogOptions {
  size: number;
  schema: boolean;
  seed: number;
  /** Share of the catalog the kept queries' relevant tools may take; distractors fill the rest. */
  relevantShare: number;
  /** Which queries may be drawn (bfcl: its `live_*` subsets, real users' functions and requests). */
  keepQuery?: (query: QueryLine) => boolean;
}

/** A query line as the dataset holds it (its `subset` and other fields kept). */
interface QueryLine {
  relevant: string[];
  subset?: unknown;
  [key: string]: unknown;
}

interface CatalogLine {
  name: string;
  description?: string | null;
  input_schema?: unknown;
  [key: string]: unknown;
}

/** The first sentence of a description (at least 10 characters before its stop), at most 160 characters. */
export function firstSentence(text: string | null | undefined): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  const match = /^(.{10,}?[.!?])(\s|$)/.exec(flat);
  return (match ? match[1]! : flat).slice(0, 160);
}

export function smallCatalog(
  catalog: readonly CatalogLine[],
  queries: readonly QueryLine[],
  options: SmallCatalogOptions,
): { tools: CatalogLine[]; queries: QueryLine[] } {
  const random = seededRandom(options.seed);
  const shuffled = <T>(items: readonly T[]) =>
    items
      .map((item) => ({ item, key: random() }))
      .sort((a, b) => a.key - b.key)
      .map(({ item }) => item);
  const chosen = new Set<string>();
  const kept: QueryLine[] = [];
  for (const query of shuffled(queries.filter(options.keepQuery ?? (() => true)))) {
    const missing = query.relevant.filter((name) => !chosen.has(name));
    if (chosen.size + missing.length > options.size * options.relevantShare) continue;
    for (const name of missing) chosen.add(name);
    kept.push(query);
  }
  for (const tool of shuffled(catalog.filter((tool) => !chosen.has(tool.name)))) {
    if (chosen.size >= options.size) break;
    chosen.add(tool.name);
  }
  const tools = catalog
    .filter((tool) => chosen.has(tool.name))
    .map((tool) => ({ ...tool, description: firstSentence(tool.description), input_schema: options.schema ? (tool.input_schema ?? null) : null }));
  return { tools, queries: kept };
}

/** The small catalogs drawn from each corpus under `evalDir`, written as datasets under `outDir` (`<corpus>_schema`, `<corpus>_noschema`). */
export function writeSmallCatalogs(evalDir: string, outDir: string, corpora: readonly string[], size = 200): string[] {
  const written: string[] = [];
  for (const corpus of corpora) {
    const catalog = readJsonl(join(evalDir, corpus, 'catalog.jsonl')) as CatalogLine[];
    const path = join(evalDir, corpus, 'queries.dev.jsonl');
    loadQueries(path); // checks every line; the lines are kept whole (subset, groups)
    const queries = readJsonl(path) as QueryLine[];
    const keepQuery = corpus === 'bfcl' ? (query: QueryLine) => String(query.subset ?? '').startsWith('live_') : undefined;
    for (const schema of [true, false]) {
      const small = smallCatalog(catalog, queries, { size, schema, seed: 7, relevantShare: 0.6, keepQuery });
      const dir = join(outDir, `${corpus}_${schema ? 'schema' : 'noschema'}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'catalog.jsonl'), small.tools.map((tool) => JSON.stringify(tool)).join('\n') + '\n');
      writeFileSync(join(dir, 'queries.dev.jsonl'), small.queries.map((query) => JSON.stringify(query)).join('\n') + '\n');
      written.push(dir);
    }
  }
  return written;
}

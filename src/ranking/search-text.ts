/**
 * What of a tool is searched: the BM25 bag of terms and the text the sentence model embeds.
 * Both are derived from the canonical fields only, so they change exactly when the content hash
 * changes.
 */
import type { CanonicalTool, JsonSchema } from '../lib/tool.js';
import { BM25_TERM_UNIT } from './bm25.js';
import { CJK_SCRIPTS, tokenize } from './tokenizer.js';

/**
 * Version of the BM25 document recipe (tokenizer, fields, weights). Bump it with any change that
 * alters documentTerms' output: stored terms of older versions are recomputed at start-up.
 * 2: plural acronyms (`IDs`, `URLs`) are one word.
 * 3: fields weighted in units of 1/BM25_TERM_UNIT; the parameters' text at SCHEMA_WEIGHT.
 */
export const TERMS_VERSION = 3;

/**
 * Version of the embedding text recipe (`embeddingText`). Bump it with any change to that text:
 * vectors computed from an older recipe count as missing, so the queue re-embeds them, while
 * search keeps using each old vector until its replacement is written.
 * 2: a tool whose description the model cannot read (empty or mostly CJK) is described by its
 * parameters.
 */
export const EMBED_TEXT_VERSION = 2;

/** The name is the most precise evidence of what a tool does; the issue asks it to count twice. */
export const NAME_WEIGHT = 2;
/**
 * A parameter's name and description say what a tool takes, not what it does: at half weight they
 * still match a query's words, but pad a tool's length half as much (chosen leave-one-corpus-out
 * among 0-1, docs/ranking.md).
 */
export const SCHEMA_WEIGHT = 0.5;
/** Nested schemas deeper than this are option bags, not what the tool is about. */
export const MAX_SCHEMA_DEPTH = 3;
/** Bounds the work and the document size for tools with huge generated schemas. */
export const MAX_PARAMETERS = 64;
/** Bounds any one text field; a description longer than this is usually a pasted manual. */
export const MAX_FIELD_CHARS = 4000;
/**
 * USE Lite averages its token embeddings (a DAN), so every extra word dilutes the rest: the
 * embedded text keeps the name and the start of the description, and stops here.
 */
export const MAX_EMBEDDING_CHARS = 400;

export interface SchemaParameter {
  name: string;
  description: string;
}

export interface DocumentTerms {
  termFreqs: Map<string, number>;
  /** Sum of termFreqs: what BM25 calls the document length. */
  length: number;
}

/** The BM25 document: name tokens at NAME_WEIGHT, description, server and tags at 1, parameters' names and descriptions at SCHEMA_WEIGHT. */
export function documentTerms(tool: CanonicalTool): DocumentTerms {
  const counts = new Map<string, number>();
  let length = 0;
  // Each occurrence counts its field's weight in units of 1/BM25_TERM_UNIT (ranking/bm25.ts), so counts stay integers.
  const count = (terms: readonly string[], weight: number) => {
    const units = weight * BM25_TERM_UNIT;
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + units);
    length += units * terms.length;
  };
  count(tokenize(clip(tool.name)), NAME_WEIGHT);
  count(tokenize(clip(tool.description)), 1);
  if (tool.server !== null) count(tokenize(clip(tool.server)), 1);
  for (const tag of tool.tags) count(tokenize(clip(tag)), 1);
  for (const parameter of schemaParameters(tool.inputSchema)) {
    count(tokenize(parameter.name), SCHEMA_WEIGHT);
    count(tokenize(parameter.description), SCHEMA_WEIGHT);
  }
  return { termFreqs: counts, length };
}

/** The query side of BM25: the same tokenizer as documents; duplicates are handled by scoreBm25. */
export function queryTerms(query: string): string[] {
  return tokenize(query);
}

/**
 * The first sentence of a description: what the tool does. The rest (options, caveats, examples)
 * only dilutes USE Lite's averaged vector; on the eval sets name + first sentence beat name + 400
 * characters of description for the dense list (livemcpbench nDCG@10 0.220 -> 0.243).
 */
const FIRST_SENTENCE = /^[\s\S]*?[.!?\u3002](?=\s|$)/u;

/** The first sentence of a text as the embedding text takes it (see above); the whole text when it has no sentence end. */
export function openingSentence(text: string): string {
  return FIRST_SENTENCE.exec(text)?.[0] ?? text;
}

/** Parameters that describe a tool whose own description the model cannot read. */
export const MAX_EMBEDDED_PARAMETERS = 8;
/** Of each such parameter's description, the start: what the value is, not how to format it. */
export const MAX_PARAMETER_DESCRIPTION_CHARS = 60;

const CJK_LETTER = new RegExp(`[${CJK_SCRIPTS}]`, 'gu');
const LETTER = /\p{L}/gu;

/**
 * Whether the default sentence model can read a text: it has letters, and under 30% of them are
 * CJK (USE Lite's vocabulary is English; a Chinese description reaches it as unknown tokens).
 */
export function isReadableText(text: string): boolean {
  const letters = text.match(LETTER)?.length ?? 0;
  if (letters === 0) return false;
  return (text.match(CJK_LETTER)?.length ?? 0) / letters < 0.3;
}

/**
 * The text a sentence model embeds for a tool: readable name words and what the tool does, from
 * the first sentence of its description. When the description gives the model nothing to read
 * (empty, or in Chinese), the tool's first parameters say what it works on instead: `name (start
 * of its description)`. On the dev splits that lifted the dense list's Recall@10 on livemcpbench
 * (78 such tools) from 0.323 to 0.365 and its nDCG@10 on toolbench_stable (173) from 0.371 to 0.390.
 */
export function embeddingText(tool: CanonicalTool): string {
  const parts = [humanize(tool.name)];
  const description = tool.description.trim();
  if (isReadableText(description)) {
    parts.push(openingSentence(description));
  } else {
    const parameters = schemaParameters(tool.inputSchema)
      .slice(0, MAX_EMBEDDED_PARAMETERS)
      .map(({ name, description: about }) => {
        const words = humanize(name);
        const start = about.trim().slice(0, MAX_PARAMETER_DESCRIPTION_CHARS);
        return isReadableText(start) ? `${words} (${start})` : words;
      });
    if (parameters.length > 0) parts.push(parameters.join(', '));
  }
  const text = parts.join(': ');
  return text.length > MAX_EMBEDDING_CHARS ? text.slice(0, MAX_EMBEDDING_CHARS) : text;
}

/** `get_userByID` -> `get user By ID`: identifier boundaries become spaces. */
export function humanize(identifier: string): string {
  return identifier
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/[_\-.:/]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Parameters of a JSON Schema, nested ones included (object properties, array items, anyOf and
 * friends), breadth-first so top-level parameters survive the MAX_PARAMETERS cut.
 */
export function schemaParameters(schema: JsonSchema | null): SchemaParameter[] {
  const parameters: SchemaParameter[] = [];
  let level: unknown[] = [schema];
  for (let depth = 0; depth < MAX_SCHEMA_DEPTH && level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const node of level) {
      for (const [name, property] of Object.entries(propertiesOf(node))) {
        if (parameters.length >= MAX_PARAMETERS) return parameters;
        parameters.push({ name: clip(name), description: clip(stringField(property, 'description')) });
        next.push(property);
      }
    }
    level = next;
  }
  return parameters;
}

/** The properties of a schema node, looking through arrays and anyOf/oneOf/allOf wrappers. */
function propertiesOf(node: unknown): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  const visit = (candidate: unknown, hops: number): void => {
    if (!isRecord(candidate) || hops > MAX_SCHEMA_DEPTH) return;
    if (isRecord(candidate.properties)) Object.assign(found, candidate.properties);
    visit(candidate.items, hops + 1);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      const variants = candidate[key];
      if (Array.isArray(variants)) for (const variant of variants) visit(variant, hops + 1);
    }
  };
  visit(node, 0);
  return found;
}

function stringField(node: unknown, key: string): string {
  if (!isRecord(node)) return '';
  const value = node[key];
  return typeof value === 'string' ? value : '';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clip(text: string): string {
  return text.length > MAX_FIELD_CHARS ? text.slice(0, MAX_FIELD_CHARS) : text;
}

/**
 * Estimated tokens of a tool's definition as a provider receives it, counted with a real tokenizer
 * (gpt-tokenizer's o200k_base, the encoding of OpenAI's current models). For Claude and other
 * models it is an estimate: their tokenizers are not public, and counts differ by some percent.
 * Counted once, when a tool is ingested, and stored: per content hash for the provider shapes
 * (tool_documents), per catalog row for the definition as that catalog received it (catalog_tools),
 * summed per catalog (catalogs). Inline tools are counted once per content hash and remembered
 * (TokenCounter).
 *
 * The tokenizer itself runs on a thread of its own (token-thread.ts, count-tokens.ts): counting is
 * ~40-80 us a tool, and its tables take ~66 MB, so this module (what the main thread imports) only
 * makes the texts and combines the counts.
 */
import { LruCache } from '../lru-cache.js';
import { yieldToOtherRequests } from '../time-slice.js';
import type { Tool } from './tool.js';

export type WireShape = 'anthropic' | 'openai' | 'as_sent';

/** One tool's definition tokens in each shape. */
export type DefinitionTokens = Record<WireShape, number>;

export type Countable = Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition'>;

/** The tool as each provider's request carries it. */
export function wireDefinition(tool: Countable, shape: WireShape): unknown {
  const schema = tool.inputSchema ?? { type: 'object', properties: {} };
  if (shape === 'anthropic') return { name: tool.name, description: tool.description, input_schema: schema };
  if (shape === 'openai') return { type: 'function', name: tool.name, description: tool.description, parameters: schema };
  return tool.definition;
}

/**
 * OpenAI's shape less Anthropic's in o200k_base tokens, the same for every tool: the two JSON texts
 * differ only in a `"type":"function",` prefix and the schema's key, and the tokenizer splits text
 * at punctuation before merging, so the shared rest counts alike (test/unit/tokens.test.ts checks
 * this constant against the tokenizer and 8,553 tools).
 */
export const OPENAI_OVER_ANTHROPIC = 3;

/**
 * What a tool's counts come from: its Anthropic shape's text, and, when its definition as sent is
 * another text, the texts whose counts' difference is the as-sent count's difference from
 * Anthropic's (`differingSpans`: usually a few keys, not the whole definition again).
 */
export interface DefinitionTexts {
  anthropic: string;
  /** null: the definition as sent is Anthropic's text. */
  asSent: { anthropic: string; asSent: string } | null;
}

export function definitionTexts(tool: Countable): DefinitionTexts {
  const anthropic = JSON.stringify(wireDefinition(tool, 'anthropic'));
  const asSent = JSON.stringify(tool.definition);
  return { anthropic, asSent: asSent === anthropic ? null : differingSpans(anthropic, asSent) };
}

/** A tool's counts from its texts' counts (`asSent`: the counts of the two differing spans, or null). */
export function fromTextCounts(anthropic: number, asSent: readonly [number, number] | null): DefinitionTokens {
  return { anthropic, openai: anthropic + OPENAI_OVER_ANTHROPIC, as_sent: asSent === null ? anthropic : anthropic - asSent[0] + asSent[1] };
}

const isAsciiLetter = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
/** ASCII punctuation: printable, not a letter, digit or space. */
const isAsciiPunctuation = (code: number): boolean => code > 32 && code < 127 && !isAsciiLetter(code) && !(code >= 48 && code <= 57);
/**
 * Whether o200k_base's pre-tokenizer starts a piece at `at` whatever the text holds elsewhere: a
 * letter after two punctuation characters (the punctuation run is one piece, ended by the letter;
 * the word starts afresh). Each piece is merged on its own, so a text cut there counts as its parts.
 */
const isCut = (text: string, at: number): boolean =>
  at >= 2 && at < text.length && isAsciiLetter(text.charCodeAt(at)) && isAsciiPunctuation(text.charCodeAt(at - 1)) && isAsciiPunctuation(text.charCodeAt(at - 2));

/**
 * The spans of `a` and `b` outside which they are the same text, cut where the tokenizer cuts both
 * (`isCut`): count(b) = count(a) - count(span of a) + count(span of b). A definition sent in
 * another shape than Anthropic's differs in a key (MCP's `inputSchema`) or in keys after the schema
 * (`tags`, `server`), so its count costs those spans, not a second pass over the whole definition.
 */
export function differingSpans(a: string, b: string): { anthropic: string; asSent: string } {
  const shorter = Math.min(a.length, b.length);
  let prefix = 0;
  while (prefix < shorter && a.charCodeAt(prefix) === b.charCodeAt(prefix)) prefix++;
  let suffix = 0;
  while (suffix < shorter - prefix && a.charCodeAt(a.length - 1 - suffix) === b.charCodeAt(b.length - 1 - suffix)) suffix++;
  let start = prefix;
  while (start > 0 && !(isCut(a, start) && isCut(b, start))) start--;
  let end = suffix;
  while (end > 0 && !(isCut(a, a.length - end) && isCut(b, b.length - end))) end--;
  return { anthropic: a.slice(start, a.length - end), asSent: b.slice(start, b.length - end) };
}

/** Counts texts' tokens, in order: the service's counting thread, or this thread (count-tokens.ts). */
export interface TextCounter {
  countTexts(texts: readonly string[]): Promise<number[]>;
}

/** Tools whose texts are made between yields to other requests. */
export const COUNT_SLICE = 256;

/**
 * Many tools' counts, in order (catalog writes, the selector's new tools): Anthropic's text, and
 * for a definition sent in another shape the spans where it differs (`differingSpans`), made here in
 * slices that yield to other requests, and counted by `counter` slice by slice.
 */
export async function countDefinitions(counter: TextCounter, tools: readonly Countable[]): Promise<DefinitionTokens[]> {
  const slices: Promise<DefinitionTokens[]>[] = [];
  for (let start = 0; start < tools.length; start += COUNT_SLICE) {
    if (start > 0) await yieldToOtherRequests();
    const texts: string[] = [];
    const at = tools.slice(start, start + COUNT_SLICE).map((tool) => {
      const { anthropic, asSent } = definitionTexts(tool);
      return { anthropic: texts.push(anthropic) - 1, asSent: asSent === null ? null : texts.push(asSent.anthropic, asSent.asSent) - 2 };
    });
    const counted = counter.countTexts(texts).then((counts) =>
      at.map((index) => fromTextCounts(counts[index.anthropic]!, index.asSent === null ? null : [counts[index.asSent]!, counts[index.asSent + 1]!])),
    );
    counted.catch(() => {}); // awaited below
    slices.push(counted);
  }
  return (await Promise.all(slices)).flat();
}

/** Counts on the calling thread, the tokenizer loaded on first use (tests, and the fallback when the counting thread is gone). */
export const countHere: TextCounter = {
  async countTexts(texts) {
    return (await import('./count-tokens.js')).countTextsHere(texts);
  },
};

/** Inline tools' counts by content hash (the first definition seen for it), bounded. */
export class TokenCounter {
  readonly #cache = new LruCache<string, DefinitionTokens>(100_000);

  constructor(private readonly counter: TextCounter) {}

  /** Each tool's counts, in order: remembered ones from memory, the rest counted by `counter` and remembered. */
  async counts(tools: readonly { hash: string; tool: Countable }[]): Promise<DefinitionTokens[]> {
    const out = tools.map(({ hash }) => this.#cache.get(hash));
    const missing = tools.filter((_, index) => out[index] === undefined);
    if (missing.length > 0) {
      const counted = await countDefinitions(this.counter, missing.map(({ tool }) => tool));
      missing.forEach(({ hash }, index) => this.#cache.set(hash, counted[index]!));
      let next = 0;
      for (let index = 0; index < out.length; index++) out[index] ??= counted[next++];
    }
    return out as DefinitionTokens[];
  }

  /** Counts made elsewhere (when the tool was stored), so they are not made again. */
  remember(hash: string, tokens: DefinitionTokens): void {
    this.#cache.set(hash, tokens);
  }
}

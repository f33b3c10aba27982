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
import { LruCache } from '../lib/lru-cache.js';
import { yieldToOtherRequests } from '../lib/time-slice.js';
import type { DefinitionTokens, Tool, WireShape } from '../lib/tool.js';

export type { DefinitionTokens, WireShape };

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
 * What a tool's counts come from: its Anthropic shape's text, and the texts whose counts give its
 * definition as sent (`fromTextCounts`): none when that is Anthropic's text; the pieces where the two
 * differ (`differingPieces`: usually a key or two, not the whole definition again); or the definition
 * whole when the two share little.
 */
export interface DefinitionTexts {
  anthropic: string;
  asSent: [] | [whole: string] | [less: string, more: string];
}

export function definitionTexts(tool: Countable): DefinitionTexts {
  const anthropic = JSON.stringify(wireDefinition(tool, 'anthropic'));
  const asSent = JSON.stringify(tool.definition);
  if (asSent === anthropic) return { anthropic, asSent: [] };
  const pieces = differingPieces(anthropic, asSent);
  return { anthropic, asSent: pieces ? [pieces.less, pieces.more] : [asSent] };
}

/** A tool's counts from its Anthropic text's count and the counts of `DefinitionTexts.asSent`'s texts. */
export function fromTextCounts(anthropic: number, asSent: readonly number[]): DefinitionTokens {
  const sent = asSent.length === 0 ? anthropic : asSent.length === 1 ? asSent[0]! : anthropic - asSent[0]! + asSent[1]!;
  return { anthropic, openai: anthropic + OPENAI_OVER_ANTHROPIC, as_sent: sent };
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
  at >= 2 &&
  at < text.length &&
  isAsciiLetter(text.charCodeAt(at)) &&
  isAsciiPunctuation(text.charCodeAt(at - 1)) &&
  isAsciiPunctuation(text.charCodeAt(at - 2));

/**
 * `text` cut after each quote that is a cut (`isCut`): each piece's count is its count in `text`,
 * and pieces joined in order count as their sum. Only after quotes, where JSON's keys and strings
 * start, so the scan jumps from quote to quote (any subset of cuts is as exact).
 */
function cutPieces(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (let quote = text.indexOf('"', 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    if (!isCut(text, quote + 1)) continue;
    pieces.push(text.slice(start, quote + 1));
    start = quote + 1;
  }
  pieces.push(text.slice(start));
  return pieces;
}

/**
 * What `a` and `b` hold that the other does not, as texts whose counts' difference is theirs:
 * count(b) = count(a) - count(less) + count(more). Both are cut where the tokenizer cuts whatever
 * the context (`isCut`), the pieces they share are set aside, and each text's other pieces are
 * joined in its order (a piece ends in two punctuation characters and the next starts with a
 * letter, so every join is a cut too). A definition sent in another shape than Anthropic's differs
 * in a key (MCP's `inputSchema`) and in keys after the schema (`tags`, `server`): its count costs
 * those pieces, not a second pass over the definition. Undefined when they share under half of `b`.
 */
export function differingPieces(a: string, b: string): { less: string; more: string } | undefined {
  const unmatched = new Map<string, number>();
  const piecesOfA = cutPieces(a);
  for (const piece of piecesOfA) unmatched.set(piece, (unmatched.get(piece) ?? 0) + 1);
  let more = '';
  for (const piece of cutPieces(b)) {
    const left = unmatched.get(piece);
    if (left) unmatched.set(piece, left - 1);
    else more += piece;
  }
  if (more.length > b.length / 2) return undefined;
  let less = '';
  for (const piece of piecesOfA) {
    const left = unmatched.get(piece);
    if (!left) continue;
    unmatched.set(piece, left - 1);
    less += piece;
  }
  return { less, more };
}

/** Counts texts' tokens, in order: the service's counting thread, or this thread (count-tokens.ts). */
export interface TextCounter {
  countTexts(texts: readonly string[]): Promise<number[]>;
}

/** Tools whose texts are made between yields to other requests. */
export const COUNT_SLICE = 256;

/**
 * Many tools' counts, in order (catalog writes, the selector's new tools): Anthropic's text, and
 * for a definition sent in another shape the pieces where it differs (`differingPieces`), made here in
 * slices that yield to other requests, and counted by `counter` slice by slice.
 */
export async function countDefinitions(counter: TextCounter, tools: readonly Countable[]): Promise<DefinitionTokens[]> {
  const slices: Promise<DefinitionTokens[]>[] = [];
  for (let start = 0; start < tools.length; start += COUNT_SLICE) {
    if (start > 0) await yieldToOtherRequests();
    const texts: string[] = [];
    const at = tools.slice(start, start + COUNT_SLICE).map((tool) => {
      const { anthropic, asSent } = definitionTexts(tool);
      const first = texts.push(anthropic) - 1;
      texts.push(...asSent);
      return { first, end: texts.length };
    });
    const counted = counter.countTexts(texts).then((counts) => at.map(({ first, end }) => fromTextCounts(counts[first]!, counts.slice(first + 1, end))));
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
      const counted = await countDefinitions(
        this.counter,
        missing.map(({ tool }) => tool),
      );
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

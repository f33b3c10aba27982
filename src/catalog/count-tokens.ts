/**
 * The tokenizer (gpt-tokenizer's o200k_base, ~66 MB of tables). Loaded by the counting thread
 * (tokens-worker.ts), by tests, and on the main thread only when that thread is gone (tokens.ts's
 * `countHere`); the service's main thread otherwise never imports it.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { yieldToOtherRequests } from '../store/tool-store.js';
import { COUNT_SLICE, definitionTexts, fromTextCounts, type Countable, type DefinitionTokens } from './tokens.js';

/** Tokens of one definition as JSON: ~40 us for a typical tool (the four eval corpora's 8,553 tools). */
export const countDefinition = (definition: unknown): number => countTokens(JSON.stringify(definition));

/** One tool's counts, here and now: two tokenizer passes at most. */
export function definitionTokens(tool: Countable): DefinitionTokens {
  const texts = definitionTexts(tool);
  return fromTextCounts(countTokens(texts.anthropic), texts.asSent === null ? null : countTokens(texts.asSent));
}

/** Texts counted on this thread, yielding to other requests between slices. */
export async function countTextsHere(texts: readonly string[]): Promise<number[]> {
  const out: number[] = [];
  for (let start = 0; start < texts.length; start += COUNT_SLICE) {
    if (start > 0) await yieldToOtherRequests();
    for (const text of texts.slice(start, start + COUNT_SLICE)) out.push(countTokens(text));
  }
  return out;
}

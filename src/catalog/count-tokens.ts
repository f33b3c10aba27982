/**
 * The tokenizer (gpt-tokenizer's o200k_base, ~66 MB of tables). Loaded by the counting thread
 * (tokens-worker.ts), by tests, and on the main thread only when that thread is gone (tokens.ts's
 * `countHere`); the service's main thread otherwise never imports it.
 */
import { countText } from './count-text.js';
import { mapYielding } from './catalog-service.js';
import { definitionTexts, fromTextCounts, type Countable, type DefinitionTokens } from './tokens.js';

/** One tool's counts, here and now: two tokenizer passes at most. */
export function definitionTokens(tool: Countable): DefinitionTokens {
  const texts = definitionTexts(tool);
  return fromTextCounts(countText(texts.anthropic), texts.asSent === null ? null : countText(texts.asSent));
}

/** Texts counted on this thread (~40 us a typical tool's), yielding to other requests between slices. */
export const countTextsHere = (texts: readonly string[]): Promise<number[]> => mapYielding(texts, countText);

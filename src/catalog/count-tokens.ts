/**
 * The tokenizer (gpt-tokenizer's o200k_base, ~66 MB of tables). Loaded by the counting thread
 * (tokens-worker.ts), by tests, and on the main thread only when that thread is gone (tokens.ts's
 * `countHere`); the service's main thread otherwise never imports it.
 */
import { countText } from './count-text.js';
import { mapYielding } from '../lib/time-slice.js';
import { definitionTexts, fromTextCounts, type Countable, type DefinitionTokens } from './tokens.js';

/** One tool's counts, here and now: one tokenizer pass, and the differing pieces of a definition sent in another shape. */
export function definitionTokens(tool: Countable): DefinitionTokens {
  const { anthropic, asSent } = definitionTexts(tool);
  return fromTextCounts(countText(anthropic), asSent.map(countText));
}

/** Texts counted on this thread (~40 us a typical tool's), yielding to other requests between slices. */
export const countTextsHere = (texts: readonly string[]): Promise<number[]> => mapYielding(texts, countText);

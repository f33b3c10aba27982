/**
 * One text's o200k_base token count, in time linear in its length. BPE's cost grows with the square
 * of a pre-token's length (a 200,000-letter word took ~17 s of the counting thread, and a 50,000-char
 * run of CJK ~10 s), so a run of letters, of punctuation or of spaces longer than PIECE characters is
 * counted in pieces of PIECE: within about a token a piece of the exact count, and exact for every
 * text without such a run.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

export const PIECE = 256;
/** The runs the tokenizer keeps as one pre-token (digits it splits by three already). */
const LONG_RUN = new RegExp(`[\\p{L}\\p{M}]{${PIECE + 1},}|[^\\s\\p{L}\\p{N}]{${PIECE + 1},}|\\s{${PIECE + 1},}`, 'gu');

export function countText(text: string): number {
  if (text.length <= PIECE) return countTokens(text);
  let count = 0;
  let from = 0;
  for (const match of text.matchAll(LONG_RUN)) {
    const start = match.index;
    const end = start + match[0].length;
    if (start > from) count += countTokens(text.slice(from, start));
    for (let at = start; at < end; ) {
      let cut = Math.min(end, at + PIECE);
      if (cut < end && isLowSurrogate(text.charCodeAt(cut))) cut += 1; // never split a character
      count += countTokens(text.slice(at, cut));
      at = cut;
    }
    from = end;
  }
  return from === 0 ? countTokens(text) : from < text.length ? count + countTokens(text.slice(from)) : count;
}

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

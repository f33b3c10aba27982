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

/**
 * Special tokens' texts ("<|endoftext|>") are counted as the text they are, as a provider encodes a
 * tool's definition; by default the tokenizer throws on them (and scans every text for them).
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const count = (text: string): number => countTokens(text, AS_TEXT);

export function countText(text: string): number {
  if (text.length <= PIECE || !mayHoldLongRun(text)) return count(text);
  let total = 0;
  let from = 0;
  for (const match of text.matchAll(LONG_RUN)) {
    const start = match.index;
    const end = start + match[0].length;
    if (start > from) total += count(text.slice(from, start));
    for (let at = start; at < end; ) {
      let cut = Math.min(end, at + PIECE);
      if (cut < end && isLowSurrogate(text.charCodeAt(cut))) cut += 1; // never split a character
      total += count(text.slice(at, cut));
      at = cut;
    }
    from = end;
  }
  return from === 0 ? count(text) : from < text.length ? total + count(text.slice(from)) : total;
}

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/** ASCII characters' classes for `mayHoldLongRun`: 0 letter, 1 digit, 2 punctuation, 3 space, 4 control. */
const ASCII_CLASS = Uint8Array.from({ length: 128 }, (_, code) => {
  const char = String.fromCharCode(code);
  if (/[A-Za-z]/.test(char)) return 0;
  if (/[0-9]/.test(char)) return 1;
  if (/\s/.test(char)) return 3;
  return code < 32 || code === 127 ? 4 : 2;
});

/**
 * Whether `text` may hold a run LONG_RUN finds, in one pass over its character codes (the
 * Unicode-property regex alone took as long as counting the text). Sound, not exact: a character
 * outside ASCII may belong to any class, so it continues every run; a text it flags is searched
 * with LONG_RUN itself.
 */
export function mayHoldLongRun(text: string): boolean {
  let kind = -1;
  let run = 0;
  let wildcards = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 128) {
      wildcards++;
      if (++run > PIECE) return true;
      continue;
    }
    const next = ASCII_CLASS[code]!;
    if (next !== kind) {
      kind = next;
      run = wildcards;
    }
    wildcards = 0;
    if (++run > PIECE) return true;
  }
  return false;
}

/**
 * Seeded typos for `npm run eval -- --typos <rate> --seed <n>`: each word of at least 4 letters gets
 * one edit (a deletion, an insertion, a substitution or a swap of neighbours) with probability
 * `rate`, the same for every run with the same seed. Agents and people misspell; this measures what
 * that costs the ranking.
 */

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** One random edit of `word` (at least 4 letters), keeping its first letter. */
export function misspell(word: string, random: () => number): string {
  const at = 1 + Math.floor(random() * (word.length - 1));
  const letter = LETTERS[Math.floor(random() * LETTERS.length)]!;
  switch (Math.floor(random() * 4)) {
    case 0:
      return word.slice(0, at) + word.slice(at + 1);
    case 1:
      return word.slice(0, at) + letter + word.slice(at);
    case 2:
      return word.slice(0, at) + (letter === word[at] ? LETTERS[(LETTERS.indexOf(letter) + 1) % 26]! : letter) + word.slice(at + 1);
    default:
      return at < word.length - 1 ? word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2) : word.slice(0, at - 1) + word[at] + word[at - 1];
  }
}

/** `text` with typos at `rate` per eligible word; `random` carries the seed across queries. */
export function addTypos(text: string, rate: number, random: () => number): string {
  return text.replace(/\p{L}{4,}/gu, (word) => (random() < rate ? misspell(word, random) : word));
}

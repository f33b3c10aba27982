import { describe, expect, it } from 'vitest';
import { bareName, exactNameMatches, matchNamesByRegex, nameCandidates, queryWords, RegexSandbox, REGEX_BUDGET_MS } from '../../src/search/patterns.js';

describe('queryWords', () => {
  it('strips each word and says whether it was quoted on both sides and whether it is identifier-shaped', () => {
    expect(queryWords(' use `read_file`, (then) "fetch" [ping]! ... ')).toEqual([
      { word: 'use', quoted: false, identifierShaped: false },
      { word: 'read_file', quoted: true, identifierShaped: true },
      { word: 'then', quoted: false, identifierShaped: false },
      { word: 'fetch', quoted: true, identifierShaped: false },
      { word: 'ping', quoted: false, identifierShaped: false },
    ]);
    expect(queryWords('   ')).toEqual([]);
  });

  it('strips closing marks exactly as the pattern tried at every mark did, and a word of 9,999 of them in linear time', async () => {
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const random = seededRandom(6);
    const everyMark = /[`'"\])}>,;:!?.]+$/;
    const parts = [')', '.', '!', '"', 'a', 'b', '(', '_', '))', '?!'];
    for (let k = 0; k < 2_000; k++) {
      let word = '';
      for (let n = 0; n < 1 + Math.floor(random() * 10); n++) word += parts[Math.floor(random() * parts.length)]!;
      const raw = `x${word}`;
      const closing = everyMark.exec(raw)?.[0] ?? '';
      expect(queryWords(raw)[0]?.word, raw).toBe(raw.slice(0, raw.length - closing.length));
    }
    expect(queryWords(`${')'.repeat(9_999)}x`)).toEqual([{ word: `${')'.repeat(9_999)}x`, quoted: false, identifierShaped: false }]);
  });
});

describe('nameCandidates', () => {
  it('offers the whole query and each identifier-shaped word stripped of quotes, brackets and trailing punctuation', () => {
    expect(nameCandidates('use `read_file`.')).toEqual(['use `read_file`.', 'read_file']);
    expect(nameCandidates('  "github__create_issue"  ')).toEqual(['"github__create_issue"', 'github__create_issue']);
    expect(nameCandidates('(web_search), [fetch]! getUser fs.read web-search')).toEqual([
      '(web_search), [fetch]! getUser fs.read web-search',
      'web_search',
      'getUser',
      'fs.read',
      'web-search',
    ]);
  });
  it('offers a plain word only when it is quoted: prose words are not names', () => {
    expect(nameCandidates('First, optimize the supply chain, then hash it')).toEqual(['First, optimize the supply chain, then hash it']);
    expect(nameCandidates('call `search`, then "fetch". Or \'ping\'!')).toEqual(['call `search`, then "fetch". Or \'ping\'!', 'search', 'fetch', 'ping']);
    // Quoted on one side only, or bracketed, is not quoted.
    expect(nameCandidates('`search and fetch" [ping]')).toEqual(['`search and fetch" [ping]']);
  });
  it('is empty for a blank query and keeps a single word once', () => {
    expect(nameCandidates('')).toEqual([]);
    expect(nameCandidates(' \t\n ')).toEqual([]);
    expect(nameCandidates('read_file')).toEqual(['read_file']);
  });
  it('skips words longer than any tool name and caps the list', () => {
    expect(nameCandidates(`a_b ${'x_'.repeat(100)}`)).toEqual([`a_b ${'x_'.repeat(100)}`, 'a_b']);
    const many = Array.from({ length: 100 }, (_, index) => `w_${index}`).join(' ');
    expect(nameCandidates(many)).toHaveLength(64);
  });
});

describe('bareName', () => {
  it('drops the server prefix of an MCP-gateway name at the last double underscore', () => {
    expect(bareName('github__create_issue')).toBe('create_issue');
    expect(bareName('a__b__c')).toBe('c');
  });
  it('leaves names without a usable prefix alone', () => {
    expect(bareName('read_file')).toBe('read_file');
    expect(bareName('__private')).toBe('__private');
    expect(bareName('trailing__')).toBe('trailing__');
  });
});

describe('exactNameMatches', () => {
  const names = ['read_file', 'write_file', 'search', 'filesystem__read_file', 'git__read_file', 'brave__search', 'exa__search', 'github__create_issue'];

  it('finds a full name anywhere in the query, in the order mentioned', () => {
    // The full name first; read_file is also the bare name of two servers' tools.
    expect(exactNameMatches('read_file', names)).toEqual(['read_file', 'filesystem__read_file', 'git__read_file']);
    expect(exactNameMatches('filesystem__read_file', names)).toEqual(['filesystem__read_file']);
    expect(exactNameMatches('please call github__create_issue then write_file.', names)).toEqual(['github__create_issue', 'write_file']);
    expect(exactNameMatches('use `git__read_file`', names)).toEqual(['git__read_file']);
  });
  it('selects a bare name when it is the whole query, every server that has it', () => {
    expect(exactNameMatches('create_issue', names)).toEqual(['github__create_issue']);
    expect(exactNameMatches('search', names)).toEqual(['search', 'brave__search', 'exa__search']);
    expect(exactNameMatches('  search  ', names)).toEqual(['search', 'brave__search', 'exa__search']);
  });
  it('selects a bare name inside prose only when the word is identifier-shaped', () => {
    expect(exactNameMatches('I want to create_issue for this bug', names)).toEqual(['github__create_issue']);
    // read_file is a full name and the bare name of two servers' tools.
    expect(exactNameMatches('then read_file please', names)).toEqual(['read_file', 'filesystem__read_file', 'git__read_file']);
  });
  it('does not let a common word in prose force a tool, full or bare name', () => {
    expect(exactNameMatches('search the web for node releases', ['brave__search', 'exa__search', 'web_fetch'])).toEqual([]);
    expect(exactNameMatches('search the web', names)).toEqual([]);
    // sealtools: a generic `optimize` tool is not what "optimize the supply chain" asks for.
    expect(exactNameMatches('First, optimize the supply chain.', ['optimize', 'optimizeSupplyChain'])).toEqual([]);
  });
  it('selects a quoted word as a name, full and bare', () => {
    expect(exactNameMatches('use `search` for node releases', names)).toEqual(['search', 'brave__search', 'exa__search']);
    expect(exactNameMatches('then "create_issue"', names)).toEqual(['github__create_issue']);
  });
  it('never answers a name that is not in the list', () => {
    expect(exactNameMatches('delete_everything', names)).toEqual([]);
    expect(exactNameMatches('', names)).toEqual([]);
    expect(exactNameMatches('read_file', [])).toEqual([]);
  });
});

describe('matchNamesByRegex', () => {
  const names = ['read_file', 'write_file', 'filesystem__read_file', 'web_search'];

  it('leaves plain words and sentences to the ranker', () => {
    expect(matchNamesByRegex('read', names)).toEqual({ kind: 'not_regex' });
    expect(matchNamesByRegex('search the web', names)).toEqual({ kind: 'not_regex' });
    expect(matchNamesByRegex('read_file', names)).toEqual({ kind: 'not_regex' });
    expect(matchNamesByRegex('   ', names)).toEqual({ kind: 'not_regex' });
  });
  it('reports a pattern with metacharacters that does not compile as invalid', () => {
    const outcome = matchNamesByRegex('read_(file', names);
    expect(outcome.kind).toBe('invalid');
    expect(matchNamesByRegex('[a-', names).kind).toBe('invalid');
    expect(matchNamesByRegex('*file', names).kind).toBe('invalid');
  });
  it('matches names case-insensitively, in list order', () => {
    // The budget is wall-clock time: on a loaded host even a trivial match can overrun 5 ms, so
    // these cases, about what matches, get a budget no scheduler pause reaches.
    const budget = 10_000;
    expect(matchNamesByRegex('read_.*', names, budget)).toEqual({ kind: 'matched', names: ['read_file', 'filesystem__read_file'] });
    expect(matchNamesByRegex('^READ_', names, budget)).toEqual({ kind: 'matched', names: ['read_file'] });
    expect(matchNamesByRegex('(web|write)_', names, budget)).toEqual({ kind: 'matched', names: ['write_file', 'web_search'] });
    expect(matchNamesByRegex('^nothing$', names, budget)).toEqual({ kind: 'matched', names: [] });
  });
  it('stops a catastrophic pattern within its budget instead of hanging', () => {
    const long = Array.from({ length: 1000 }, (_, index) => `${'a'.repeat(60)}!${index}`);
    const started = performance.now();
    expect(matchNamesByRegex('(a+)+$', long)).toEqual({ kind: 'timeout' });
    // The budget plus vm setup and timer slack; unbounded, this takes years.
    expect(performance.now() - started).toBeLessThan(REGEX_BUDGET_MS + 250);
  });
  it('reuses one sandbox across patterns, also after a pattern ran out of time', () => {
    const sandbox = new RegexSandbox();
    const budget = 10_000;
    expect(matchNamesByRegex('read_.*', names, budget, sandbox)).toEqual({ kind: 'matched', names: ['read_file', 'filesystem__read_file'] });
    const long = Array.from({ length: 1000 }, (_, index) => `${'a'.repeat(60)}!${index}`);
    expect(matchNamesByRegex('(a+)+$', long, REGEX_BUDGET_MS, sandbox)).toEqual({ kind: 'timeout' });
    expect(matchNamesByRegex('(web|write)_', names, budget, sandbox)).toEqual({ kind: 'matched', names: ['write_file', 'web_search'] });
  });
});

/** SEP-2564's minimum glob syntax (lib/glob.ts): `*`, `?`, literal elsewhere, case-sensitive, whole names. */
import { describe, expect, it } from 'vitest';
import { globMatches, matchesAny, matchesSet, patternSet } from '../../src/lib/glob.js';

describe('globMatches', () => {
  it('matches * as any run, ? as one character, the rest literally and case-sensitively', () => {
    const cases: [string, string, boolean][] = [
      ['git_*', 'git_commit', true],
      ['git_*', 'git_', true],
      ['git_*', 'github_pr', false],
      ['*_file', 'read_file', true],
      ['*', '', true],
      ['', '', true],
      ['', 'a', false],
      ['read_?ile', 'read_file', true],
      ['read_?ile', 'read_ile', false],
      ['Read_file', 'read_file', false],
      ['a*b*c', 'aXXbYYc', true],
      ['a*b*c', 'aXXbYY', false],
      ['a**b', 'ab', true],
      ['files/*', 'files/read_file', true],
      ['[ab]', '[ab]', true],
      ['[ab]', 'a', false],
      ['.*', 'anything', false],
      ['?', '🙂', true],
      ['x?y', 'x🙂y', true],
    ];
    for (const [pattern, name, expected] of cases) expect(globMatches(pattern, name), `${pattern} ~ ${name}`).toBe(expected);
  });

  it('stays fast on patterns that make a backtracking regular expression explode', () => {
    const pattern = `${'*a'.repeat(120)}b`;
    const name = 'a'.repeat(300);
    const started = performance.now();
    expect(globMatches(pattern, name)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('any of several patterns (OR); none given matches everything', () => {
    expect(matchesAny(['git_*', 'search_*'], 'search_web')).toBe(true);
    expect(matchesAny(['git_*', 'search_*'], 'read_file')).toBe(false);
    expect(matchesAny([], 'read_file')).toBe(true);
    expect(matchesAny(undefined, 'read_file')).toBe(true);
  });

  it('a compiled set matches as its patterns one by one: exact ones by lookup, wildcards split once', () => {
    const patterns = ['git_*', 'read_file', 'x?y', 'files/*', '*', '', '🙂_tool'];
    const names = ['git_commit', 'read_file', 'read_files', 'x🙂y', 'files/a', '', '🙂_tool', 'other'];
    for (let mask = 1; mask < 1 << patterns.length; mask++) {
      const some = patterns.filter((_, i) => mask & (1 << i));
      const set = patternSet(some);
      expect(patternSet(some)).toBe(set);
      for (const name of names) expect(matchesSet(set, name), `${some.join(',')} ~ ${name}`).toBe(some.some((pattern) => globMatches(pattern, name)));
    }
    expect(patternSet(['a', 'b*']).exact).toEqual(new Set(['a']));
  });
});

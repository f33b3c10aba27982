/**
 * Glob matching as MCP's SEP-2564 asks of `namePatterns` at the least: `*` is any run of characters
 * (none too), `?` exactly one, everything else itself, case-sensitive, over the whole name.
 * Characters are code points, so `?` matches one emoji as it matches one letter.
 *
 * Matched by walking both strings, going back only to the last `*` (O(pattern x name) at worst),
 * not by compiling to a regular expression: a pattern such as `*a*a*a*...b` would make a
 * backtracking engine take exponential time over a long name.
 */
const SURROGATE = /[\uD800-\uDFFF]/;

export function globMatches(pattern: string | readonly string[], name: string): boolean {
  const glob = typeof pattern === 'string' ? [...pattern] : pattern;
  // A name without surrogates is its code points already: read in place, not split.
  const text: ArrayLike<string> = SURROGATE.test(name) ? [...name] : name;
  let at = 0;
  let next = 0;
  // The last `*` seen, and where in the text its run ends so far: a mismatch retries one further.
  let star = -1;
  let runEnd = 0;
  while (next < text.length) {
    const want = glob[at];
    if (want !== undefined && want !== '*' && (want === '?' || want === text[next])) {
      at++;
      next++;
    } else if (want === '*') {
      star = at++;
      runEnd = next;
    } else if (star >= 0) {
      at = star + 1;
      next = ++runEnd;
    } else {
      return false;
    }
  }
  while (glob[at] === '*') at++;
  return at === glob.length;
}

/** Whether a name matches any of the patterns (SEP-2564: OR within a field); no patterns match everything. */
export function matchesAny(patterns: readonly string[] | undefined, name: string): boolean {
  return !patterns?.length || matchesSet(patternSet(patterns), name);
}

/** Patterns as matched many times over: those without `*` or `?` in a set, the others split into code points once. */
export interface PatternSet {
  exact: ReadonlySet<string>;
  globs: readonly (readonly string[])[];
}

const compiled = new WeakMap<readonly string[], PatternSet>();

/** `patterns` compiled once per array (a key's policy keeps its arrays for the process's life). */
export function patternSet(patterns: readonly string[]): PatternSet {
  let set = compiled.get(patterns);
  if (!set) {
    const exact = new Set<string>();
    const globs: string[][] = [];
    for (const pattern of patterns) {
      if (/[*?]/.test(pattern)) globs.push([...pattern]);
      else exact.add(pattern);
    }
    compiled.set(patterns, (set = { exact, globs }));
  }
  return set;
}

/** Whether `name` matches one of a compiled set's patterns (as `globMatches` over each). */
export function matchesSet(set: PatternSet, name: string): boolean {
  return set.exact.has(name) || set.globs.some((glob) => globMatches(glob, name));
}

/**
 * Glob matching as MCP's SEP-2564 asks of `namePatterns` at the least: `*` is any run of characters
 * (none too), `?` exactly one, everything else itself, case-sensitive, over the whole name.
 * Characters are code points, so `?` matches one emoji as it matches one letter.
 *
 * Matched by walking both strings, going back only to the last `*` (O(pattern x name) at worst),
 * not by compiling to a regular expression: a pattern such as `*a*a*a*...b` would make a
 * backtracking engine take exponential time over a long name.
 */
export function globMatches(pattern: string, name: string): boolean {
  const glob = [...pattern];
  const text = [...name];
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
  return !patterns?.length || patterns.some((pattern) => globMatches(pattern, name));
}

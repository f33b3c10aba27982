import vm from 'node:vm';

/** `read_file`, `getUser`, `web-search`, `fs.read`: a word shaped like an identifier, not prose. */
const IDENTIFIER_SHAPED = /[_\-.:/]|\p{Ll}\p{Lu}/u;
const LEADING = /^[`'"([{<]+/;
/** Tried only where a run of closing marks starts: at every mark, a run of n cost n^2/2 steps. */
const TRAILING = /(?<![`'"\])}>,;:!?.])[`'"\])}>,;:!?.]+$/;
const QUOTE = /[`'"]/;

/** Each whitespace-separated word of a query, stripped of quotes, brackets and trailing punctuation. */
export function queryWords(query: string): { word: string; quoted: boolean; identifierShaped: boolean }[] {
  return query
    .trim()
    .split(/\s+/)
    .flatMap((raw) => {
      const opening = LEADING.exec(raw)?.[0] ?? '';
      const closing = TRAILING.exec(raw)?.[0] ?? '';
      const word = raw.slice(opening.length, raw.length - closing.length);
      return word === '' ? [] : [{ word, quoted: QUOTE.test(opening) && QUOTE.test(closing), identifierShaped: IDENTIFIER_SHAPED.test(word) }];
    });
}

/**
 * Pieces of a query that name a tool when a tool has exactly that name: the whole query, and each
 * word of it (see `queryWords`) that is shaped like an identifier or quoted ("use `read_file`." and
 * 'call "search"' name theirs). A plain word of prose does not: "optimize the supply chain" is not
 * a mention of a tool called `optimize`. On sealtools' labelled dev tasks, prose words that were
 * some tool's whole name named a relevant tool 2 times in 18, identifier-shaped words 14 times in
 * 14 (`npx tsx bench/research/exact-name-mentions.ts`).
 */
export function nameCandidates(query: string): string[] {
  const trimmed = query.trim();
  if (trimmed === '') return [];
  const candidates = new Set<string>([trimmed]);
  for (const { word, quoted, identifierShaped } of queryWords(trimmed)) {
    if (word.length <= 128 && (quoted || identifierShaped)) candidates.add(word);
  }
  return [...candidates].slice(0, 64);
}

/** `server__tool` -> `tool`: MCP gateways prefix tool names with their server. */
export function bareName(name: string): string {
  const index = name.lastIndexOf('__');
  return index > 0 && index < name.length - 2 ? name.slice(index + 2) : name;
}

/**
 * Names the query mentions exactly (see `nameCandidates`), in the order the query mentions them:
 * full names first, then bare names (after `server__`), so "search" or "use read_file" select
 * their tools while "search the web" selects no `*__search` tool. A bare name shared by several
 * servers selects all of them.
 */
export function exactNameMatches(query: string, names: readonly string[]): string[] {
  return new NameIndex(names).mentionedIn(query);
}

/** `exactNameMatches` over one list of names, indexed once: a gateway's list is the same every turn. */
export class NameIndex {
  readonly #names: ReadonlySet<string>;
  readonly #byBare = new Map<string, string[]>();

  constructor(names: readonly string[]) {
    this.#names = new Set(names);
    for (const name of names) {
      const bare = bareName(name);
      if (bare === name) continue;
      const shared = this.#byBare.get(bare);
      if (shared) shared.push(name);
      else this.#byBare.set(bare, [name]);
    }
  }

  /** The names `query` mentions exactly (see `exactNameMatches`). */
  mentionedIn(query: string): string[] {
    const candidates = nameCandidates(query);
    if (candidates.length === 0) return [];
    const found: string[] = [];
    for (const candidate of candidates) if (this.#names.has(candidate)) found.push(candidate);
    for (const candidate of candidates) for (const name of this.#byBare.get(candidate) ?? []) found.push(name);
    return [...new Set(found)];
  }
}

/** Total time any one pattern may spend matching names; V8's backtracking engine is exponential at worst. */
export const REGEX_BUDGET_MS = 5;
const REGEX_META = /[\\^$.*+?()[\]{}|]/;

export type RegexOutcome = { kind: 'not_regex' } | { kind: 'invalid'; reason: string } | { kind: 'timeout' } | { kind: 'matched'; names: string[] };

/**
 * Where name regexes run: a vm context with a hard timeout. One context is reused for every
 * pattern (creating one costs ~1.5 ms, 10x the match itself); each run sets its own globals.
 */
export class RegexSandbox {
  private readonly context = vm.createContext({ regex: /$^/, names: [] as readonly string[] });
  private readonly script = new vm.Script('names.filter((name) => regex.test(name))');

  /** Throws ERR_SCRIPT_EXECUTION_TIMEOUT when the budget runs out. */
  filter(regex: RegExp, names: readonly string[], budgetMs: number): string[] {
    this.context.regex = regex;
    this.context.names = names;
    try {
      return [...(this.script.runInContext(this.context, { timeout: budgetMs }) as string[])];
    } finally {
      this.context.names = [];
    }
  }
}

/**
 * Treats a pattern that looks like a regular expression (it has metacharacters and compiles) as
 * one over tool names, case-insensitive like the gateway's own regex strategy. Matching runs in a
 * sandbox with a hard timeout, so a catastrophic pattern such as `(a+)+$` costs at most
 * REGEX_BUDGET_MS instead of freezing the event loop.
 */
export function matchNamesByRegex(
  pattern: string,
  names: readonly string[],
  budgetMs = REGEX_BUDGET_MS,
  sandbox: RegexSandbox = new RegexSandbox(),
): RegexOutcome {
  const trimmed = pattern.trim();
  if (trimmed === '' || !REGEX_META.test(trimmed) || trimmed.length > 512) return { kind: 'not_regex' };
  let regex: RegExp;
  try {
    regex = new RegExp(trimmed, 'i');
  } catch (error) {
    return { kind: 'invalid', reason: (error as Error).message };
  }
  try {
    return { kind: 'matched', names: sandbox.filter(regex, names, budgetMs) };
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return { kind: 'timeout' };
    return { kind: 'invalid', reason: (error as Error).message };
  }
}

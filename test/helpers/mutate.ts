/**
 * The fuzz tests' mutation (test/integration/fuzz.test.ts over REST, mcp-fuzz.test.ts over MCP):
 * `value` with some parts swapped for `nasty` values, array items and object keys dropped or
 * mutated in turn, and sometimes an unknown key (one of `keys`) added. Seeded by `random`.
 */
export function mutate(value: unknown, random: () => number, nasty: readonly unknown[], keys: readonly string[], depth = 0): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  if (depth > 4 || random() < 0.15) return pick(nasty);
  if (Array.isArray(value)) {
    const out = value.map((item) => (random() < 0.5 ? mutate(item, random, nasty, keys, depth + 1) : item));
    if (random() < 0.3) out.push(pick(nasty));
    return random() < 0.1 ? [] : out;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const key of Object.keys(out)) {
      const roll = random();
      if (roll < 0.2) delete out[key];
      else if (roll < 0.6) out[key] = mutate(out[key], random, nasty, keys, depth + 1);
    }
    if (random() < 0.3) out[pick(keys)] = pick(nasty);
    return out;
  }
  return random() < 0.5 ? pick(nasty) : value;
}

/**
 * JSON values that break parsers and handlers, for `mutate`'s `nasty`: wrong types, extremes, blank
 * text, NULs and lone surrogates, prototype keys. Each fuzz test adds its surface's own (long
 * strings, path pieces, tool names).
 */
export const HOSTILE_VALUES: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  -0,
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'ls\udc00x',
  '😀',
  [],
  [null],
  [''],
  {},
  { constructor: 'x' },
  { __proto__: { polluted: true } },
];

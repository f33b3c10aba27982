/**
 * Definition tokens: each shape's count is the tokenizer's count of that shape's JSON, for every
 * tool of the four eval corpora and for edge cases (definitionTokens derives OpenAI's from
 * Anthropic's, so that derivation must hold exactly).
 */
import { readFileSync } from 'node:fs';
import { countTokens as countWithOptions } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { countText, mayHoldLongRun, PIECE } from '../../src/catalog/count-text.js';
import { definitionTokens } from '../../src/catalog/count-tokens.js';
import { countHere, differingPieces, OPENAI_OVER_ANTHROPIC, TokenCounter, wireDefinition } from '../../src/catalog/tokens.js';

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
}
const corpora = ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'];
const tools = corpora.flatMap((corpus) =>
  readFileSync(new URL(`../../../shared/eval/${corpus}/catalog.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line)
    .map((line) => ({ name: line.name, description: line.description ?? '', inputSchema: line.input_schema ?? null, definition: line })),
);
const edgeCases = [
  '',
  ' ',
  '.',
  'Ends with a quote "',
  'Ends with a backslash \\',
  'Émoji 🌦️ and ünïcode',
  'line\nbreak',
  '{"json": "inside"}',
  'Ends a text: <|endoftext|> <|fim_prefix|>',
].flatMap((description) =>
  ['a', 'get_weather', 'X1', 'tool.with.dots'].map((name) => ({ name, description, inputSchema: null, definition: { name, description } })),
);

/** The tokenizer's own count, a special token's text ("<|endoftext|>") read as text, as a provider reads a definition. */
const countTokens = (text: string): number => countWithOptions(text, { disallowedSpecial: new Set() });

/** How many pieces countText cuts `text`'s long runs into: its count may be off by one token a piece. */
const piecesOf = (text: string): number =>
  [...text.matchAll(new RegExp(`[\\p{L}\\p{M}]{${PIECE + 1},}|[^\\s\\p{L}\\p{N}]{${PIECE + 1},}|\\s{${PIECE + 1},}`, 'gu'))].reduce(
    (sum, run) => sum + Math.ceil(run[0].length / PIECE),
    0,
  );

describe('definitionTokens', () => {
  it('counts each shape as the tokenizer counts its JSON, for 8,553 real tools and edge cases', () => {
    expect(tools.length).toBeGreaterThan(8000);
    const wrong: string[] = [];
    const approximated: string[] = [];
    for (const tool of [...tools, ...edgeCases]) {
      const counted = definitionTokens(tool);
      const direct = {
        anthropic: countTokens(JSON.stringify(wireDefinition(tool, 'anthropic'))),
        openai: countTokens(JSON.stringify(wireDefinition(tool, 'openai'))),
        as_sent: countTokens(JSON.stringify(tool.definition)),
      };
      // Exact but for a text with a run longer than PIECE, counted in pieces (two real tools have one).
      const slack = Math.max(
        ...Object.keys(direct).map((shape) =>
          piecesOf(JSON.stringify(shape === 'as_sent' ? tool.definition : wireDefinition(tool, shape as 'anthropic' | 'openai'))),
        ),
      );
      const off = Object.entries(direct).some(([shape, count]) => Math.abs(counted[shape as keyof typeof counted] - count) > slack);
      if (off) wrong.push(`${tool.name}: ${JSON.stringify(counted)} != ${JSON.stringify(direct)} (slack ${slack})`);
      if (slack > 0) approximated.push(tool.name);
    }
    expect(wrong).toEqual([]);
    expect(approximated.length).toBeLessThan(5);
  });

  it('counts a word longer than PIECE in pieces, within a token a piece of the tokenizer', () => {
    const runs = {
      letters: 'x'.repeat(20_000),
      cjk: '漢'.repeat(6_000),
      astral: '𠀀'.repeat(3_000),
      punctuation: '=-'.repeat(8_000),
      spaces: ' '.repeat(9_000),
      backslashes: '\\'.repeat(4_000),
    };
    for (const [kind, run] of Object.entries(runs)) {
      const text = `Before ${run} after, and {"json": "${run.slice(0, 300)}"}`;
      const exact = countTokens(text);
      expect(Math.abs(countText(text) - exact), kind).toBeLessThanOrEqual(piecesOf(text));
      expect(countText(text), kind).toBeGreaterThan(0);
    }
    // No run longer than PIECE: the tokenizer's own count.
    const ordinary = 'A description of ordinary length, with "quotes", numbers 12345 and ünïcode. '.repeat(40);
    expect(countText(ordinary)).toBe(countTokens(ordinary));
  });

  it('looks for long runs only where a quick pass over the character codes says there may be one, and never misses one', async () => {
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const random = seededRandom(9);
    const parts = ['a', 'Z', 'é', '漢', '𠀀', '—', '=', '"', ' ', '\n', '7', '\u0301', '\u00a0', '.'];
    const longRun = new RegExp(`[\\p{L}\\p{M}]{${PIECE + 1},}|[^\\s\\p{L}\\p{N}]{${PIECE + 1},}|\\s{${PIECE + 1},}`, 'u');
    let flagged = 0;
    for (let k = 0; k < 400; k++) {
      let text = '';
      while (text.length < 1_500) text += parts[Math.floor(random() * parts.length)]!.repeat(1 + Math.floor(random() * 120));
      const has = longRun.test(text);
      if (has) expect(mayHoldLongRun(text), JSON.stringify(text.slice(0, 80))).toBe(true);
      if (mayHoldLongRun(text)) flagged++;
    }
    expect(flagged).toBeGreaterThan(0);
    // Ordinary definitions are not flagged (they are counted in one call).
    expect(tools.filter((tool) => mayHoldLongRun(JSON.stringify(tool.definition))).length).toBeLessThan(5);
  });

  it('counts a definition sent in another shape from the pieces where it differs, exactly as the tokenizer counts it whole', async () => {
    const { seededRandom } = await import('../helpers/seeded-random.js');
    const random = seededRandom(3);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const snippets = ["'s", "'", ' ', '  ', '1234', '7', '"x"', 'é', '日本', '\n', ',"a":"b"', 'A', 'Ab', '__', '/', '\\', '{}', "don't", '🌦️', '-', '.5'];
    const wrong: string[] = [];
    let fewer = 0;
    const sample = tools.filter((_, i) => i % 4 === 0);
    for (const tool of sample) {
      const schema = tool.inputSchema ?? { type: 'object', properties: {} };
      const anthropic = JSON.stringify(wireDefinition(tool, 'anthropic'));
      if (piecesOf(anthropic) > 0) continue; // counted in pieces: not exact by design
      const shapes = [
        { name: tool.name, description: tool.description, inputSchema: schema },
        { type: 'function', function: { name: tool.name, description: tool.description, parameters: schema } },
        { description: tool.description, name: tool.name, input_schema: schema },
        { name: tool.name, description: tool.description, input_schema: schema, annotations: { readOnlyHint: true }, server: 'files' },
      ];
      const mutated = (() => {
        const at = Math.floor(random() * (anthropic.length + 1));
        return anthropic.slice(0, at) + pick(snippets) + anthropic.slice(at + Math.floor(random() * 3));
      })();
      for (const text of [...shapes.map((shape) => JSON.stringify(shape)), mutated]) {
        const pieces = differingPieces(anthropic, text);
        if (!pieces) continue;
        const derived = countTokens(anthropic) - countTokens(pieces.less) + countTokens(pieces.more);
        if (derived !== countTokens(text)) wrong.push(`${tool.name}: ${JSON.stringify(pieces)}`);
        if (pieces.more.length < text.length / 4) fewer++;
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    // The point of it: for most shapes the pieces are a small part of the definition.
    expect(fewer).toBeGreaterThan(sample.length * 3);
  });

  it('reuses the Anthropic count only when the definition was sent in exactly that shape', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    const asAnthropic = { name: 'w', description: 'Weather.', inputSchema: schema, definition: { name: 'w', description: 'Weather.', input_schema: schema } };
    expect(definitionTokens(asAnthropic).as_sent).toBe(definitionTokens(asAnthropic).anthropic);
    const asMcp = { ...asAnthropic, definition: { name: 'w', description: 'Weather.', inputSchema: schema } };
    expect(definitionTokens(asMcp).as_sent).toBe(countTokens(JSON.stringify(asMcp.definition)));
  });

  it("OPENAI_OVER_ANTHROPIC is the tokenizer's difference between the two shapes of an empty tool", () => {
    const sample = { name: 'x', description: '', inputSchema: null, definition: null };
    expect(OPENAI_OVER_ANTHROPIC).toBe(
      countTokens(JSON.stringify(wireDefinition(sample, 'openai'))) - countTokens(JSON.stringify(wireDefinition(sample, 'anthropic'))),
    );
  });

  it('TokenCounter remembers counts made when a tool was stored, and counts the rest in order', async () => {
    const counter = new TokenCounter(countHere);
    const [first, second, third] = tools;
    counter.remember('h', { anthropic: 1, openai: 2, as_sent: 3 });
    const counts = await counter.counts([
      { hash: 'a', tool: first! },
      { hash: 'h', tool: second! },
      { hash: 'b', tool: third! },
    ]);
    expect(counts).toEqual([definitionTokens(first!), { anthropic: 1, openai: 2, as_sent: 3 }, definitionTokens(third!)]);
    expect(counts[0]!.openai).toBe(countTokens(JSON.stringify(wireDefinition(first!, 'openai'))));
  });
});

/**
 * Definition tokens: each shape's count is the tokenizer's count of that shape's JSON, for every
 * tool of the four eval corpora and for edge cases (definitionTokens derives OpenAI's from
 * Anthropic's, so that derivation must hold exactly).
 */
import { readFileSync } from 'node:fs';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { definitionTokens } from '../../src/catalog/count-tokens.js';
import { countHere, OPENAI_OVER_ANTHROPIC, TokenCounter, wireDefinition } from '../../src/catalog/tokens.js';

interface Line { name: string; description?: string; input_schema?: Record<string, unknown> | null }
const corpora = ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'];
const tools = corpora.flatMap((corpus) =>
  readFileSync(new URL(`../../../shared/eval/${corpus}/catalog.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line)
    .map((line) => ({ name: line.name, description: line.description ?? '', inputSchema: line.input_schema ?? null, definition: line })),
);
const edgeCases = ['', ' ', '.', 'Ends with a quote "', 'Ends with a backslash \\', 'Émoji 🌦️ and ünïcode', 'line\nbreak', '{"json": "inside"}'].flatMap((description) =>
  ['a', 'get_weather', 'X1', 'tool.with.dots'].map((name) => ({ name, description, inputSchema: null, definition: { name, description } })),
);

describe('definitionTokens', () => {
  it('counts each shape as the tokenizer counts its JSON, for 8,553 real tools and edge cases', () => {
    expect(tools.length).toBeGreaterThan(8000);
    const wrong: string[] = [];
    for (const tool of [...tools, ...edgeCases]) {
      const counted = definitionTokens(tool);
      const direct = {
        anthropic: countTokens(JSON.stringify(wireDefinition(tool, 'anthropic'))),
        openai: countTokens(JSON.stringify(wireDefinition(tool, 'openai'))),
        as_sent: countTokens(JSON.stringify(tool.definition)),
      };
      if (JSON.stringify(counted) !== JSON.stringify(direct)) wrong.push(`${tool.name}: ${JSON.stringify(counted)} != ${JSON.stringify(direct)}`);
    }
    expect(wrong).toEqual([]);
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
    expect(OPENAI_OVER_ANTHROPIC).toBe(countTokens(JSON.stringify(wireDefinition(sample, 'openai'))) - countTokens(JSON.stringify(wireDefinition(sample, 'anthropic'))));
  });

  it('TokenCounter remembers counts made when a tool was stored, and counts the rest in order', async () => {
    const counter = new TokenCounter(countHere);
    const [first, second, third] = tools;
    counter.remember('h', { anthropic: 1, openai: 2, as_sent: 3 });
    const counts = await counter.counts([{ hash: 'a', tool: first! }, { hash: 'h', tool: second! }, { hash: 'b', tool: third! }]);
    expect(counts).toEqual([definitionTokens(first!), { anthropic: 1, openai: 2, as_sent: 3 }, definitionTokens(third!)]);
    expect(counts[0]!.openai).toBe(countTokens(JSON.stringify(wireDefinition(first!, 'openai'))));
  });
});

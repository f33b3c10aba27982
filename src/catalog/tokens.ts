/**
 * Estimated tokens of a tool's definition as a provider receives it, counted with a real tokenizer
 * (gpt-tokenizer's o200k_base, the encoding of OpenAI's current models). For Claude and other
 * models it is an estimate: their tokenizers are not public, and counts differ by some percent.
 * Counted once, when a tool is ingested (definitionTokens), and stored: per content hash for the
 * provider shapes (tool_documents), per catalog row for the definition as that catalog received it
 * (catalog_tools), summed per catalog (catalogs). Inline tools are counted once per content hash and
 * remembered (TokenCounter).
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { LruCache } from '../lru-cache.js';
import type { Tool } from './tool.js';

export type WireShape = 'anthropic' | 'openai' | 'as_sent';

/** One tool's definition tokens in each shape. */
export type DefinitionTokens = Record<WireShape, number>;

type Countable = Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition'>;

/** The tool as each provider's request carries it. */
export function wireDefinition(tool: Countable, shape: WireShape): unknown {
  const schema = tool.inputSchema ?? { type: 'object', properties: {} };
  if (shape === 'anthropic') return { name: tool.name, description: tool.description, input_schema: schema };
  if (shape === 'openai') return { type: 'function', name: tool.name, description: tool.description, parameters: schema };
  return tool.definition;
}

/** Tokens of one definition as JSON: ~40 us for a typical tool (the four eval corpora's 8,553 tools). */
export const countDefinition = (definition: unknown): number => countTokens(JSON.stringify(definition));

/**
 * OpenAI's shape less Anthropic's, the same for every tool: the two JSON texts differ only in a
 * `"type":"function",` prefix and the schema's key, and the tokenizer splits text at punctuation
 * before merging, so the shared rest counts alike (test/unit/tokens.test.ts checks 8,553 tools).
 */
const OPENAI_OVER_ANTHROPIC = (() => {
  const sample = { name: 'x', description: '', inputSchema: null, definition: null };
  return countDefinition(wireDefinition(sample, 'openai')) - countDefinition(wireDefinition(sample, 'anthropic'));
})();

/** Counted once a tool is stored: two tokenizer passes (the definition as sent reuses one when it is Anthropic's shape). */
export function definitionTokens(tool: Countable): DefinitionTokens {
  const anthropicJson = JSON.stringify(wireDefinition(tool, 'anthropic'));
  const anthropic = countTokens(anthropicJson);
  const sentJson = JSON.stringify(tool.definition);
  return { anthropic, openai: anthropic + OPENAI_OVER_ANTHROPIC, as_sent: sentJson === anthropicJson ? anthropic : countTokens(sentJson) };
}

/** Inline tools' counts by shape and content hash (the first definition seen for it), bounded. */
export class TokenCounter {
  readonly #cache = new LruCache<string, number>(100_000);

  count(hash: string, tool: Countable, shape: WireShape): number {
    const key = `${shape}:${hash}`;
    let tokens = this.#cache.get(key);
    if (tokens === undefined) {
      tokens = countDefinition(wireDefinition(tool, shape));
      this.#cache.set(key, tokens);
    }
    return tokens;
  }

  /** Counts made elsewhere (when the tool was stored), so they are not made again. */
  remember(hash: string, tokens: DefinitionTokens): void {
    for (const shape of ['anthropic', 'openai', 'as_sent'] as const) this.#cache.set(`${shape}:${hash}`, tokens[shape]);
  }
}

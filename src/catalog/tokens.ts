/**
 * Estimated tokens of a tool's definition as a provider receives it, counted with a real tokenizer
 * (gpt-tokenizer's o200k_base, the encoding of OpenAI's current models). For Claude and other
 * models it is an estimate: their tokenizers are not public, and counts differ by some percent.
 * Counted once per content hash and wire shape, then remembered (bounded).
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { LruCache } from '../lru-cache.js';
import type { Tool } from './tool.js';

export type WireShape = 'anthropic' | 'openai' | 'as_sent';

/** The tool as each provider's request carries it. */
export function wireDefinition(tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition'>, shape: WireShape): unknown {
  const schema = tool.inputSchema ?? { type: 'object', properties: {} };
  if (shape === 'anthropic') return { name: tool.name, description: tool.description, input_schema: schema };
  if (shape === 'openai') return { type: 'function', name: tool.name, description: tool.description, parameters: schema };
  return tool.definition;
}

export class TokenCounter {
  readonly #cache = new LruCache<string, number>(100_000);

  count(hash: string, tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'definition'>, shape: WireShape): number {
    const key = `${shape}:${hash}`;
    let tokens = this.#cache.get(key);
    if (tokens === undefined) {
      tokens = countTokens(JSON.stringify(wireDefinition(tool, shape)));
      this.#cache.set(key, tokens);
    }
    return tokens;
  }
}

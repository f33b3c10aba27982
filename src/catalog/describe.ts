import type { JsonSchema } from '../lib/tool.js';

const BRIEF_MAX = 200;

/**
 * The description's first sentence: up to the first ". " or ".\n"; else the whole text when it
 * ends in "."; else its first 200 characters and "..." (shorter text is returned as it is).
 */
export function firstSentence(description: string): string {
  const text = description.trim();
  const match = /\.(?: |\n)/.exec(text);
  if (match) return text.slice(0, match.index + 1);
  if (text.endsWith('.') || text.length <= BRIEF_MAX) return text;
  return `${text.slice(0, BRIEF_MAX)}...`;
}

/** Top-level argument names, in schema order. */
export function parameterNames(schema: JsonSchema | null): string[] {
  const properties = schema?.properties;
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return [];
  return Object.keys(properties);
}

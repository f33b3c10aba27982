/**
 * The provider answer shapes of POST /v1/tool-search against the providers' own SDK types (checked
 * by `tsc` in `npm test`'s typecheck) and the budget rule.
 */
import type { ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { anthropicAnswer, openaiAnswer } from '../../src/http/tool-search.js';
import { fillBudget } from '../../src/search/tool-search.js';

const found = [
  {
    name: 'read_file',
    tool: {
      name: 'read_file',
      description: 'Read a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
      definition: {},
      server: null,
      tags: [],
    },
    score: 0.03,
    confidence: 0.5,
    estimatedTokens: 40,
  },
  {
    name: 'ping',
    tool: { name: 'ping', description: 'Ping.', inputSchema: null, definition: {}, server: null, tags: [] },
    score: 0.01,
    confidence: 0.5,
    estimatedTokens: 15,
  },
];

describe('tool-search answer formats', () => {
  it('anthropic: tool_reference blocks that are valid tool_result content', () => {
    const answer = anthropicAnswer(['read_file', 'ping']);
    const result: ToolResultBlockParam = { type: 'tool_result', tool_use_id: 'toolu_1', content: answer.content };
    expect(result.content).toEqual([
      { type: 'tool_reference', tool_name: 'read_file' },
      { type: 'tool_reference', tool_name: 'ping' },
    ]);
  });

  it('openai: a tool_search_output input item with deferred function definitions', () => {
    const item: ResponseInputItem = openaiAnswer(found, 'call_9');
    expect(item).toMatchObject({ type: 'tool_search_output', execution: 'client', status: 'completed', call_id: 'call_9' });
    const output = openaiAnswer(found);
    expect(output.tools[1]).toEqual({
      type: 'function',
      name: 'ping',
      description: 'Ping.',
      parameters: { type: 'object', properties: {} },
      strict: false,
      defer_loading: true,
    });
    expect('call_id' in output).toBe(false);
  });

  it('fills a token budget best first, and always answers at least one tool', () => {
    expect(fillBudget(found, 50).map((item) => item.name)).toEqual(['read_file']);
    expect(fillBudget(found, 55).map((item) => item.name)).toEqual(['read_file', 'ping']);
    expect(fillBudget(found, 1).map((item) => item.name)).toEqual(['read_file']);
    expect(fillBudget(found, undefined)).toHaveLength(2);
  });
});

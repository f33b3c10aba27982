/**
 * The provider answer shapes of POST /v1/tool-search against the providers' own SDK types (checked
 * by `tsc` in `npm test`'s typecheck: @anthropic-ai/sdk, openai, @google/genai), or, where the
 * provider publishes no type for it (OpenRouter's custom search result), against a JSON Schema
 * transcribed from its docs; and the budget rule.
 */
import type { ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { Interactions } from '@google/genai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ResponseInputItem, ResponseToolSearchOutputItemParam } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { additionalToolsAnswer, anthropicAnswer, formatAnswer, geminiAnswer, openaiAnswer, toolSearchRequest } from '../../src/http/tool-search.js';
import { fillBudget, type FoundTool, type ToolSearchResult } from '../../src/search/tool-search.js';

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

  // Two servers' tools and one of none, ranked crm, files, crm, none.
  const served: FoundTool[] = (
    [
      ['list_orders', 'crm'],
      ['read_file', 'files'],
      ['find_customer', 'crm'],
      ['ping', null],
    ] as const
  ).map(([name, server], rank) => ({
    name,
    tool: { name, description: `${name}.`, inputSchema: { type: 'object', properties: {} }, definition: {}, server, tags: [] },
    score: 1 - rank / 10,
    confidence: 0.5,
    estimatedTokens: 20,
  }));

  it('openai with namespaces: each server one namespace where its best tool ranks, a tool of no server alone', () => {
    const output: ResponseToolSearchOutputItemParam = openaiAnswer(served, 'call_3', { crm: 'CRM: customers and orders.' });
    const item: ResponseInputItem = output;
    expect(item.type).toBe('tool_search_output');
    const fn = (name: string) => ({
      type: 'function',
      name,
      description: `${name}.`,
      parameters: { type: 'object', properties: {} },
      strict: false,
      defer_loading: true,
    });
    expect(output.tools).toEqual([
      { type: 'namespace', name: 'crm', description: 'CRM: customers and orders.', tools: [fn('list_orders'), fn('find_customer')] },
      { type: 'namespace', name: 'files', description: 'Tools of the files server.', tools: [fn('read_file')] },
      fn('ping'),
    ]);
    // Without namespaces, the same functions in ranked order.
    expect(openaiAnswer(served).tools.map((tool) => tool.name)).toEqual(['list_orders', 'read_file', 'find_customer', 'ping']);
  });

  it('openai_additional_tools: an additional_tools input item, its functions not deferred', () => {
    const answer = additionalToolsAnswer(served, {});
    const item: ResponseInputItem = answer;
    const typed: ResponseInputItem.AdditionalTools = answer;
    expect(item).toMatchObject({ type: 'additional_tools', role: 'developer' });
    expect(typed.tools.map((tool) => (tool as { name: string }).name)).toEqual(['crm', 'files', 'ping']);
    expect(JSON.stringify(answer)).not.toContain('defer_loading');
    expect(additionalToolsAnswer(served).tools[0]).toEqual({
      type: 'function',
      name: 'list_orders',
      description: 'list_orders.',
      parameters: { type: 'object', properties: {} },
      strict: false,
    });
  });

  it('gemini: an Interactions tool_search_result step answering the call, usable as input', () => {
    const step: Interactions.ToolSearchResultStep = geminiAnswer(served, 'call_g');
    const input: Interactions.Step[] = [step];
    expect(input[0]).toEqual({
      type: 'tool_search_result',
      call_id: 'call_g',
      result: served.map((found) => ({ type: 'function', name: found.name, description: `${found.name}.`, parameters: { type: 'object', properties: {} } })),
    });
    // A result from memory without its definition is left out, as in the openai formats.
    expect(geminiAnswer([{ ...served[0]!, tool: undefined }, served[3]!], 'c').result.map((fn) => fn.name)).toEqual(['ping']);
  });

  it("openrouter: the custom strategy's search result, checked against the schema its docs describe", () => {
    /**
     * Transcribed from OpenRouter's docs (guides/features/server-tools/tool-search, "Deferred Tools
     * Protocol": with `search: {type: "custom", tool_id, result_key}` "your client runs it and returns
     * matching tool names under result_key in its result"; `max_results` 1 to 100) and its SDKs'
     * DeferredCustomSearch ("Caller-executed search returning existing tool identities under
     * result_key"). No SDK on npm types the result itself.
     */
    const customSearchResult = (resultKey: string, maxResults: number) => ({
      type: 'object',
      required: [resultKey],
      properties: { [resultKey]: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: maxResults } },
    });
    const ajv = new Ajv2020({ strict: true });
    const result: ToolSearchResult = { results: served, confidence: 0.5, unmatchedTerms: [], tokens: { offered: 80, selected: 80 }, timings: {} };
    for (const [resultKey, maxResults] of [
      ['tool_names', 5],
      ['found', 100],
    ] as const) {
      const body = toolSearchRequest.parse({ query: 'orders', tools: [{}], format: 'openrouter', result_key: resultKey, max_results: maxResults });
      const answer = formatAnswer(body, { ...result, results: served.slice(0, maxResults) });
      const validate = ajv.compile(customSearchResult(resultKey, maxResults));
      expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
      expect(answer).toEqual({ [resultKey]: ['list_orders', 'read_file', 'find_customer', 'ping'] });
    }
  });

  it('fills a token budget best first, and always answers at least one tool', () => {
    expect(fillBudget(found, 50).map((item) => item.name)).toEqual(['read_file']);
    expect(fillBudget(found, 55).map((item) => item.name)).toEqual(['read_file', 'ping']);
    expect(fillBudget(found, 1).map((item) => item.name)).toEqual(['read_file']);
    expect(fillBudget(found, undefined)).toHaveLength(2);
  });
});

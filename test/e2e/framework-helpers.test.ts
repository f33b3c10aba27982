/**
 * The client package's framework helpers in agent loops with the real framework packages and a
 * scripted model: the model searches, toolsift answers through the helper, and the model then
 * calls the tool it found.
 */
import type { ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { generateText, isStepCount, tool, toolSearch } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkSearch, anthropicToolResult, rankToolNames } from '../../client/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const call = (id: string, toolName: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});
const say = (text: string) => ({ content: [{ type: 'text' as const, text }], finishReason: { unified: 'stop' as const, raw: undefined }, usage, warnings: [] });

describe('framework helpers in agent loops', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'fw-key:fw-tenant' });
  });
  afterAll(() => app.close());
  const client = () => ({ baseUrl: app.url, apiKey: 'fw-key' });

  it('Vercel AI SDK: toolSearch({ search }) ranks the deferred tools with toolsift, then the model calls the one found', async () => {
    const weatherCalls: string[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: [call('c1', 'toolSearch', { query: 'weather forecast for a city' }), call('c2', 'get_weather', { city: 'Paris' }), say('It is sunny in Paris.')],
    });
    const result = await generateText({
      model,
      prompt: 'What is the weather in Paris?',
      stopWhen: isStepCount(5),
      tools: {
        toolSearch: toolSearch({ search: aiSdkSearch(client(), { maxResults: 1 }) }),
        get_weather: tool({
          description: 'Get the current weather and the forecast for a city.',
          inputSchema: z.object({ city: z.string() }),
          deferLoading: true,
          execute: async ({ city }) => {
            weatherCalls.push(city);
            return { city, sky: 'sunny' };
          },
        }),
        send_email: tool({ description: 'Send an email to a recipient.', inputSchema: z.object({ to: z.string() }), deferLoading: true, execute: async () => 'sent' }),
        read_file: tool({ description: 'Read a file from disk.', inputSchema: z.object({ path: z.string() }), deferLoading: true, execute: async () => '' }),
      },
    });
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.text).toBe('It is sunny in Paris.');
    // What the model was offered: the search tool first, then the tool toolsift found (and only it).
    const offered = model.doGenerateCalls.map((options) => (options.tools ?? []).map((entry) => ('name' in entry ? entry.name : '')).sort());
    expect(offered[0]).not.toContain('get_weather');
    expect(offered[1]).toContain('get_weather');
    expect(offered[1]).not.toContain('send_email');
  });

  it('Anthropic Messages: a tool_use of the search tool becomes a tool_result with tool_reference blocks', async () => {
    const deferred = [
      { name: 'get_weather', description: 'Get the current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'send_email', description: 'Send an email.', input_schema: { type: 'object', properties: { to: { type: 'string' } } } },
    ];
    const result: ToolResultBlockParam = await anthropicToolResult(client(), { id: 'toolu_01', input: { query: 'weather in Paris' } }, deferred, { maxResults: 1 });
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'tool_reference', tool_name: 'get_weather' }] });
  });

  it('plain ranked names for LangChain-style middleware that narrows request.tools', async () => {
    const tools = [
      { name: 'get_weather', description: 'Weather for a city.' },
      { name: 'send_email', description: 'Send an email message.' },
      { name: 'read_file', description: 'Read a file.' },
    ];
    const keep = new Set(await rankToolNames(client(), 'email my boss', tools, { maxResults: 1 }));
    const narrowed = tools.filter((candidate) => keep.has(candidate.name));
    expect(narrowed.map((candidate) => candidate.name)).toEqual(['send_email']);
  });
});

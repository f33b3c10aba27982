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
import { Agent, run, tool as agentTool, toolSearchTool, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { createAgent, createMiddleware, FakeToolCallingModel, HumanMessage, tool as langchainTool } from 'langchain';
import { agentsToolSearch, aiSdkSearch, anthropicToolResult, narrowTools, rankToolNames, toolSearchParameters } from '../../client/index.js';
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

  it('OpenAI Agents SDK: toolSearchTool({ execution: "client", execute }) loads the deferred tool toolsift ranks first, then the agent calls it', async () => {
    const weatherCalls: string[] = [];
    const requests: ModelRequest[] = [];
    // A scripted Responses model: search, call what was loaded, answer.
    const script: ModelResponse['output'][] = [
      [{ type: 'tool_search_call', id: 'ts_1', callId: 'call_search', execution: 'client', status: 'completed', arguments: { query: 'weather forecast for a city' } }],
      [{ type: 'function_call', id: 'fc_1', callId: 'call_weather', name: 'get_weather', status: 'completed', arguments: JSON.stringify({ city: 'Paris' }) }],
      [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'It is sunny in Paris.' }] }],
    ];
    const model: Model = {
      async getResponse(request) {
        requests.push(request);
        return { usage: new Usage(), output: script.shift()!, responseId: `resp_${requests.length}` };
      },
      getStreamedResponse() {
        throw new Error('not streamed');
      },
    };
    const agent = new Agent({
      name: 'assistant',
      model,
      tools: [
        toolSearchTool({ execution: 'client', parameters: toolSearchParameters, execute: agentsToolSearch(client(), { maxResults: 1 }) }),
        agentTool({
          name: 'get_weather',
          description: 'Get the current weather and the forecast for a city.',
          parameters: z.object({ city: z.string() }),
          deferLoading: true,
          execute: async ({ city }) => {
            weatherCalls.push(city);
            return `sunny in ${city}`;
          },
        }),
        agentTool({ name: 'send_email', description: 'Send an email to a recipient.', parameters: z.object({ to: z.string() }), deferLoading: true, execute: async () => 'sent' }),
        agentTool({ name: 'read_file', description: 'Read a file from disk.', parameters: z.object({ path: z.string() }), deferLoading: true, execute: async () => '' }),
      ],
    });
    const result = await run(agent, 'What is the weather in Paris?');
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.finalOutput).toBe('It is sunny in Paris.');
    // The second model call carries the search's answer: get_weather's definition, and only it.
    const input = requests[1]!.input as Array<{ type?: string; tools?: Array<{ name?: string }> }>;
    const searchOutput = input.find((item) => item.type === 'tool_search_output');
    expect(searchOutput?.tools?.map((loaded) => loaded.name)).toEqual(['get_weather']);
    // The deferred tools go to the provider marked as such (Responses keeps their schemas out of
    // the model's context until a search loads them).
    const deferredFlags = requests[0]!.tools.filter((offered) => offered.type === 'function').map((offered) => [offered.name, (offered as { deferLoading?: boolean }).deferLoading]);
    expect(deferredFlags).toEqual([['get_weather', true], ['send_email', true], ['read_file', true]]);
  });

  it('Anthropic Messages: a tool_use of the search tool becomes a tool_result with tool_reference blocks', async () => {
    const deferred = [
      { name: 'get_weather', description: 'Get the current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'send_email', description: 'Send an email.', input_schema: { type: 'object', properties: { to: { type: 'string' } } } },
    ];
    const result: ToolResultBlockParam = await anthropicToolResult(client(), { id: 'toolu_01', input: { query: 'weather in Paris' } }, deferred, { maxResults: 1 });
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'tool_reference', tool_name: 'get_weather' }] });
  });

  it('LangChain createAgent: middleware narrows request.tools to what toolsift ranks for the user message, and the agent calls it', async () => {
    const weatherCalls: string[] = [];
    const tools = [
      langchainTool(async ({ city }: { city: string }) => (weatherCalls.push(city), `sunny in ${city}`), {
        name: 'get_weather',
        description: 'Get the current weather and the forecast for a city.',
        schema: z.object({ city: z.string() }),
      }),
      langchainTool(async () => 'sent', { name: 'send_email', description: 'Send an email to a recipient.', schema: z.object({ to: z.string() }) }),
      langchainTool(async () => '', { name: 'read_file', description: 'Read a file from disk.', schema: z.object({ path: z.string() }) }),
    ];
    const toolsift = createMiddleware({
      name: 'toolsift',
      wrapModelCall: async (request, handler) => {
        const asked = [...request.messages].reverse().find(HumanMessage.isInstance)?.text ?? '';
        return handler({ ...request, tools: await narrowTools(client(), asked, request.tools as Array<{ name?: string; description?: string }>, { maxResults: 1 }) as typeof request.tools });
      },
    });
    // Inside toolsift's middleware: what the model is bound with on each call.
    const offered: string[][] = [];
    const recorder = createMiddleware({
      name: 'recorder',
      wrapModelCall: async (request, handler) => {
        offered.push(request.tools.map((entry) => (entry as { name: string }).name));
        return handler(request);
      },
    });
    const model = new FakeToolCallingModel({ toolCalls: [[{ name: 'get_weather', args: { city: 'Paris' }, id: 'call_1' }], []] });
    const agent = createAgent({ model, tools, middleware: [toolsift, recorder] });
    const result = await agent.invoke({ messages: [new HumanMessage('What is the weather forecast in Paris?')] });
    expect(weatherCalls).toEqual(['Paris']);
    expect(offered).toEqual([['get_weather'], ['get_weather']]);
    expect(result.messages.some((message) => message.type === 'tool' && String(message.content).includes('sunny in Paris'))).toBe(true);
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

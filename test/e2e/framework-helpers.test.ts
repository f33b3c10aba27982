/**
 * The client package's framework helpers in agent loops with the real framework packages and a
 * scripted model: the model searches, toolsift answers through the helper, and the model then
 * calls the tool it found.
 */
import type { ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { generateText, isStepCount, tool, toolSearch } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, run, tool as agentTool, toolSearchTool, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { createAgent, createMiddleware, FakeToolCallingModel, HumanMessage, tool as langchainTool } from 'langchain';
import {
  agentsToolSearch,
  aiSdkSearch,
  anthropicToolResult,
  narrowTools,
  openaiToolSearchOutput,
  rankToolNames,
  ToolsiftUnavailable,
  toolSearchParameters,
  useTracker,
} from '../../client/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { getCatalog } from '../../src/store/catalog-store.js';
import { loadFeedback } from '../../src/store/feedback-store.js';

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const call = (id: string, toolName: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});
const say = (text: string) => ({ content: [{ type: 'text' as const, text }], finishReason: { unified: 'stop' as const, raw: undefined }, usage, warnings: [] });

/**
 * A Vercel AI SDK generateText loop with a scripted model (search, call what was found, answer)
 * and three deferred tools; `search` is the toolSearch callback under test.
 */
async function aiSdkRun(search: ReturnType<typeof aiSdkSearch>) {
  const weatherCalls: string[] = [];
  const model = new MockLanguageModelV4({
    doGenerate: [
      call('c1', 'toolSearch', { query: 'weather forecast for a city' }),
      call('c2', 'get_weather', { city: 'Paris' }),
      say('It is sunny in Paris.'),
    ],
  });
  const result = await generateText({
    model,
    prompt: 'What is the weather in Paris?',
    stopWhen: isStepCount(5),
    tools: {
      toolSearch: toolSearch({ search }),
      get_weather: tool({
        description: 'Get the current weather and the forecast for a city.',
        inputSchema: z.object({ city: z.string() }),
        deferLoading: true,
        execute: async ({ city }) => {
          weatherCalls.push(city);
          return { city, sky: 'sunny' };
        },
      }),
      send_email: tool({
        description: 'Send an email to a recipient.',
        inputSchema: z.object({ to: z.string() }),
        deferLoading: true,
        execute: async () => 'sent',
      }),
      read_file: tool({ description: 'Read a file from disk.', inputSchema: z.object({ path: z.string() }), deferLoading: true, execute: async () => '' }),
    },
  });
  // What the model was offered on each call.
  const offered = model.doGenerateCalls.map((options) => (options.tools ?? []).map((entry) => ('name' in entry ? entry.name : '')).sort());
  return { weatherCalls, result, offered };
}

/**
 * An OpenAI Agents SDK run with a scripted Responses model (search, call what was loaded, answer)
 * and three deferred tools; `execute` is the client-executed tool search under test.
 */
async function agentsRun(execute: ReturnType<typeof agentsToolSearch>) {
  const weatherCalls: string[] = [];
  const requests: ModelRequest[] = [];
  const script: ModelResponse['output'][] = [
    [
      {
        type: 'tool_search_call',
        id: 'ts_1',
        callId: 'call_search',
        execution: 'client',
        status: 'completed',
        arguments: { query: 'weather forecast for a city' },
      },
    ],
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
      toolSearchTool({ execution: 'client', parameters: toolSearchParameters, execute }),
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
      agentTool({
        name: 'send_email',
        description: 'Send an email to a recipient.',
        parameters: z.object({ to: z.string() }),
        deferLoading: true,
        execute: async () => 'sent',
      }),
      agentTool({
        name: 'read_file',
        description: 'Read a file from disk.',
        parameters: z.object({ path: z.string() }),
        deferLoading: true,
        execute: async () => '',
      }),
    ],
  });
  const result = await run(agent, 'What is the weather in Paris?');
  // The second model call carries the search's answer: the loaded tools' definitions.
  const input = requests[1]!.input as Array<{ type?: string; tools?: Array<{ name?: string }> }>;
  const loaded = input.find((item) => item.type === 'tool_search_output')?.tools?.map((tool) => tool.name);
  return { weatherCalls, requests, result, loaded };
}

describe('framework helpers in agent loops', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'fw-key:fw-tenant' });
  });
  afterAll(() => app.close());
  const client = () => ({ baseUrl: app.url, apiKey: 'fw-key' });

  it('Vercel AI SDK: toolSearch({ search }) ranks the deferred tools with toolsift, then the model calls the one found', async () => {
    const { weatherCalls, result, offered } = await aiSdkRun(aiSdkSearch(client(), { maxResults: 1 }));
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.text).toBe('It is sunny in Paris.');
    // The search tool first, then the tool toolsift found (and only it).
    expect(offered[0]).not.toContain('get_weather');
    expect(offered[1]).toContain('get_weather');
    expect(offered[1]).not.toContain('send_email');
  });

  it('Vercel AI SDK with learning (opt-in): the tool the model calls after a catalog search is sent as feedback, and ranks the next such search', async () => {
    const catalog = `fw-learn-${Date.now()}`;
    const tools = [
      { name: 'get_weather', description: 'Get the current weather and the forecast for a city.' },
      { name: 'city_forecast_archive', description: 'Weather forecast archive for a city: past forecasts.' },
      { name: 'send_email', description: 'Send an email to a recipient.' },
    ];
    const headers = { authorization: 'Bearer fw-key' };
    expect((await app.request('PUT', `/v1/catalogs/${catalog}`, { tools }, headers)).status).toBe(200);
    const errors: Error[] = [];
    const tracker = useTracker(client(), { catalog, onError: (error) => errors.push(error) });
    const model = new MockLanguageModelV4({
      doGenerate: [call('c1', 'toolSearch', { query: 'weather forecast for a city' }), call('c2', 'get_weather', { city: 'Paris' }), say('Sunny.')],
    });
    await generateText({
      model,
      prompt: 'What is the weather in Paris?',
      stopWhen: isStepCount(5),
      tools: {
        toolSearch: toolSearch({ search: aiSdkSearch(client(), { catalog, maxResults: 3, learn: tracker }) }),
        get_weather: tool({
          description: tools[0]!.description,
          inputSchema: z.object({ city: z.string() }),
          deferLoading: true,
          execute: async () => 'sunny',
        }),
      },
      // The loop's own hook tells the tracker what the model called.
      onStepFinish: (step) => {
        for (const toolCall of step.toolCalls) tracker.called(toolCall.toolName);
      },
    });
    const learned = async () => {
      const found = await app.request('POST', `/v1/catalogs/${catalog}/search`, { query: 'weather forecast for a city', top_k: 3, explain: true }, headers);
      return found.body.results.find((result: { name: string }) => result.name === 'get_weather')?.explain.learned;
    };
    const deadline = Date.now() + 10_000;
    while (!(await learned()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await learned()).toEqual({ rank: 1, events: 1, vote: expect.any(Number) });
    // The event says what the model was shown with it and passed over: the other tool the search ranked (send_email shares no word).
    const stored = await loadFeedback(app.deps.search.db, (await getCatalog(app.deps.search.db, 'fw-tenant', catalog))!.id, {
      afterId: 0,
      sinceSeconds: 3600,
      model: null,
      limit: 10,
    });
    expect(stored.map((row) => row.toolName)).toEqual(['get_weather']);
    expect(stored[0]!.passedOver).toEqual(['city_forecast_archive']);
    expect(errors).toEqual([]);
  });

  it('OpenAI Agents SDK: toolSearchTool({ execution: "client", execute }) loads the deferred tool toolsift ranks first, then the agent calls it', async () => {
    const { weatherCalls, requests, result, loaded } = await agentsRun(agentsToolSearch(client(), { maxResults: 1 }));
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.finalOutput).toBe('It is sunny in Paris.');
    expect(loaded).toEqual(['get_weather']);
    // The deferred tools go to the provider marked as such (Responses keeps their schemas out of
    // the model's context until a search loads them).
    const deferredFlags = requests[0]!.tools
      .filter((offered) => offered.type === 'function')
      .map((offered) => [offered.name, (offered as { deferLoading?: boolean }).deferLoading]);
    expect(deferredFlags).toEqual([
      ['get_weather', true],
      ['send_email', true],
      ['read_file', true],
    ]);
  });

  it('Anthropic Messages: a tool_use of the search tool becomes a tool_result with tool_reference blocks', async () => {
    const deferred = [
      { name: 'get_weather', description: 'Get the current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'send_email', description: 'Send an email.', input_schema: { type: 'object', properties: { to: { type: 'string' } } } },
    ];
    const result: ToolResultBlockParam = await anthropicToolResult(client(), { id: 'toolu_01', input: { query: 'weather in Paris' } }, deferred, {
      maxResults: 1,
    });
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'tool_reference', tool_name: 'get_weather' }] });
  });

  /** A LangChain createAgent loop whose middleware narrows request.tools with narrowTools; the scripted model calls get_weather. */
  async function langchainRun(asked: string) {
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
        const query = [...request.messages].reverse().find(HumanMessage.isInstance)?.text ?? '';
        return handler({
          ...request,
          tools: (await narrowTools(client(), query, request.tools as Array<{ name?: string; description?: string }>, {
            maxResults: 1,
          })) as typeof request.tools,
        });
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
    const result = await agent.invoke({ messages: [new HumanMessage(asked)] });
    return { weatherCalls, offered, result };
  }

  it('LangChain createAgent: middleware narrows request.tools to what toolsift ranks for the user message, and the agent calls it', async () => {
    const { weatherCalls, offered, result } = await langchainRun('What is the weather forecast in Paris?');
    expect(weatherCalls).toEqual(['Paris']);
    expect(offered).toEqual([['get_weather'], ['get_weather']]);
    expect(result.messages.some((message) => message.type === 'tool' && String(message.content).includes('sunny in Paris'))).toBe(true);
  });

  it('LangChain createAgent: a message the ranking matches no tool for leaves request.tools as they were, not empty', async () => {
    // Without a model toolsift ranks by words alone, and no tool holds any of these.
    const { weatherCalls, offered } = await langchainRun('Should I pack an umbrella for Paris tomorrow?');
    expect(offered).toEqual([
      ['get_weather', 'send_email', 'read_file'],
      ['get_weather', 'send_email', 'read_file'],
    ]);
    expect(weatherCalls).toEqual(['Paris']);
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

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('framework helpers when toolsift is unavailable', () => {
  let app: TestApp;
  // Accepts connections and never answers: a toolsift that hangs.
  let silent: Server;
  const sockets: Socket[] = [];
  let down: string;
  beforeAll(async () => {
    app = await startTestApp({ API_KEYS: 'fw-key:fw-tenant' });
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    down = `http://127.0.0.1:${await closedPort()}`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    silent?.close();
    await app?.close();
  });
  const hanging = () => `http://127.0.0.1:${(silent.address() as { port: number }).port}`;

  it('Vercel AI SDK: with nothing listening, the search answers from a keyword match of the deferred tools, says so, and the loop goes on', async () => {
    const told: Error[] = [];
    const { weatherCalls, result, offered } = await aiSdkRun(
      aiSdkSearch({ baseUrl: down, apiKey: 'fw-key' }, { maxResults: 1, onFallback: (error) => told.push(error) }),
    );
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.text).toBe('It is sunny in Paris.');
    expect(told).toHaveLength(1);
    expect(told[0]).toBeInstanceOf(ToolsiftUnavailable);
    expect(told[0]!.message).toMatch(/unreachable/);
    expect(offered[1]).toContain('get_weather');
    expect(offered[1]).not.toContain('send_email');
  });

  it('OpenAI Agents SDK: a toolsift that never answers times out, and the deferred tool the keywords match is loaded and called', async () => {
    const told: Error[] = [];
    const { weatherCalls, result, loaded } = await agentsRun(
      agentsToolSearch({ baseUrl: hanging() }, { maxResults: 1, timeoutMs: 300, onFallback: (error) => told.push(error) }),
    );
    expect(weatherCalls).toEqual(['Paris']);
    expect(result.finalOutput).toBe('It is sunny in Paris.');
    expect(told.map((error) => error.message)).toEqual(['toolsift tool-search did not answer within 300 ms']);
    expect(sockets.length).toBeGreaterThan(0);
    expect(loaded).toEqual(['get_weather']);
  });

  it('Anthropic and OpenAI Responses answers from the fallback keep their shapes; fallback "none" throws', async () => {
    const deferred = [
      { name: 'send_email', description: 'Send an email.', input_schema: { type: 'object', properties: { to: { type: 'string' } } } },
      { name: 'get_weather', description: 'Get the current weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ];
    const quiet = { onFallback: () => {} };
    expect(await anthropicToolResult({ baseUrl: down }, { id: 'toolu_01', input: { query: 'weather in Paris' } }, deferred, quiet)).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_01',
      content: [{ type: 'tool_reference', tool_name: 'get_weather' }],
    });
    // OpenAI Chat-shaped candidates: the definition is unwrapped as toolsift's own answer would be.
    const chat = deferred.map(({ name, description, input_schema }) => ({ type: 'function', function: { name, description, parameters: input_schema } }));
    expect(await openaiToolSearchOutput({ baseUrl: down }, 'send an email', chat, { ...quiet, callId: 'call_1' })).toEqual({
      type: 'tool_search_output',
      execution: 'client',
      status: 'completed',
      call_id: 'call_1',
      tools: [
        { type: 'function', name: 'send_email', description: 'Send an email.', parameters: deferred[0]!.input_schema, strict: false, defer_loading: true },
      ],
    });
    // Nothing matches: an empty answer, not every tool.
    expect(await rankToolNames({ baseUrl: down }, 'translate this poem', deferred, quiet)).toEqual([]);
    await expect(rankToolNames({ baseUrl: down }, 'weather', deferred, { fallback: 'none' })).rejects.toBeInstanceOf(ToolsiftUnavailable);
    // A stored catalog's tools are only toolsift's: nothing to fall back on.
    await expect(rankToolNames({ baseUrl: down }, 'weather', undefined, { catalog: 'tools', ...quiet })).rejects.toBeInstanceOf(ToolsiftUnavailable);
  });

  it('answers that need fixing are thrown, not hidden: a wrong key (401), a bad request (400)', async () => {
    const tools = [{ name: 'get_weather', description: 'Weather for a city.' }];
    const told: Error[] = [];
    await expect(narrowTools({ baseUrl: app.url, apiKey: 'wrong' }, 'weather', tools, { onFallback: (error) => told.push(error) })).rejects.toThrow(
      /answered 401/,
    );
    await expect(
      rankToolNames({ baseUrl: app.url, apiKey: 'fw-key' }, 'weather', tools, { tags: [''], onFallback: (error) => told.push(error) }),
    ).rejects.toThrow(/answered 400/);
    expect(told).toEqual([]);
    // The same helper against the live service: toolsift's answer, no fallback.
    expect(await narrowTools({ baseUrl: app.url, apiKey: 'fw-key' }, 'weather', tools, { onFallback: (error) => told.push(error) })).toEqual(tools);
    expect(told).toEqual([]);
  });
});

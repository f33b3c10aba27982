/**
 * The client helpers' fallback (client/tool-search.ts): which answers count as toolsift being
 * unavailable, and the keyword match that stands in. The server here is a stand-in that answers
 * fixed statuses; the helpers against a real toolsift, down, hanging or live, are in
 * test/e2e/framework-helpers.test.ts.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keywordMatch, rankToolNames, ToolsiftUnavailable } from '../../client/index.js';

describe('keywordMatch', () => {
  const tools = [
    { name: 'send_email', description: 'Send a message to a recipient.' },
    { type: 'function', function: { name: 'getWeatherForecast', description: 'Forecast for a city.' } },
    { name: 'read_file', description: 'Read the weather log from disk.' },
    { description: 'no name: never picked' },
  ];
  it('counts a query word twice in the name (camelCase and snake_case split) and once in the description', () => {
    // getWeatherForecast: weather 2 + forecast 2 + 1; read_file: weather in its description, 1.
    expect(keywordMatch('Weather forecast', tools)).toEqual([1, 2]);
  });
  it('leaves out tools that match nothing, keeps the candidates order in a tie, and cuts at maxResults', () => {
    expect(keywordMatch('translate a poem', [{ name: 'x', description: 'y' }])).toEqual([]);
    expect(keywordMatch('message recipient disk log', tools)).toEqual([0, 2]);
    expect(keywordMatch('send read', tools, 1)).toEqual([0]);
  });
});

describe('what counts as toolsift being unavailable', () => {
  let server: Server;
  let status = 503;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'x', message: `status ${status}` } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => server?.close());
  const baseUrl = () => `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const tools = [
    { name: 'send_email', description: 'Send an email.' },
    { name: 'get_weather', description: 'Weather for a city.' },
  ];

  it.each([500, 502, 503, 504, 408, 429])('%i: the keyword match answers, and onFallback is told', async (code) => {
    status = code;
    const told: Error[] = [];
    expect(await rankToolNames({ baseUrl: baseUrl() }, 'weather', tools, { onFallback: (error) => told.push(error) })).toEqual(['get_weather']);
    expect(told).toHaveLength(1);
    expect(told[0]).toBeInstanceOf(ToolsiftUnavailable);
    expect(told[0]!.message).toContain(`answered ${code}`);
  });

  it.each([400, 401, 403, 404, 413, 415])('%i: thrown as it is', async (code) => {
    status = code;
    const told: Error[] = [];
    const failed = await rankToolNames({ baseUrl: baseUrl() }, 'weather', tools, { onFallback: (error) => told.push(error) }).catch((error: Error) => error);
    expect(failed).toBeInstanceOf(Error);
    expect(failed).not.toBeInstanceOf(ToolsiftUnavailable);
    expect((failed as Error).message).toContain(`answered ${code}`);
    expect(told).toEqual([]);
  });
});

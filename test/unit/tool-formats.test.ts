import { describe, expect, it } from 'vitest';
import { detectToolFormat, extractToolList, normalizeTool, normalizeTools, ToolFormatError, TOOL_NAME_MAX } from '../../src/catalog/tool-formats.js';

const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'],
};

/** The message of the ToolFormatError that normalizing `raw` throws. */
function rejection(raw: unknown): ToolFormatError {
  try {
    normalizeTool(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolFormatError);
    return error as ToolFormatError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
}

describe('normalizeTool: accepted shapes', () => {
  it('reads an MCP tool and ignores annotations, _meta and title when a description exists', () => {
    const raw = {
      name: 'get_weather',
      title: 'Weather',
      description: 'Current weather for a city.',
      inputSchema: schema,
      annotations: { readOnlyHint: true },
      _meta: { vendor: 'x' },
    };
    const tool = normalizeTool(raw);
    expect(tool).toEqual({
      name: 'get_weather',
      description: 'Current weather for a city.',
      inputSchema: schema,
      tags: [],
      server: null,
      format: 'mcp',
      definition: raw,
    });
    expect(tool.definition).toBe(raw);
  });

  it('falls back to the MCP title when there is no description, and to "" when neither exists', () => {
    expect(normalizeTool({ name: 'a', title: 'Does A', inputSchema: {} }).description).toBe('Does A');
    expect(normalizeTool({ name: 'a', inputSchema: {} }).description).toBe('');
  });

  it('reads an OpenAI Chat Completions tool', () => {
    const raw = { type: 'function', function: { name: 'get_weather', description: 'Weather.', parameters: schema } };
    expect(normalizeTool(raw)).toMatchObject({
      name: 'get_weather',
      description: 'Weather.',
      inputSchema: schema,
      format: 'openai_chat',
    });
  });

  it('reads an OpenAI Chat tool without description or parameters', () => {
    expect(normalizeTool({ type: 'function', function: { name: 'ping' } })).toMatchObject({
      name: 'ping',
      description: '',
      inputSchema: null,
      format: 'openai_chat',
    });
  });

  it('reads an OpenAI Responses tool', () => {
    const raw = { type: 'function', name: 'get_weather', description: 'Weather.', parameters: schema, strict: true };
    expect(normalizeTool(raw)).toMatchObject({
      name: 'get_weather',
      description: 'Weather.',
      inputSchema: schema,
      format: 'openai_responses',
    });
    expect(normalizeTool({ type: 'function', name: 'ping' })).toMatchObject({ inputSchema: null, description: '' });
  });

  it('reads an Anthropic tool', () => {
    expect(normalizeTool({ name: 'get_weather', description: 'Weather.', input_schema: schema })).toMatchObject({
      name: 'get_weather',
      description: 'Weather.',
      inputSchema: schema,
      format: 'anthropic',
    });
    expect(normalizeTool({ name: 'get_weather', input_schema: schema }).description).toBe('');
  });

  it('reads the gateway wrapper with parameters, or with nothing but a name', () => {
    expect(normalizeTool({ name: 'w', description: 'Wrapped.', parameters: schema })).toMatchObject({
      name: 'w',
      description: 'Wrapped.',
      inputSchema: schema,
      format: 'gateway',
    });
    expect(normalizeTool({ name: 'bare' })).toMatchObject({ name: 'bare', description: '', inputSchema: null, format: 'gateway' });
  });

  const providerShapes: [string, Record<string, unknown>][] = [
    ['MCP', { name: 'inner', description: 'Inner description.', inputSchema: schema }],
    ['OpenAI Chat', { type: 'function', function: { name: 'inner', description: 'Inner description.', parameters: schema } }],
    ['OpenAI Responses', { type: 'function', name: 'inner', description: 'Inner description.', parameters: schema }],
    ['Anthropic', { name: 'inner', description: 'Inner description.', input_schema: schema }],
  ];
  for (const [label, definition] of providerShapes) {
    it(`reads the gateway wrapper around a ${label} definition`, () => {
      const raw = { name: 'outer', definition };
      const tool = normalizeTool(raw);
      expect(tool).toMatchObject({
        // The wrapper's name wins: it is what the gateway matches answers against.
        name: 'outer',
        description: 'Inner description.',
        inputSchema: schema,
        format: 'gateway',
      });
      expect(tool.definition).toBe(raw);
    });
  }

  it('lets the wrapper description and parameters override the definition', () => {
    const tool = normalizeTool({
      name: 'outer',
      description: 'Outer.',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      definition: { name: 'inner', description: 'Inner.', inputSchema: schema },
    });
    expect(tool.description).toBe('Outer.');
    expect(tool.inputSchema).toEqual({ type: 'object', properties: { q: { type: 'string' } } });
  });

  const tagged: [string, Record<string, unknown>][] = [
    ['MCP', { name: 't', inputSchema: {} }],
    ['OpenAI Chat', { type: 'function', function: { name: 't' } }],
    ['OpenAI Responses', { type: 'function', name: 't' }],
    ['Anthropic', { name: 't', input_schema: {} }],
    ['gateway', { name: 't' }],
  ];
  for (const [label, raw] of tagged) {
    it(`takes tags (sorted, de-duplicated) and server on a ${label} tool`, () => {
      const tool = normalizeTool({ ...raw, tags: ['web', 'Search', 'web'], server: 'weather-mcp' });
      expect(tool.tags).toEqual(['Search', 'web']);
      expect(tool.server).toBe('weather-mcp');
    });
  }

  it('takes tags and server from a wrapped definition when the wrapper has none', () => {
    const tool = normalizeTool({ name: 'outer', definition: { name: 'i', inputSchema: {}, tags: ['b', 'a'], server: 's' } });
    expect(tool.tags).toEqual(['a', 'b']);
    expect(tool.server).toBe('s');
    const own = normalizeTool({ name: 'outer', tags: ['z'], server: 'mine', definition: { name: 'i', inputSchema: {}, tags: ['a'], server: 's' } });
    expect(own.tags).toEqual(['z']);
    expect(own.server).toBe('mine');
  });

  it('accepts a name of exactly the maximum length', () => {
    expect(normalizeTool({ name: 'n'.repeat(TOOL_NAME_MAX), inputSchema: {} }).name).toHaveLength(128);
  });
});

describe('detectToolFormat', () => {
  it('tells the shapes apart by their distinguishing keys', () => {
    expect(detectToolFormat({ type: 'function', function: {} })).toBe('openai_chat');
    expect(detectToolFormat({ type: 'function', name: 'x' })).toBe('openai_responses');
    expect(detectToolFormat({ name: 'x', inputSchema: {} })).toBe('mcp');
    expect(detectToolFormat({ name: 'x', input_schema: {} })).toBe('anthropic');
    expect(detectToolFormat({ name: 'x', definition: {} })).toBe('gateway');
  });
});

describe('normalizeTool: rejected shapes', () => {
  it('rejects anything that is not a JSON object', () => {
    for (const raw of [null, undefined, 'get_weather', 42, true, [{ name: 'x', inputSchema: {} }]]) {
      expect(rejection(raw).message).toMatch(/must be a JSON object/);
    }
  });

  it('rejects a missing name in every shape', () => {
    expect(rejection({ description: 'no name', inputSchema: {} }).message).toMatch(/name is required/);
    expect(rejection({ input_schema: {} }).message).toMatch(/name is required/);
    expect(rejection({ type: 'function', function: { description: 'x' } }).message).toMatch(/function\.name: name is required/);
    expect(rejection({ type: 'function', description: 'x' }).message).toMatch(/name is required/);
    expect(rejection({ description: 'only a description' }).message).toMatch(/not a recognised tool \(name is required\)/);
    expect(rejection({}).message).toMatch(/name is required/);
  });

  it('rejects an empty or non-string name', () => {
    expect(rejection({ name: '', inputSchema: {} }).message).toMatch(/name must not be empty/);
    expect(rejection({ name: '' }).message).toMatch(/name must not be empty/);
    expect(rejection({ name: 7, input_schema: {} }).message).toMatch(/name must be a string/);
  });

  it('rejects a 129-character name', () => {
    const name = 'n'.repeat(TOOL_NAME_MAX + 1);
    expect(rejection({ name, inputSchema: {} }).message).toMatch(/at most 128 characters/);
    expect(rejection({ type: 'function', function: { name } }).message).toMatch(/at most 128 characters/);
    expect(rejection({ name }).message).toMatch(/at most 128 characters/);
  });

  it('rejects a description that is not a string', () => {
    expect(rejection({ name: 'x', description: 5, inputSchema: {} }).message).toMatch(/description must be a string/);
    expect(rejection({ name: 'x', description: ['a'], input_schema: {} }).message).toMatch(/description must be a string/);
    expect(rejection({ type: 'function', function: { name: 'x', description: {} } }).message).toMatch(/description must be a string/);
    expect(rejection({ name: 'x', description: false }).message).toMatch(/description must be a string/);
  });

  it('rejects a schema that is not an object', () => {
    for (const bad of ['{}', 3, [], null]) {
      const error = rejection({ name: 'x', inputSchema: bad });
      expect(error.message).toMatch(/^not a valid mcp tool \(inputSchema: /);
      expect(error.issues[0]?.path).toEqual(['inputSchema']);
    }
    expect(rejection({ name: 'x', input_schema: 'object' }).message).toMatch(/input_schema/);
    expect(rejection({ type: 'function', function: { name: 'x', parameters: [] } }).message).toMatch(/function\.parameters/);
    expect(rejection({ type: 'function', name: 'x', parameters: 'none' }).message).toMatch(/parameters/);
    expect(rejection({ name: 'x', parameters: 1 }).message).toMatch(/parameters/);
  });

  it('rejects an unknown type', () => {
    for (const type of ['web_search', 'custom', 1, null]) {
      const error = rejection({ type, name: 'x' });
      expect(error.message).toMatch(/unsupported tool type/);
      expect(error.issues[0]?.path).toEqual(['type']);
    }
  });

  it('rejects bad tags and server', () => {
    expect(rejection({ name: 'x', inputSchema: {}, tags: 'web' }).message).toMatch(/tags must be an array of strings/);
    expect(rejection({ name: 'x', inputSchema: {}, tags: [1] }).message).toMatch(/tags/);
    expect(rejection({ name: 'x', inputSchema: {}, server: '' }).message).toMatch(/server/);
  });

  it('rejects NUL characters in the text fields PostgreSQL stores as text', () => {
    expect(rejection({ name: 'x', description: 'a\u0000b', inputSchema: {} }).message).toMatch(/NUL/);
    expect(rejection({ name: 'x\u0000', input_schema: {} }).message).toMatch(/NUL/);
    expect(rejection({ name: 'x', title: 'a\u0000', inputSchema: {} }).message).toMatch(/NUL/);
    expect(rejection({ type: 'function', name: 'x', server: 's\u0000' }).message).toMatch(/NUL/);
    expect(rejection({ name: 'x', tags: ['ok', '\u0000'] }).message).toMatch(/NUL/);
    expect(rejection({ name: 'x', definition: { name: 'i', description: '\u0000', inputSchema: {} } }).message).toMatch(/NUL/);
  });

  it('rejects a bad definition inside the gateway wrapper', () => {
    const notAnObject = rejection({ name: 'w', definition: 'get_weather' });
    expect(notAnObject.issues[0]?.path).toEqual(['definition']);
    const unrecognised = rejection({ name: 'w', definition: { name: 'inner', description: 'no schema key' } });
    expect(unrecognised.message).toMatch(/^definition: definition must be an MCP, OpenAI or Anthropic tool/);
    const badInner = rejection({ name: 'w', definition: { name: 'inner', inputSchema: 'nope' } });
    expect(badInner.message).toMatch(/^definition: not a valid mcp tool \(inputSchema/);
    expect(badInner.issues.map((issue) => issue.path)).toContainEqual(['definition', 'inputSchema']);
    expect(rejection({ name: 'w', definition: { type: 'mcp', name: 'inner' } }).message).toMatch(/^definition: unsupported tool type/);
    expect(rejection({ name: 'w', definition: { type: 'function', function: { name: '' } } }).message).toMatch(/^definition: .*name must not be empty/);
    // A wrapper may not wrap another wrapper.
    expect(rejection({ name: 'w', definition: { name: 'inner', definition: { name: 'x', inputSchema: {} } } }).message).toMatch(/^definition: /);
  });
});

describe('normalizeTools', () => {
  it('normalizes a mixed list in order', () => {
    const { tools, problems } = normalizeTools([
      { name: 'a', inputSchema: {} },
      { type: 'function', function: { name: 'b' } },
      { name: 'c', input_schema: {} },
    ]);
    expect(problems).toEqual([]);
    expect(tools.map((tool) => [tool.name, tool.format])).toEqual([
      ['a', 'mcp'],
      ['b', 'openai_chat'],
      ['c', 'anthropic'],
    ]);
  });

  it('reports a duplicate name by index, naming the first occurrence, across shapes', () => {
    const { tools, problems } = normalizeTools([
      { name: 'search', inputSchema: {} },
      { name: 'other', inputSchema: {} },
      { type: 'function', function: { name: 'search' } },
    ]);
    expect(tools.map((tool) => tool.name)).toEqual(['search', 'other']);
    expect(problems).toEqual([{ index: 2, name: 'search', message: 'duplicate tool name "search" (first at index 0)' }]);
  });

  it('collects every bad tool with its index and name', () => {
    const { tools, problems } = normalizeTools([{ name: 'ok', inputSchema: {} }, 'not a tool', { name: 'bad_schema', inputSchema: 5 }, { type: 'retrieval' }]);
    expect(tools).toHaveLength(1);
    expect(problems.map((problem) => [problem.index, problem.name])).toEqual([
      [1, undefined],
      [2, 'bad_schema'],
      [3, undefined],
    ]);
    expect(problems[1]?.message).toMatch(/inputSchema/);
  });
});

describe('extractToolList', () => {
  const tools = [{ name: 'a', inputSchema: {} }];

  it('finds the list in {tools}, a JSON-RPC tools/list response and a bare array', () => {
    expect(extractToolList({ tools })).toBe(tools);
    expect(extractToolList({ jsonrpc: '2.0', id: 1, result: { tools, nextCursor: 'x' } })).toBe(tools);
    expect(extractToolList(tools)).toBe(tools);
    expect(extractToolList([])).toEqual([]);
    expect(extractToolList({ tools: [] })).toEqual([]);
  });

  it('returns undefined for anything else', () => {
    for (const body of [undefined, null, 'tools', 3, {}, { tools: 'a' }, { tools: {} }, { result: { tools: {} } }, { result: [tools] }, { data: tools }]) {
      expect(extractToolList(body)).toBeUndefined();
    }
  });
});

import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import { contentHash } from '../../src/catalog/content-hash.js';
import { normalizeTool } from '../../src/catalog/tool-formats.js';

const hashOf = (raw: unknown) => contentHash(normalizeTool(raw));

const schema = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'City name' },
    options: { type: 'object', properties: { units: { type: 'string', enum: ['c', 'f'] }, days: { type: 'integer' } } },
  },
  required: ['city'],
};
/** The same schema with keys reversed at every depth. */
const reordered = {
  required: ['city'],
  properties: {
    options: { properties: { days: { type: 'integer' }, units: { enum: ['c', 'f'], type: 'string' } }, type: 'object' },
    city: { description: 'City name', type: 'string' },
  },
  type: 'object',
};

const description = 'Current weather for a city.';

describe('canonicalJson', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson(schema)).toBe(canonicalJson(reordered));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it('drops undefined members like JSON does', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
  });

  it('never changes: stored documents are addressed by it (numeric-looking, capital and non-ASCII keys; numbers; escapes)', () => {
    const tricky = {
      name: 'get_weather',
      description: 'Wetter für "Köln"\n\u2028 🌦️',
      inputSchema: {
        type: 'object',
        properties: {
          '10': { type: 'integer' },
          '9': { type: 'string' },
          b: { enum: [1.5, -0, 1e21, true, null, 'x'] },
          é: { type: 'array', items: [{}, []] },
          B: { default: { z: undefined, a: [undefined] } },
        },
      },
      tags: ['weather', 'ünï'],
      server: 'wx',
    };
    expect(canonicalJson(tricky.inputSchema)).toBe(
      '{"properties":{"10":{"type":"integer"},"9":{"type":"string"},"B":{"default":{"a":[null]}},"b":{"enum":[1.5,0,1e+21,true,null,"x"]},"é":{"items":[{},[]],"type":"array"}},"type":"object"}',
    );
    // The hash the first canonical form gave this tool (2026-11-29): a change here re-addresses every stored tool.
    expect(hashOf(tricky)).toBe('9e2cbae18157a3c44f0d757033dd3096f2cf9d3d97f350d24fb09706aa0a3ad8');
  });
});

describe('contentHash', () => {
  const base = hashOf({ name: 'get_weather', description, inputSchema: schema, tags: ['weather'], server: 'wx' });

  it('is a sha256 hex digest', () => {
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not change with key order, at the top level or inside inputSchema', () => {
    expect(hashOf({ server: 'wx', tags: ['weather'], inputSchema: reordered, description, name: 'get_weather' })).toBe(base);
  });

  it('is the same for one tool sent as MCP, OpenAI Chat, OpenAI Responses, Anthropic or the gateway wrapper', () => {
    const extras = { tags: ['weather'], server: 'wx' };
    const shapes = [
      { name: 'get_weather', description, inputSchema: schema, annotations: { readOnlyHint: true }, _meta: { a: 1 }, ...extras },
      { type: 'function', function: { name: 'get_weather', description, parameters: reordered }, ...extras },
      { type: 'function', name: 'get_weather', description, parameters: schema, ...extras },
      { name: 'get_weather', description, input_schema: reordered, ...extras },
      { name: 'get_weather', description, parameters: schema, ...extras },
      { name: 'get_weather', definition: { name: 'get_weather', description, inputSchema: schema }, ...extras },
      { name: 'get_weather', definition: { type: 'function', function: { name: 'x', description, parameters: schema } }, ...extras },
      { name: 'get_weather', definition: { name: 'get_weather', description, input_schema: reordered, ...extras } },
    ];
    for (const raw of shapes) expect(hashOf(raw), JSON.stringify(raw)).toBe(base);
  });

  it('changes when the name, description, schema, tags or server change', () => {
    const tool = { name: 'get_weather', description, inputSchema: schema, tags: ['weather'], server: 'wx' };
    const variants = [
      { ...tool, name: 'get_weather2' },
      { ...tool, description: 'Current weather for a town.' },
      { ...tool, description: '' },
      { ...tool, inputSchema: { ...schema, required: [] } },
      { ...tool, inputSchema: { ...schema, properties: { ...schema.properties, city: { type: 'number', description: 'City name' } } } },
      { ...tool, tags: ['weather', 'forecast'] },
      { ...tool, tags: [] },
      { ...tool, server: 'wx2' },
      { name: 'get_weather', description, inputSchema: schema, tags: ['weather'] },
    ];
    const hashes = variants.map(hashOf);
    for (const hash of hashes) expect(hash).not.toBe(base);
    expect(new Set(hashes).size).toBe(variants.length);
  });

  it('tells a missing schema from an empty one', () => {
    expect(hashOf({ type: 'function', function: { name: 'ping' } })).not.toBe(hashOf({ name: 'ping', inputSchema: {} }));
  });

  it('ignores tag order and duplicates', () => {
    const tool = { name: 'get_weather', description, inputSchema: schema, server: 'wx' };
    const sorted = hashOf({ ...tool, tags: ['a', 'b', 'c'] });
    expect(hashOf({ ...tool, tags: ['c', 'a', 'b'] })).toBe(sorted);
    expect(hashOf({ ...tool, tags: ['b', 'a', 'c', 'a', 'b'] })).toBe(sorted);
  });
});

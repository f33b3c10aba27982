import { describe, expect, it } from 'vitest';
import { toolsKey } from '../../src/http/selector.js';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const tools = [{ name: 'read_file', description: 'Read a file' }, { name: 'web_search' }];

describe('toolsKey', () => {
  it('is the same for the same tools under another pattern, query or always_keep', () => {
    const key = toolsKey(body({ pattern: 'read', top_k: 5, tools }));
    expect(key).toBeDefined();
    expect(toolsKey(body({ pattern: 'search the web', top_k: 3, always_keep: ['x'], tools }))).toBe(key);
  });

  it('differs when any byte of the tools differs, including their order', () => {
    const key = toolsKey(body({ pattern: 'read', tools }));
    expect(toolsKey(body({ pattern: 'read', tools: [tools[1], tools[0]] }))).not.toBe(key);
    expect(toolsKey(body({ pattern: 'read', tools: [{ ...tools[0], description: 'Read a file.' }, tools[1]] }))).not.toBe(key);
  });

  it('covers the real tools when a nested "tools" key comes first, and a "tools" inside a string is no key', () => {
    const nested = toolsKey(body({ meta: { tools: [] }, pattern: 'x', tools }));
    expect(nested).not.toBe(toolsKey(body({ meta: { tools: [] }, pattern: 'x', tools: [tools[0]] })));
    const inString = toolsKey(body({ pattern: 'the "tools": list', tools }));
    expect(inString).toBe(toolsKey(body({ pattern: 'other', tools })));
  });

  it('is undefined without a body or a tools field', () => {
    expect(toolsKey(undefined)).toBeUndefined();
    expect(toolsKey(body({ pattern: 'x' }))).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { assertSafeJson, MAX_JSON_DEPTH } from '../../src/http/input-safety.js';

/** The 400's message for `value`, or undefined when it is safe. */
function rejection(value: unknown, at?: (string | number)[]): string | undefined {
  try {
    assertSafeJson(value, 'body', at);
    return undefined;
  } catch (error) {
    expect(error).toMatchObject({ code: 'validation_failed' });
    return (error as Error).message;
  }
}

/** An object nested `depth` levels below the top: {"a": {"a": ... {}}}. */
const nested = (depth: number): unknown => (depth === 0 ? {} : { a: nested(depth - 1) });

describe('assertSafeJson', () => {
  it('names the field of a NUL or a lone surrogate, in values and in keys, anywhere in the body', () => {
    const tools = [{ name: 'ok' }, { name: 'x', inputSchema: { properties: { path: { description: 'a\u0000b' } } } }];
    expect(rejection({ tools })).toBe('invalid body: tools[1].inputSchema.properties.path.description: contains a NUL character (\\u0000)');
    expect(rejection({ tools: [{ name: 'ls\ud800x' }] })).toBe('invalid body: tools[0].name: contains a lone UTF-16 surrogate (not valid Unicode text)');
    expect(rejection({ tools: [{ schema: { 'bad\u0000key': 1 } }] })).toBe('invalid body: tools[0].schema.bad\u0000key: contains a NUL character (\\u0000)');
    expect(rejection('\udc00')).toBe('invalid body: the body: contains a lone UTF-16 surrogate (not valid Unicode text)');
  });

  it('accepts text outside the Basic Multilingual Plane (paired surrogates) and values of every other type', () => {
    expect(rejection({ name: 'weather 🌦️', tags: ['日本語', '𝒳'], n: 1, ok: true, none: null, list: [[], {}] })).toBeUndefined();
  });

  it('reports the first unsafe value in document order', () => {
    expect(rejection({ a: { b: ['fine', 'x\u0000'] }, c: '\u0000' })).toContain('a.b[1]:');
    expect(rejection([{ a: 'fine' }, { b: '\ud800' }, '\u0000'])).toContain('[1].b:');
  });

  it(`allows ${MAX_JSON_DEPTH - 1} levels below the top and rejects ${MAX_JSON_DEPTH}, counting from where the value sits`, () => {
    expect(rejection(nested(MAX_JSON_DEPTH - 1))).toBeUndefined();
    expect(rejection(nested(MAX_JSON_DEPTH))).toBe(`invalid body: nested deeper than ${MAX_JSON_DEPTH} levels at a.a.a.a.a.a.a.a...`);
    expect(rejection(nested(MAX_JSON_DEPTH - 3), ['tools', 7])).toBeUndefined();
    expect(rejection(nested(MAX_JSON_DEPTH - 2), ['tools', 7])).toMatch(/^invalid body: nested deeper than \d+ levels at tools\[7\]\.a\.a/);
  });

  it('walks a body nested far deeper than the stack allows without overflowing', () => {
    let deep: unknown = 'end';
    for (let i = 0; i < 50_000; i++) deep = [deep];
    expect(rejection(deep)).toMatch(/nested deeper than/);
  });
});

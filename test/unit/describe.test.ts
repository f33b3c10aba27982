import { describe, expect, it } from 'vitest';
import { firstSentence, parameterNames } from '../../src/catalog/describe.js';

describe('firstSentence', () => {
  it('cuts at the first ". " and keeps the dot', () => {
    expect(firstSentence('Gets the weather. Uses the NOAA API. Free.')).toBe('Gets the weather.');
  });

  it('cuts at the first ".\\n" and keeps the dot', () => {
    expect(firstSentence('Gets the weather.\nArgs: city')).toBe('Gets the weather.');
  });

  it('takes whichever of ". " and ".\\n" comes first', () => {
    expect(firstSentence('One.\nTwo. Three')).toBe('One.');
    expect(firstSentence('One. Two.\nThree')).toBe('One.');
  });

  it('does not cut at a dot followed by anything else', () => {
    expect(firstSentence('Reads v1.2 files.')).toBe('Reads v1.2 files.');
    expect(firstSentence('See example.com for details')).toBe('See example.com for details');
  });

  it('returns the whole text when it ends in "." without an inner sentence break, however long', () => {
    const long = `${'word '.repeat(100)}end.`;
    expect(long.length).toBeGreaterThan(200);
    expect(firstSentence(long)).toBe(long);
    expect(firstSentence('Single sentence.')).toBe('Single sentence.');
  });

  it('returns text of at most 200 characters without a final dot as it is', () => {
    expect(firstSentence('Gets the weather')).toBe('Gets the weather');
    const exactly200 = 'x'.repeat(200);
    expect(firstSentence(exactly200)).toBe(exactly200);
  });

  it('cuts longer text without a sentence end to its first 200 characters and "..."', () => {
    const text = `${'a'.repeat(150)}${'b'.repeat(51)}`;
    expect(text).toHaveLength(201);
    expect(firstSentence(text)).toBe(`${'a'.repeat(150)}${'b'.repeat(50)}...`);
    const words = 'lorem ipsum '.repeat(40);
    expect(firstSentence(words)).toBe(`${words.trim().slice(0, 200)}...`);
  });

  it('ignores surrounding whitespace and handles empty text', () => {
    expect(firstSentence('  Gets the weather.  ')).toBe('Gets the weather.');
    expect(firstSentence('\n\nFirst. Second.')).toBe('First.');
    expect(firstSentence('')).toBe('');
  });
});

describe('parameterNames', () => {
  it('lists top-level property names in schema order', () => {
    expect(
      parameterNames({
        type: 'object',
        properties: { zeta: { type: 'string' }, alpha: { type: 'object', properties: { inner: {} } }, mid: {} },
      }),
    ).toEqual(['zeta', 'alpha', 'mid']);
  });

  it('is empty when there is no schema or no usable properties', () => {
    expect(parameterNames(null)).toEqual([]);
    expect(parameterNames({})).toEqual([]);
    expect(parameterNames({ type: 'object', properties: {} })).toEqual([]);
    expect(parameterNames({ properties: null })).toEqual([]);
    expect(parameterNames({ properties: ['a', 'b'] })).toEqual([]);
    expect(parameterNames({ properties: 'a' })).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { SeenTools } from '../../src/search/seen-tools.js';
import type { CatalogToolRow } from '../../src/store/catalog-store.js';

const row = (name: string, hash: string, description = `Does ${name}.`): CatalogToolRow => ({
  name,
  hash,
  description,
  inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  tags: [],
  server: null,
  upstream: null,
  definition: { name, description },
  tokens: { anthropic: 10, openai: 12, as_sent: 11 },
});

describe('SeenTools', () => {
  it('keeps the latest row of each name per catalog', () => {
    const seen = new SeenTools();
    seen.remember(1, [row('read_file', 'a'), row('write_file', 'b')]);
    seen.remember(2, [row('read_file', 'c', 'Reads a file of catalog 2.')]);
    expect(seen.get(1, 'read_file')?.hash).toBe('a');
    expect(seen.get(2, 'read_file')?.description).toBe('Reads a file of catalog 2.');
    expect(seen.get(2, 'write_file')).toBeUndefined();
    // A later revision's row (another hash) replaces it, and its bytes are counted once.
    const before = seen.bytes;
    seen.remember(1, [row('read_file', 'a2', 'Reads a whole file, now with a longer description.')]);
    expect(seen.get(1, 'read_file')).toMatchObject({ hash: 'a2', description: 'Reads a whole file, now with a longer description.' });
    expect(seen.size).toBe(3);
    expect(seen.bytes).toBeGreaterThan(before);
  });

  it('does not weigh again a row it holds with the same hash', () => {
    const seen = new SeenTools();
    const first = row('read_file', 'a');
    seen.remember(1, [first]);
    const bytes = seen.bytes;
    seen.remember(1, [{ ...first, description: 'the same hash: not replaced' }]);
    expect(seen.get(1, 'read_file')).toBe(first);
    expect(seen.bytes).toBe(bytes);
  });

  it('forgets the least recently used first, by count and by bytes', () => {
    const byCount = new SeenTools(2);
    byCount.remember(1, [row('a', '1'), row('b', '2')]);
    byCount.get(1, 'a');
    byCount.remember(1, [row('c', '3')]);
    expect([byCount.get(1, 'a'), byCount.get(1, 'b'), byCount.get(1, 'c')].map((kept) => kept?.name)).toEqual(['a', undefined, 'c']);

    const one = new SeenTools();
    one.remember(1, [row('a', '1')]);
    const byBytes = new SeenTools(100, Math.floor(one.bytes * 2.5));
    byBytes.remember(1, [row('a', '1'), row('b', '2'), row('c', '3')]);
    expect(byBytes.size).toBe(2);
    expect(byBytes.get(1, 'a')).toBeUndefined();
    expect(byBytes.bytes).toBeLessThanOrEqual(Math.floor(one.bytes * 2.5));
  });
});

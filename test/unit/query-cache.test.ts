import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embed/embedder.js';
import { withQueryCache } from '../../src/embed/query-cache.js';

/** Counts model calls; a query's vector is [its length, its call number]. */
function fakeEmbedder() {
  const calls: string[] = [];
  let release: (() => void) | null = null;
  let gate: Promise<void> | null = null;
  const embedder: Embedder = {
    modelId: 'fake',
    dimension: 2,
    embedDocuments: async (texts) => texts.map((text) => [text.length, 0]),
    async embedQuery(text) {
      calls.push(text);
      const call = calls.length;
      if (gate) await gate;
      if (text === 'fail') throw new Error('model failed');
      return [text.length, call];
    },
    close: async () => {},
  };
  return {
    embedder,
    calls,
    hold() {
      gate = new Promise((resolve) => (release = resolve));
    },
    release() {
      gate = null;
      release?.();
    },
  };
}

describe('withQueryCache', () => {
  it('calls the model once for a repeated query', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    const first = await cached.embedQuery('search the web');
    const second = await cached.embedQuery('search the web');
    expect(second).toEqual(first);
    expect(fake.calls).toEqual(['search the web']);
  });

  it('treats queries differing only in whitespace as one, sending the first text unchanged', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    await cached.embedQuery('  search   the\tweb ');
    await cached.embedQuery('search the web');
    expect(fake.calls).toEqual(['  search   the\tweb ']);
  });

  it('keeps case and punctuation apart', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    await cached.embedQuery('Search');
    await cached.embedQuery('search');
    await cached.embedQuery('search?');
    expect(fake.calls).toHaveLength(3);
  });

  it('shares one model call between concurrent identical misses', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    fake.hold();
    const pending = [cached.embedQuery('q'), cached.embedQuery(' q'), cached.embedQuery('q ')];
    fake.release();
    const vectors = await Promise.all(pending);
    expect(fake.calls).toEqual(['q']);
    expect(vectors[1]).toEqual(vectors[0]);
    expect(vectors[2]).toEqual(vectors[0]);
  });

  it('evicts the least recently used query beyond capacity', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 2);
    await cached.embedQuery('a');
    await cached.embedQuery('b');
    await cached.embedQuery('a'); // 'b' is now the least recently used
    await cached.embedQuery('c'); // evicts 'b'
    await cached.embedQuery('a');
    expect(fake.calls).toEqual(['a', 'b', 'c']);
    await cached.embedQuery('b');
    expect(fake.calls).toEqual(['a', 'b', 'c', 'b']);
  });

  it('does not remember failures', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    await expect(cached.embedQuery('fail')).rejects.toThrow('model failed');
    await expect(cached.embedQuery('fail')).rejects.toThrow('model failed');
    expect(fake.calls).toEqual(['fail', 'fail']);
  });

  it('passes documents through uncached and keeps the model identity', async () => {
    const fake = fakeEmbedder();
    const cached = withQueryCache(fake.embedder, 10);
    expect(await cached.embedDocuments(['ab', 'c'])).toEqual([
      [2, 0],
      [1, 0],
    ]);
    expect(cached.modelId).toBe('fake');
    expect(cached.dimension).toBe(2);
    expect(fake.calls).toEqual([]);
  });

  it('rejects a capacity below 1', () => {
    expect(() => withQueryCache(fakeEmbedder().embedder, 0)).toThrow(/capacity/);
  });
});

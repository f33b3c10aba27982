import { describe, expect, it } from 'vitest';
import { LruCache } from '../../src/lib/lru-cache.js';

describe('LruCache', () => {
  it('forgets the least recently used entry beyond its capacity', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.size]).toEqual([1, 3, 2]);
  });

  it('also keeps the total weight under its budget, least recently used first', () => {
    const cache = new LruCache<string, number[]>(10, { max: 5, weigh: (list) => list.length });
    cache.set('a', [1, 2]);
    cache.set('b', [1, 2]);
    cache.get('a');
    cache.set('c', [1, 2]);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.size).toBe(2);
    cache.set('a', [1]); // replacing an entry replaces its weight
    cache.set('d', [1, 2]);
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([[1], [1, 2], [1, 2]]);
  });

  it('does not keep an entry heavier than the whole budget, and keeps the others', () => {
    const cache = new LruCache<string, number[]>(10, { max: 3, weigh: (list) => list.length });
    cache.set('a', [1]);
    cache.set('big', [1, 2, 3, 4]);
    expect(cache.get('big')).toBeUndefined();
    expect(cache.get('a')).toEqual([1]);
  });

  it('knows the value last read or written while it is held', () => {
    const cache = new LruCache<string, number>(2);
    expect(cache.newest()).toBeUndefined();
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.newest()).toBe(2);
    cache.get('a');
    expect(cache.newest()).toBe(1);
    cache.get('missing');
    expect(cache.newest()).toBe(1);
    cache.delete('a');
    expect(cache.newest()).toBeUndefined();
    cache.set('c', 3);
    cache.set('d', 4); // evicts b
    expect(cache.newest()).toBe(4);
  });

  it('weighs an entry that grew where it is held: the least recently used others go, it stays, and what leaves is what was counted', () => {
    const sizes = new Map([
      ['a', 3],
      ['b', 3],
      ['c', 3],
    ]);
    const cache = new LruCache<string, string>(10, { max: 10, weigh: (key) => sizes.get(key)! });
    for (const key of ['a', 'b', 'c']) cache.set(key, key);
    expect(cache.heldWeight).toBe(9);
    // c grows to 6 while held: 12 > 10, so a (least recently used) goes.
    sizes.set('c', 6);
    cache.reweigh('c');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.heldWeight).toBe(9);
    // Alone over the budget, it stays and everything else goes.
    sizes.set('c', 12);
    cache.reweigh('c');
    expect(cache.size).toBe(1);
    expect(cache.heldWeight).toBe(12);
    // Its weight changed again without being weighed: deleting it takes away what was counted.
    sizes.set('c', 1);
    cache.delete('c');
    expect(cache.heldWeight).toBe(0);
  });
});

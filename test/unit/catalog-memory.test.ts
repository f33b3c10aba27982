/**
 * The padding of the selector's answer from memory (search/catalog-search.ts `firstNames`): the
 * index's live names in the store's order (`collate "C"`: code points), also after a derive moved,
 * dropped and added tools; what `storeOrMemory` answers when the store is late; and a key limited
 * to some tools' totals from the index (search/visibility.ts).
 */
import { describe, expect, it } from 'vitest';
import { CatalogIndex } from '../../src/search/catalog-index.js';
import { firstNames, readCatalogRow, storeOrMemory } from '../../src/search/catalog-search.js';
import type { RankDeps } from '../../src/search/hybrid-search.js';
import { AppError } from '../../src/errors.js';
import type { CatalogIndexRow } from '../../src/store/search-store.js';
import { visibleHas, visibleInIndex, visibleTokens } from '../../src/search/visibility.js';
import { Access } from '../../src/trust/policy.js';

const row = (name: string): CatalogIndexRow => ({
  name,
  length: 2,
  server: null,
  tags: [],
  tokens: { anthropic: 10, openai: 11, as_sent: 9 },
  terms: `${name.replace(/\W/g, '') || 'x'} 1 tool 1`,
});
const byCodePoints = (names: string[]) =>
  [...names].sort((a, b) => {
    const x = [...a].map((c) => c.codePointAt(0)!);
    const y = [...b].map((c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  });

describe('firstNames: the padding from memory', () => {
  // U+FF21 (fullwidth A) sorts before an astral letter in code points, after it in UTF-16 units.
  const names = ['tool_10', 'tool_2', 'tool_1', 'Zeta', 'alpha', '\uff21wide', '\u{1d49c}script', 'tool'];

  it('is the first names in code point order, as the store pads', async () => {
    const index = await CatalogIndex.build(1, 1, names.map(row));
    for (const count of [1, 3, names.length, names.length + 5]) {
      expect(firstNames(index.bm25, count)).toEqual(byCodePoints(names).slice(0, count));
    }
    expect(byCodePoints(names).indexOf('\uff21wide')).toBeLessThan(byCodePoints(names).indexOf('\u{1d49c}script'));
  });

  it('pages past a name as the store lists (list_tools from memory)', async () => {
    const index = await CatalogIndex.build(1, 1, names.map(row));
    const sorted = byCodePoints(names);
    const paged: string[] = [];
    for (let after: string | undefined; ; ) {
      const page = firstNames(index.bm25, 3, after);
      paged.push(...page);
      if (page.length < 3) break;
      after = page[page.length - 1];
    }
    expect(paged).toEqual(sorted);
    expect(firstNames(index.bm25, 100, '\uff21wide')).toEqual(sorted.slice(sorted.indexOf('\uff21wide') + 1));
    // A name the index does not hold: the page starts at the next one ('tool' < 'tool_0' < 'tool_1').
    expect(firstNames(index.bm25, 100, 'tool_0')).toEqual(sorted.slice(sorted.indexOf('tool_1')));
  });

  it('leaves out tools a derived index dropped, and includes the ones it added', async () => {
    const base = await CatalogIndex.build(1, 1, names.map(row));
    const derived = await CatalogIndex.derive(base, { revision: 2, rows: [row('tool_0'), row('Zeta')], removed: ['alpha', 'tool_1'] });
    const live = [...names.filter((name) => name !== 'alpha' && name !== 'tool_1'), 'tool_0'];
    expect(firstNames(derived.bm25, 100)).toEqual(byCodePoints(live));
    expect(firstNames(derived.bm25, 2)).toEqual(byCodePoints(live).slice(0, 2));
  });
});

describe('storeOrMemory: a store that does not answer in time', () => {
  // A store whose reads never settle, and a process that held the catalog's index when the read
  // started (so it was bounded) but has no answer once the deadline passes (evicted meanwhile).
  const silent = { execute: () => new Promise(() => {}) } as unknown as RankDeps['db'];
  const held = { lastSeen: () => ({}) } as unknown as RankDeps['catalogIndexes'];
  const deps = { db: silent, catalogIndexes: held } as RankDeps;
  const ref = { tenant: 'default', name: 'gone' };

  it('is a 503 naming the catalog when memory has no answer, not an unexpected error', async () => {
    const failure = await storeOrMemory(
      deps,
      ref,
      () => readCatalogRow(deps, ref, 20),
      async () => undefined,
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AppError);
    expect(failure).toMatchObject({ code: 'service_unavailable' });
    expect((failure as Error).message).toContain('"gone"');
  });

  it("is memory's answer when it has one", async () => {
    expect(
      await storeOrMemory(
        deps,
        ref,
        async () => (await readCatalogRow(deps, ref, 20), 'store'),
        async () => 'memory',
      ),
    ).toBe('memory');
  });
});

describe("a limited key's totals from memory (search/visibility.ts)", () => {
  const sized = (name: string, asSent: number, terms: string, server: string | null = null): CatalogIndexRow => ({
    name,
    length: 2,
    server,
    tags: [],
    tokens: { anthropic: asSent + 1, openai: asSent + 2, as_sent: asSent },
    terms,
  });
  const access = new Access({
    id: 'narrow',
    tenant: 't',
    tools: { deny: ['delete_*'] },
    servers: { deny: ['payments'] },
    call: true,
    write: false,
    manage: false,
  });
  const rows = [
    sized('get_a', 10, 'alpha 1 shared 1'),
    sized('get_b', 20, 'beta 1 shared 1', 'shop'),
    sized('delete_c', 40, 'secret 1 shared 1'),
    sized('refund', 80, 'refund 1 shared 1', 'payments'),
  ];

  it('offers the tools the key sees and knows only their words', async () => {
    const index = await CatalogIndex.build(7, 1, rows);
    const visible = visibleInIndex(access, 'c', index)!;
    expect(index.totalTokens('as_sent')).toBe(150);
    expect(visibleTokens(index, visible, 'as_sent')).toBe(30);
    expect(visibleTokens(index, visible, 'anthropic')).toBe(32);
    expect(['alpha', 'shared', 'secret', 'refund', 'none'].map((term) => visibleHas(index, visible, term))).toEqual([true, true, false, false, false]);
    expect(['secret', 'refund'].map((term) => index.bm25.has(term))).toEqual([true, true]);
  });

  it('counts an overlay and a derived index as their live tools: a dropped tool leaves, an added one counts', async () => {
    const base = await CatalogIndex.build(7, 1, rows);
    const changes = { revision: 2, rows: [sized('delete_d', 5, 'alpha 1'), sized('get_e', 7, 'epsilon 1 secret 1')], removed: ['get_a'] };
    for (const index of [CatalogIndex.overlay(base, changes), await CatalogIndex.derive(base, changes)]) {
      const visible = visibleInIndex(access, 'c', index)!;
      expect(visibleTokens(index, visible, 'as_sent')).toBe(27);
      // "alpha" is held by a hidden tool only now; "secret" by a visible one too.
      expect(['alpha', 'epsilon', 'secret', 'refund'].map((term) => visibleHas(index, visible, term))).toEqual([false, true, true, false]);
      expect(index.bm25.has('alpha')).toBe(true);
    }
  });

  it('is undefined while a tool the key sees has no count, and counts without the ones it does not see', async () => {
    const uncounted = (row: CatalogIndexRow): CatalogIndexRow => ({ ...row, tokens: { anthropic: null, openai: null, as_sent: null } });
    const hiddenUncounted = await CatalogIndex.build(7, 1, [rows[0]!, uncounted(rows[2]!)]);
    expect(hiddenUncounted.totalTokens('as_sent')).toBeUndefined();
    expect(visibleTokens(hiddenUncounted, visibleInIndex(access, 'c', hiddenUncounted)!, 'as_sent')).toBe(10);
    const seenUncounted = await CatalogIndex.build(7, 1, [uncounted(rows[0]!), rows[2]!]);
    expect(visibleTokens(seenUncounted, visibleInIndex(access, 'c', seenUncounted)!, 'as_sent')).toBeUndefined();
  });
});

describe('CatalogIndex.toolWords: the words the learned list anchors on', () => {
  const tool = (name: string, terms: string): CatalogIndexRow => ({ ...row(name), terms });
  const rows = [tool('circle_area', 'area 2 circle 2 radius 1'), tool('triangle_area', 'area 2 triangle 2 base 1 height 1'), tool('clock', 'time 2')];

  it('gives each tool the asked words it holds and each word the catalog’s idf (0: no tool holds it), also after an overlay', async () => {
    const base = await CatalogIndex.build(1, 1, rows);
    for (const index of [base, CatalogIndex.overlay(base, { revision: 2, rows: [tool('circle_area', 'round 2 area 2')], removed: ['clock'] })]) {
      const { held, weight } = index.toolWords(['circle_area', 'triangle_area', 'clock', 'absent'], ['area', 'circle', 'triangle', 'round', 'time', 'seven']);
      const circle = index === base ? ['area', 'circle'] : ['area', 'round'];
      expect([...(held.get('circle_area') ?? [])].sort()).toEqual(circle);
      expect([...(held.get('triangle_area') ?? [])].sort()).toEqual(['area', 'triangle']);
      // A removed tool and an unknown one hold nothing.
      expect(held.has('clock')).toBe(index === base);
      expect(held.has('absent')).toBe(false);
      expect(weight.get('seven')).toBe(0);
      expect(weight.get('area')).toBeCloseTo(index.bm25.idf('area'), 12);
      // A word fewer tools hold weighs more.
      expect(weight.get('triangle')!).toBeGreaterThan(weight.get('area')!);
    }
  });

  it('tells how alike tools are by all their words, or by the words in play only (twinLocal)', async () => {
    const index = await CatalogIndex.build(1, 1, [...rows, tool('circle_area_v2', 'area 2 circle 2 diameter 1')]);
    const all = index.toolLikeness(['circle_area', 'circle_area_v2', 'triangle_area']);
    const idf2 = (word: string) => index.bm25.idf(word) ** 2;
    const norm = (...words: string[]) => Math.sqrt(words.reduce((sum, word) => sum + idf2(word), 0));
    expect(all('circle_area', 'circle_area_v2')).toBeCloseTo(
      (idf2('area') + idf2('circle')) / (norm('area', 'circle', 'radius') * norm('area', 'circle', 'diameter')),
      12,
    );
    // Over the words in play "area circle", the two circle tools are alike in every word; a triangle's tool shares "area" only.
    const local = index.toolLikeness(['circle_area', 'circle_area_v2', 'triangle_area'], ['area', 'circle']);
    expect(local('circle_area', 'circle_area_v2')).toBeCloseTo(1, 12);
    expect(local('circle_area', 'triangle_area')).toBeCloseTo(idf2('area') / (norm('area', 'circle') * norm('area')), 12);
    // Alike in fewer than `minShared` of the words read is no likeness: "area" alone does not pair a triangle's tool with a circle's.
    const floored = index.toolLikeness(['circle_area', 'circle_area_v2', 'triangle_area'], ['area', 'circle', 'triangle'], 2);
    expect(floored('circle_area', 'triangle_area')).toBe(0);
    expect(floored('circle_area', 'circle_area_v2')).toBeCloseTo(1, 12);
    expect(index.toolLikeness(['circle_area', 'circle_area_v2'], ['area', 'circle'], 3)('circle_area', 'circle_area_v2')).toBe(0);
  });
});

import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { describe, expect, it, vi } from 'vitest';
import { arrayElementSpans, arrayElementSpansInSlices, topLevelArraySpan, topLevelArraySpanInSlices } from '../../src/http/json-span.js';
import { TimeSlice } from '../../src/lib/time-slice.js';
import { jsonInSlices, readJsonBodyInSlices, SLICED_PARSE_BYTES } from '../../src/http/json-body.js';
import { assertSafeJson, MAX_JSON_DEPTH } from '../../src/http/input-safety.js';
import { readToolListBody, readToolListBodyInSlices, type ToolListBody } from '../../src/http/tool-list-body.js';
import { CANDIDATES_PER_HEAD, HEAD_BYTES, KnownBytes } from '../../src/lib/known-bytes.js';
import { LruCache } from '../../src/lib/lru-cache.js';
import { Bm25Index } from '../../src/ranking/bm25-index.js';
import type { CachedToolList } from '../../src/search/selector.js';
import { withRunningClock } from '../helpers/running-clock.js';
import { seededRandom } from '../helpers/seeded-random.js';

const bytes = (value: unknown, space?: number) => Buffer.from(JSON.stringify(value, null, space));
const tools = [
  { name: 'read_file', description: 'Read a "file" \\ at C:\\\\tmp' },
  { name: 'web_search', definition: { tools: [1, [2]] } },
];
const spanText = (body: Buffer) => {
  const span = topLevelArraySpan(body, 'tools');
  return span && body.toString('utf8', span.start, span.end);
};

/** Random JSON values whose strings are full of quotes, backslashes, brackets and "tools" keys. */
function randomValue(random: () => number, depth: number): unknown {
  const pick = random();
  const text = () =>
    Array.from(
      { length: Math.floor(random() * 6) },
      () => ['"', '\\', '[', ']', '{', '}', ':', 'tools', '"tools":', 'é', '\u2028', ' '][Math.floor(random() * 12)],
    ).join('');
  if (depth > 3 || pick < 0.3) return random() < 0.5 ? text() : Math.floor(random() * 100);
  if (pick < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
  const object: Record<string, unknown> = {};
  for (let i = 0; i < Math.floor(random() * 4); i++) object[random() < 0.3 ? 'tools' : text()] = randomValue(random, depth + 1);
  return object;
}

/** 3,000 tools whose strings hold quotes, backslashes, brackets and commas, enough to pass SLICED_PARSE_BYTES. */
function largeToolList(seed: number) {
  const random = seededRandom(seed);
  return Array.from({ length: 3000 }, (_, index) => ({
    name: `tool_${index}`,
    description: `Reads "things", [maybe] {braces} \\ and more, at ${index}`,
    inputSchema: { type: 'object', properties: { value: randomValue(random, 0) } },
  }));
}

describe('topLevelArraySpan', () => {
  it('finds exactly the bytes of the top-level tools array, wherever the field is', () => {
    for (const body of [
      bytes({ pattern: 'read', top_k: 5, tools }),
      bytes({ query: 'x', always_keep: ['a'], tools, max_tools: 3, compression_model_name: 'm', source: 'gateway:anthropic' }),
      bytes({ meta: { tools: [] }, pattern: 'the "tools": [list]', tools }, 2),
    ]) {
      expect(JSON.parse(spanText(body)!)).toEqual(tools);
    }
  });

  it('agrees with JSON.parse on random documents full of quotes, escapes and nested "tools" keys', () => {
    const random = seededRandom(42);
    let checked = 0;
    for (let i = 0; i < 2000; i++) {
      const document: Record<string, unknown> = { before: randomValue(random, 1) };
      if (random() < 0.8) document.tools = Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, 2));
      document.after = randomValue(random, 1);
      const text = spanText(bytes(document, random() < 0.5 ? 2 : undefined));
      if (document.tools === undefined) expect(text).toBeUndefined();
      else {
        expect(JSON.parse(text!)).toEqual(document.tools);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('keeps the last of duplicate keys, as JSON.parse does, and ignores a tools value that is no array', () => {
    expect(spanText(Buffer.from('{"tools":[1],"pattern":"x","tools":[2, 3]}'))).toBe('[2, 3]');
    expect(spanText(Buffer.from('{"tools":{"a":[1]},"pattern":"x"}'))).toBeUndefined();
    expect(spanText(Buffer.from('{"tools" : [1] }'))).toBe('[1]');
  });

  it('gives up when a top-level key is written with an escape, which JSON.parse would decode', () => {
    expect(spanText(Buffer.from('{"pattern":"x","tools":[1],"tool\\u0073":[2]}'))).toBeUndefined();
    expect(spanText(Buffer.from('{"pat\\u0074ern":"x","tools":[1]}'))).toBeUndefined();
    // Escapes inside values, and inside nested keys, are fine.
    expect(spanText(Buffer.from('{"pattern":"a \\"quoted\\" \\\\","meta":{"k\\u0065y":1},"tools":[1]}'))).toBe('[1]');
  });

  it('gives up on bodies it cannot scan', () => {
    expect(spanText(Buffer.from('{"tools":[1]'))).toBeUndefined();
    expect(spanText(Buffer.from('{"tools":["x]}'))).toBeUndefined();
    expect(spanText(Buffer.from(']]{"tools":[1]}'))).toBeUndefined();
  });
});

describe('readToolListBody', () => {
  const list: CachedToolList = { tools: [], toolsIn: 2, bm25: new Bm25Index([]), servers: { bm25: new Bm25Index([]), members: new Map() } };

  it('keys the tools by their bytes: the same under another pattern or trailing field, different when any byte differs', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    const key = readToolListBody(bytes({ pattern: 'read', top_k: 5, tools }), lists).toolsKey;
    expect(key).toBeDefined();
    expect(readToolListBody(bytes({ query: 'web', always_keep: ['x'], tools, max_tools: 3 }), lists).toolsKey).toBe(key);
    expect(readToolListBody(bytes({ pattern: 'read', tools: [tools[1], tools[0]] }), lists).toolsKey).not.toBe(key);
    expect(readToolListBody(bytes({ pattern: 'read', tools: [{ ...tools[0], name: 'read_files' }, tools[1]] }), lists).toolsKey).not.toBe(key);
    expect(readToolListBody(bytes({ pattern: 'x' }), lists).toolsKey).toBeUndefined();
  });

  it('parses everything but the tools when their list is cached, and the whole body otherwise', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    const first = readToolListBody(bytes({ pattern: 'read', top_k: 5, tools }), lists);
    expect(first.cached).toBeUndefined();
    expect(first.json).toEqual({ pattern: 'read', top_k: 5, tools });
    lists.set(first.toolsKey!, list);
    const again = readToolListBody(bytes({ query: 'web', tools, max_tools: 3 }), lists);
    expect(again.cached).toBe(list);
    expect(again.json).toEqual({ query: 'web', tools: [], max_tools: 3 });
  });

  it('still rejects a malformed body whose tools are cached, with the JSON error', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    const { toolsKey } = readToolListBody(bytes({ pattern: 'read', tools }), lists);
    lists.set(toolsKey!, list);
    const toolsJson = JSON.stringify(tools);
    for (const malformed of [
      `{"pattern":"read" "tools":${toolsJson}}`,
      `{"pattern":"read","tools":${toolsJson}}}`,
      `{"pattern":"read","tools":${toolsJson},}`,
    ]) {
      expect(() => readToolListBody(Buffer.from(malformed), lists)).toThrow(expect.objectContaining({ code: 'invalid_json' }));
    }
  });

  it('never files one list under the digest of another, whatever the keys look like', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    const poisoned = Buffer.from(`{"pattern":"x","tools":${JSON.stringify(tools)},"tool\\u0073":[{"name":"other"}]}`);
    const read = readToolListBody(poisoned, lists);
    expect(read.toolsKey).toBeUndefined();
    expect(read.json).toEqual({ pattern: 'x', tools: [{ name: 'other' }] });
  });

  it('refuses a body whose top level is not an object or array', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    for (const body of ['null', '5', '"tools"']) {
      expect(() => readToolListBody(Buffer.from(body), lists)).toThrow(expect.objectContaining({ code: 'invalid_json' }));
    }
  });

  it('reads an empty body as an empty object and tolerates a byte order mark', () => {
    const lists = new LruCache<string, CachedToolList>(4);
    expect(readToolListBody(Buffer.alloc(0), lists).json).toEqual({});
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes({ pattern: 'x', tools: [] })]);
    expect(readToolListBody(withBom, lists).json).toEqual({ pattern: 'x', tools: [] });
  });
});

describe('a remembered list found again by its bytes (KnownBytes)', () => {
  const list: CachedToolList = { tools: [], toolsIn: 2, bm25: new Bm25Index([]), servers: { bm25: new Bm25Index([]), members: new Map() } };
  const other: CachedToolList = { ...list, toolsIn: 1 };
  const toolsJson = JSON.stringify(tools);
  const otherJson = JSON.stringify([{ name: 'other', description: 'another list, long enough to be remembered by its bytes' }]);

  /** A cache holding `tools` (and the other list), their bytes known from one turn each, as a selector's would be. */
  function remembered() {
    const lists = new LruCache<string, CachedToolList>(4);
    const known = new KnownBytes(1024 * 1024);
    for (const [json, value] of [
      [toolsJson, list],
      [otherJson, other],
    ] as const) {
      const body = Buffer.from(`{"pattern":"x","tools":${json}}`);
      lists.set(readToolListBody(body, lists).toolsKey!, value);
      expect(readToolListBody(body, lists, known).cached).toBe(value);
    }
    expect(known.size).toBe(2);
    return { lists, known };
  }

  /** What the full path reads (scan, digest), or the error it throws. */
  const outcome = (read: () => ToolListBody) => {
    try {
      const { json, toolsKey, cached } = read();
      return { json, toolsKey, cached };
    } catch (error) {
      return { error: (error as { code?: string }).code, message: (error as Error).message };
    }
  };

  it('reads a resent list by its known bytes, exactly as the full path (scan and digest) reads it', () => {
    const { lists, known } = remembered();
    const find = vi.spyOn(known, 'find');
    for (const text of [
      `{"pattern":"read a file","top_k":5,"tools":${toolsJson}}`,
      `{"query":"web","always_keep":["x"],"tools":${toolsJson},"max_tools":3,"compression_model_name":"m","source":"gateway:anthropic"}`,
      `\ufeff{ "pattern" : "read" ,\n "tools" :\t${toolsJson} }`,
    ]) {
      const body = Buffer.from(text);
      find.mockClear();
      const fast = readToolListBody(body, lists, known);
      expect(fast.cached).toBe(list);
      // Found by its bytes where its array opens (positions after a byte order mark).
      const bom = body[0] === 0xef ? 3 : 0;
      expect(find.mock.results.map(({ value }) => value)).toEqual([{ key: fast.toolsKey, end: body.indexOf(toolsJson) + toolsJson.length - bom }]);
      expect(outcome(() => fast)).toEqual(outcome(() => readToolListBody(body, lists)));
    }
  });

  it('never takes known bytes that are not the top-level tools array, nor a body that is not valid JSON', () => {
    const { lists, known } = remembered();
    for (const text of [
      // Known bytes nested first, another top-level list after.
      `{"meta":{"tools":${toolsJson}},"pattern":"x","tools":${otherJson}}`,
      // The list twice at the top: JSON.parse keeps the last.
      `{"pattern":"x","tools":${toolsJson},"tools":${otherJson}}`,
      `{"pattern":"x","tools":${otherJson},"tools":${toolsJson}}`,
      // An escaped key spells tools: JSON.parse reads it as the list.
      `{"pattern":"x","tools":${toolsJson},"tool\\u0073":[{"name":"other"}]}`,
      // Known bytes where a string should be, in an array, as a prefix of a longer array.
      `{"pattern":"x","tools":${toolsJson.slice(0, -1)},{"name":"third"}]}`,
      `{"pattern":"x","list":[${toolsJson}],"tools":${otherJson}}`,
      `{"pattern":"x","always_keep":["tools"],"tools":${toolsJson}}`,
      // Malformed around known bytes.
      `{"pattern":"x","tools":${toolsJson}}}`,
      `{"pattern":"x","tools":${toolsJson},}`,
      `{"pattern":"x" "tools":${toolsJson}}`,
      `["tools",{"tools":${toolsJson}}]`,
      `{"pattern":"x","tools":${toolsJson}`,
    ]) {
      const body = Buffer.from(text);
      expect(
        outcome(() => readToolListBody(body, lists, known)),
        text.slice(0, 60),
      ).toEqual(outcome(() => readToolListBody(body, lists)));
    }
  });

  it('equals the full path on random bodies built around a known list', () => {
    const { lists, known } = remembered();
    const random = seededRandom(75);
    for (let round = 0; round < 300; round++) {
      const before: Record<string, unknown> = {};
      const after: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(random() * 3); i++) before[random() < 0.3 ? 'tools' : `k${i}`] = randomValue(random, 0);
      for (let i = 0; i < Math.floor(random() * 3); i++) after[random() < 0.3 ? 'tools' : `j${i}`] = randomValue(random, 0);
      const head = JSON.stringify(before).slice(0, -1);
      const tail = JSON.stringify(after).slice(1);
      const text = `${head}${head === '{' ? '' : ','}"tools":${random() < 0.8 ? toolsJson : otherJson}${tail === '}' ? '' : ','}${tail}`;
      const body = Buffer.from(random() < 0.1 ? text.slice(0, -1 - Math.floor(random() * 3)) : text);
      expect(
        outcome(() => readToolListBody(body, lists, known)),
        text.slice(0, 80),
      ).toEqual(outcome(() => readToolListBody(body, lists)));
    }
  });

  it('reads a forgotten list whose bytes are still known in full, under the same key', async () => {
    const { lists, known } = remembered();
    const body = Buffer.from(`{"pattern":"x","tools":${toolsJson}}`);
    const key = readToolListBody(body, lists).toolsKey!;
    lists.delete(key);
    const read = readToolListBody(body, lists, known);
    expect(read).toEqual({ json: { pattern: 'x', tools }, toolsKey: key });
    expect(await readToolListBodyInSlices(body, lists, known)).toEqual(read);
  });
});

describe('KnownBytes', () => {
  const text = (label: string, length = 100) => Buffer.from(label.padEnd(length, '.'));

  it('finds a string at a position by its bytes, not by a shared head, and refreshes what it finds', () => {
    const known = new KnownBytes(1000);
    known.remember('a', text('[same head and then a', 100));
    known.remember('b', text('[same head and then b', 120));
    const body = Buffer.concat([Buffer.from('{"tools":'), text('[same head and then b', 120), Buffer.from('}')]);
    expect(known.find(body, 9)).toEqual({ key: 'b', end: 129 });
    expect(known.find(body, 8)).toBeUndefined();
    expect(known.find(body, body.length - 10)).toBeUndefined();
    // A string shorter than the head is not kept (too short to be worth it, and it cannot be found by one).
    known.remember('short', Buffer.from('[1]'));
    expect(known.size).toBe(2);
  });

  it('holds at most its bytes, forgetting the least recently found first, and a few strings per head', () => {
    const known = new KnownBytes(250);
    known.remember('a', text('a'));
    known.remember('b', text('b'));
    expect(known.find(text('a'), 0)?.key).toBe('a');
    known.remember('c', text('c'));
    expect(known.heldBytes).toBeLessThanOrEqual(250);
    expect(known.find(text('b'), 0)).toBeUndefined();
    expect(known.find(text('a'), 0)?.key).toBe('a');
    expect(known.find(text('c'), 0)?.key).toBe('c');
    known.remember('huge', text('huge', 251));
    expect(known.find(text('huge', 251), 0)).toBeUndefined();

    const many = new KnownBytes(1_000_000);
    const same = (i: number) => Buffer.concat([Buffer.alloc(HEAD_BYTES, 0x61), Buffer.from(String(i))]);
    for (let i = 0; i < CANDIDATES_PER_HEAD + 3; i++) many.remember(`k${i}`, same(i));
    expect(many.size).toBe(CANDIDATES_PER_HEAD);
    expect(many.find(same(0), 0)).toBeUndefined();
    expect(many.find(same(CANDIDATES_PER_HEAD + 2), 0)?.key).toBe(`k${CANDIDATES_PER_HEAD + 2}`);
  });
});

describe('the span scans in time slices (a large body is scanned between other requests)', () => {
  const body = bytes({ pattern: 'read', tools: largeToolList(11), top_k: 3 }, 1);
  const span = topLevelArraySpan(body, 'tools')!;

  it('stop only between 64 KB steps, yield when the slice is due, and find what the plain scans find', async () => {
    expect(body.length).toBeGreaterThan(4 * 64 * 1024);
    const scanned = async <T>(scan: (slice: TimeSlice) => Promise<T>, step?: number) => {
      // Counts the event loop's turns while the scan runs: one per yield.
      let yields = 0;
      let scanning = true;
      const counting = () =>
        setImmediate(() => {
          if (!scanning) return;
          yields++;
          counting();
        });
      counting();
      const found = await withRunningClock(() => scan(new TimeSlice()), step);
      scanning = false;
      return { found, yields };
    };
    const spanInSlices = await scanned((slice) => topLevelArraySpanInSlices(body, 'tools', slice));
    expect(spanInSlices.found).toEqual(span);
    // One chance to stop per 64 KB scanned: a slice due at every one yields that often, no more.
    expect(spanInSlices.yields).toBeGreaterThanOrEqual(Math.floor(span.end / (64 * 1024)) - 1);
    expect(spanInSlices.yields).toBeLessThanOrEqual(Math.ceil(body.length / (64 * 1024)) + 1);
    const elements = await scanned((slice) => arrayElementSpansInSlices(body, span, slice));
    expect(elements.found).toEqual(arrayElementSpans(body, span));
    expect(elements.yields).toBeGreaterThanOrEqual(Math.floor((span.end - span.start) / (64 * 1024)) - 1);
    // A clock that stands still: the slice never ends, so the scan runs in one piece.
    expect((await scanned((slice) => topLevelArraySpanInSlices(body, 'tools', slice), 0)).yields).toBe(0);
  });
});

describe('readToolListBodyInSlices (a large tools array, parsed one tool at a time)', () => {
  const largeTools = largeToolList(7);
  const lists = () => new LruCache<string, CachedToolList>(4);

  it('reads exactly what JSON.parse of the whole body reads, however it is spaced, and yields on the way', async () => {
    for (const body of [
      bytes({ pattern: 'read', tools: largeTools, top_k: 3 }),
      Buffer.from(`{"tools": [1], "pattern": "x", "tools2": [],\n "tools" : ${JSON.stringify(largeTools, null, 2)} }`),
    ]) {
      expect(body.length).toBeGreaterThan(SLICED_PARSE_BYTES);
      let turned = false;
      setImmediate(() => (turned = true));
      const read = await withRunningClock(() => readToolListBodyInSlices(body, lists()));
      expect(turned).toBe(true);
      expect(read.json).toEqual(JSON.parse(body.toString('utf8')));
      expect(read.toolsKey).toBe(readToolListBody(body, lists()).toolsKey);
    }
  });

  it('rejects a malformed array as the full parse does, and unsafe text naming the tool', async () => {
    const toolsJson = JSON.stringify(largeTools);
    const malformed = [
      `{"pattern":"x","tools":${toolsJson.slice(0, -1)},]}`,
      `{"pattern":"x","tools":${toolsJson.slice(0, -1)}{"name":"a"}]}`,
      `{"pattern":"x","tools":[,${toolsJson.slice(1)}}`,
      `{"pattern":"x","tools":${toolsJson.replace('"tool_5"', '"tool_5" "x"')}}`,
      `{"pattern":"x","tools":${toolsJson.replace('{"name":"tool_9"', '[{"name":"tool_9"')}}`,
    ];
    for (const body of malformed) {
      await expect(readToolListBodyInSlices(Buffer.from(body), lists())).rejects.toMatchObject({ code: 'invalid_json' });
    }
    const withNul = bytes({ pattern: 'x', tools: largeTools.map((tool, index) => (index === 2500 ? { ...tool, description: 'a\u0000b' } : tool)) });
    await expect(readToolListBodyInSlices(withNul, lists())).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('tools[2500].description'),
    });
  });

  it('splits an array at its own commas only', () => {
    const split = (text: string) => {
      const body = Buffer.from(`{"tools":${text}}`);
      return arrayElementSpans(body, topLevelArraySpan(body, 'tools')!)?.map(({ start, end }) => body.toString('utf8', start, end));
    };
    expect(split('[]')).toEqual([]);
    expect(split('[ 1 , "a,]" ,{"b":[1,2]} , [3,{}] ]')).toEqual(['1', '"a,]"', '{"b":[1,2]}', '[3,{}]']);
    expect(split('["\\\\", "\\"]"]')).toEqual(['"\\\\"', '"\\"]"']);
    expect(split('[1,,2]')).toBeUndefined();
    expect(split('[1,]')).toBeUndefined();
  });
});

describe('readJsonBodyInSlices (a catalog write: a large tools array or a bare array, parsed one tool at a time)', () => {
  const largeTools = largeToolList(11);
  /** The parse, and whether other callbacks ran before it finished. */
  const read = async (body: Buffer) => {
    let turned = false;
    setImmediate(() => (turned = true));
    const json = await withRunningClock(() => readJsonBodyInSlices(body));
    return { json, turned };
  };

  it('reads exactly what JSON.parse reads, in slices, for {"tools": [...]} and for a bare array', async () => {
    for (const body of [
      bytes({ tools: largeTools }),
      Buffer.from(`\ufeff{"tools": [1], "note": "the \\"tools\\": [x]",\n "tools" : ${JSON.stringify(largeTools, null, 2)}, "after": {"tools": []} }`),
      bytes(largeTools, 2),
      Buffer.from(`  \n${JSON.stringify(largeTools)}\n `),
    ]) {
      expect(body.length).toBeGreaterThan(SLICED_PARSE_BYTES);
      const { json, turned } = await read(body);
      expect(json).toEqual(JSON.parse(body.toString('utf8').replace(/^\ufeff/, '')));
      expect(turned, 'yielded to other callbacks').toBe(true);
    }
  });

  it('reads other shapes (an MCP result, a small array) whole, with the same result', async () => {
    for (const body of [bytes({ result: { tools: largeTools } }), bytes({ tools: largeTools.slice(0, 3) })]) {
      expect(await readJsonBodyInSlices(body)).toEqual(JSON.parse(body.toString('utf8')));
    }
  });

  it('rejects what the full parse rejects, naming the field at its place in the body', async () => {
    const toolsJson = JSON.stringify(largeTools);
    for (const body of [
      `{"tools":${toolsJson.slice(0, -1)},]}`,
      `${toolsJson.slice(0, -1)},]`,
      `[,${toolsJson.slice(1)}`,
      `"${'x'.repeat(SLICED_PARSE_BYTES)}"`,
    ]) {
      await expect(readJsonBodyInSlices(Buffer.from(body))).rejects.toMatchObject({ code: 'invalid_json' });
    }
    const withNul = largeTools.map((tool, index) => (index === 2500 ? { ...tool, description: 'a\u0000b' } : tool));
    await expect(readJsonBodyInSlices(bytes({ tools: withNul }))).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('tools[2500].description'),
    });
    await expect(readJsonBodyInSlices(bytes(withNul))).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('[2500].description'),
    });
  });

  it(`counts a tool's nesting from the top of the body (${MAX_JSON_DEPTH} levels)`, async () => {
    const nested = (levels: number) => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`) as unknown;
    // The nesting's outermost object sits at tools[10].inputSchema, 3 keys below the top.
    const withDepth = (levels: number) => bytes({ tools: largeTools.map((tool, index) => (index === 10 ? { ...tool, inputSchema: nested(levels) } : tool)) });
    await expect(readJsonBodyInSlices(withDepth(MAX_JSON_DEPTH - 2))).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining(`deeper than ${MAX_JSON_DEPTH}`),
    });
    expect(() => assertSafeJson(JSON.parse(withDepth(MAX_JSON_DEPTH - 2).toString('utf8')))).toThrow(/deeper than/);
    expect(((await readJsonBodyInSlices(withDepth(MAX_JSON_DEPTH - 3))) as { tools: unknown[] }).tools).toHaveLength(largeTools.length);
    expect(() => assertSafeJson(JSON.parse(withDepth(MAX_JSON_DEPTH - 3).toString('utf8')))).not.toThrow();
  });
});

describe('jsonInSlices (which catalog bodies are read in slices)', () => {
  const largeTools = largeToolList(13);
  const large = bytes({ tools: largeTools });
  /** What a handler behind jsonInSlices and express.json sees: the body, and whether the sliced reader took it. */
  const send = async (body: Uint8Array, headers: Record<string, string>, chunked = false) => {
    const app = express();
    app.use(jsonInSlices(10 * 1024 * 1024));
    app.use(express.json({ limit: 10 * 1024 * 1024 }));
    app.put(
      '/',
      (req, res) =>
        void res.json({
          sliced: res.locals.bodyChecked === true,
          tools: (req.body as { tools?: unknown[] }).tools?.length ?? null,
          keys: Object.keys(req.body as object),
        }),
    );
    app.use(((error, _req, res, _next) => void res.status(400).json({ error: String(error) })) as express.ErrorRequestHandler);
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < body.length; at += 64 * 1024) controller.enqueue(body.subarray(at, at + 64 * 1024));
          controller.close();
        },
      });
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: chunked ? stream : body,
        ...(chunked ? { duplex: 'half' } : {}),
      } as RequestInit);
      return { status: response.status, ...((await response.json()) as { sliced: boolean; tools: number | null; keys: string[] }) };
    } finally {
      server.close();
    }
  };

  it('reads a large body in slices whether its size is declared, chunked or compressed', async () => {
    const gzipped = gzipSync(large);
    expect(gzipped.length).toBeLessThan(SLICED_PARSE_BYTES);
    for (const [label, answer] of [
      ['declared', await send(large, {})],
      ['chunked', await send(large, {}, true)],
      ['gzip, declared small', await send(gzipped, { 'content-encoding': 'gzip' })],
      ['gzip, chunked', await send(gzipped, { 'content-encoding': 'gzip' }, true)],
    ] as const) {
      expect(answer, label).toMatchObject({ status: 200, sliced: true, tools: largeTools.length });
    }
  });

  it('reads small bodies as express.json does, and leaves other charsets to it', async () => {
    expect(await send(bytes({ tools: largeTools.slice(0, 2) }), {}, true)).toMatchObject({ status: 200, tools: 2 });
    expect(await send(new Uint8Array(0), {}, true)).toMatchObject({ status: 200, keys: [] });
    expect(await send(Buffer.from('{"tools": [1,]}'), {}, true)).toMatchObject({ status: 400 });
    expect(await send(bytes({ tools: largeTools.slice(0, 2) }), {})).toMatchObject({ status: 200, sliced: false, tools: 2 });
    const utf16 = Buffer.from(`\ufeff${large.toString('utf8')}`, 'utf16le');
    expect(await send(utf16, { 'content-type': 'application/json; charset=utf-16' })).toMatchObject({ status: 200, sliced: false, tools: largeTools.length });
  });
});

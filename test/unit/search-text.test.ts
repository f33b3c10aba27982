import { describe, it, expect } from 'vitest';
import type { CanonicalTool } from '../../src/lib/tool.js';
import { BM25_TERM_UNIT } from '../../src/ranking/bm25.js';
import {
  MAX_EMBEDDED_PARAMETERS,
  MAX_EMBEDDING_CHARS,
  MAX_PARAMETERS,
  MAX_PARAMETER_DESCRIPTION_CHARS,
  documentTerms,
  embeddingText,
  isReadableText,
  queryTerms,
  schemaParameters,
} from '../../src/ranking/search-text.js';

const tool: CanonicalTool = {
  name: 'get_stock_price',
  description: 'Current price of a stock.',
  inputSchema: {
    type: 'object',
    properties: {
      symbol: { type: 'string', description: 'Ticker symbol' },
      range: { anyOf: [{ type: 'object', properties: { startDate: { type: 'string' } } }, { type: 'null' }] },
    },
  },
  tags: ['Finance'],
  server: 'yahoo-finance',
};

describe('documentTerms', () => {
  it('counts name terms twice, description, server and tags once, parameters half, in units of 1/BM25_TERM_UNIT', () => {
    const { termFreqs, length } = documentTerms(tool);
    expect(BM25_TERM_UNIT).toBe(2);
    expect(termFreqs.get('get')).toBe(4);
    expect(termFreqs.get('stock')).toBe(6); // twice from the name, once from the description
    expect(termFreqs.get('price')).toBe(6);
    expect(termFreqs.get('yahoo')).toBe(2);
    expect(termFreqs.get('finance')).toBe(4); // server and tag
    expect(termFreqs.get('ticker')).toBe(1); // a parameter's name
    expect(termFreqs.get('start')).toBe(1); // nested through anyOf
    expect(length).toBe([...termFreqs.values()].reduce((a, b) => a + b, 0));
  });
  it('handles a bare tool', () => {
    const bare: CanonicalTool = { name: '', description: '', inputSchema: null, tags: [], server: null };
    expect(documentTerms(bare)).toEqual({ termFreqs: new Map(), length: 0 });
  });
});

describe('schemaParameters', () => {
  it('walks nested properties and array items breadth-first, bounded', () => {
    const schema = {
      properties: {
        a: { type: 'array', items: { properties: { b: { description: 'deep' } } } },
        ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, {}])),
      },
    };
    const parameters = schemaParameters(schema);
    expect(parameters[0]).toEqual({ name: 'a', description: '' });
    expect(parameters).toHaveLength(MAX_PARAMETERS);
    expect(schemaParameters(null)).toEqual([]);
    expect(schemaParameters({ properties: 'not an object' })).toEqual([]);
  });
  it('terminates on self-referencing schemas', () => {
    const node: Record<string, unknown> = { properties: {} };
    (node.properties as Record<string, unknown>).self = node;
    expect(schemaParameters(node).length).toBeGreaterThan(0);
  });
});

describe('embeddingText', () => {
  it('reads the name as words, then the description, bounded', () => {
    expect(embeddingText(tool)).toBe('get stock price: Current price of a stock.');
    expect(embeddingText({ ...tool, description: 'x '.repeat(1000) }).length).toBe(MAX_EMBEDDING_CHARS);
    expect(embeddingText({ ...tool, name: 'getUserByID', description: '', inputSchema: null })).toBe('get User By ID');
  });
  it('describes a tool by its parameters when the model cannot read its description', () => {
    const byParameters = 'get stock price: symbol (Ticker symbol), range, start Date';
    expect(embeddingText({ ...tool, description: '' })).toBe(byParameters);
    expect(embeddingText({ ...tool, description: '获取股票的当前价格。' })).toBe(byParameters);
    // A parameter description in Chinese is left out too; a long one is cut.
    const long = `Maximum number of results ${'to return '.repeat(20)}`;
    const schema = { type: 'object', properties: { q: { description: '搜索关键词' }, limit: { description: long } } };
    expect(embeddingText({ ...tool, description: '', inputSchema: schema })).toBe(
      `get stock price: q, limit (${long.slice(0, MAX_PARAMETER_DESCRIPTION_CHARS)})`,
    );
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    expect(embeddingText({ ...tool, description: '', inputSchema: wide }).split(', ')).toHaveLength(MAX_EMBEDDED_PARAMETERS);
    // A mostly English description with a Chinese name in it is read as it is.
    expect(embeddingText({ ...tool, description: 'Search Bilibili (哔哩哔哩) videos by keyword.' })).toBe(
      'get stock price: Search Bilibili (哔哩哔哩) videos by keyword.',
    );
  });
  it('judges readability by the share of CJK letters', () => {
    expect(isReadableText('Current price of a stock.')).toBe(true);
    expect(isReadableText('')).toBe(false);
    expect(isReadableText('42 / 7')).toBe(false);
    expect(isReadableText('获取微博热搜榜')).toBe(false);
    expect(isReadableText('获取微博热搜榜 (weibo)')).toBe(false);
  });
  it('keeps only the first sentence of the description, with file names and versions whole', () => {
    expect(embeddingText({ ...tool, description: 'Reads config.json v1.2 files. Options: encoding, size.' })).toBe(
      'get stock price: Reads config.json v1.2 files.',
    );
  });
});

describe('queryTerms', () => {
  it('uses the document tokenizer', () => {
    expect(queryTerms('What is the stock price of Apple?')).toEqual(['stock', 'price', 'apple']);
  });
});

import { describe, expect, it } from 'vitest';
import { leadingQuery } from '../../src/http/early-query.js';
import { cutQuery, QUERY_CHARS_MAX } from '../../src/lib/query-length.js';

const head = (text: string) => Buffer.from(text);

describe('leadingQuery (the query a selector body opens with)', () => {
  it('reads the leading pattern or query as JSON.parse does, escapes included', () => {
    expect(leadingQuery(head('{"pattern":"read a file","top_k":5,"tools":[{"na'))).toBe('read a file');
    expect(leadingQuery(head('{"query":"open an issue","always_keep":[]'))).toBe('open an issue');
    expect(leadingQuery(head('\ufeff { "pattern" :\n\t"x y" , "tools": ['))).toBe('x y');
    for (const pattern of ['say "hi" \\ bye', 'caf\u00e9 \u2028 \ud83d\ude00', 'a\\"b', '\\\\', '<stderr> & co']) {
      const body = JSON.stringify({ pattern, tools: [] });
      expect(leadingQuery(head(body.slice(0, body.indexOf('"tools"'))))).toBe(pattern);
    }
    // Go's encoder escapes HTML characters (what gateways send).
    expect(leadingQuery(head('{"pattern":"\\u003cstderr\\u003e \\u0026 logs","tools":['))).toBe('<stderr> & logs');
  });

  it('cuts an overlong query as the selector does', () => {
    // Longer than the bytes it reads: left to the selector.
    expect(leadingQuery(head(JSON.stringify({ pattern: 'word '.repeat(4000), tools: [] })))).toBeUndefined();
    const fits = 'w'.repeat(QUERY_CHARS_MAX + 5);
    expect(cutQuery(fits)).not.toBe(fits);
    expect(leadingQuery(head(`{"pattern":"${fits}"`))).toBe(cutQuery(fits));
  });

  it('gives up rather than guess: another first key, a string not complete, not a string, blank, not JSON', () => {
    for (const text of [
      '{"top_k":5,"pattern":"read"',
      '{"tools":[],"pattern":"read"}',
      '{"pattern":"read a fi',
      '{"pattern":"ends with an escaped quote\\"',
      '{"pattern":5,"tools":[]}',
      '{"pattern":null}',
      '{"pattern":"   ","tools":[]}',
      '{"pattern" "read"}',
      '{"patterns":"read"}',
      '{"p\\u0061ttern":"read"}',
      '["pattern","read"]',
      '{"pattern":"bad \\x escape"}',
      '',
      '{',
      '{"pat',
      '{"query"',
    ]) {
      expect(leadingQuery(head(text)), text).toBeUndefined();
    }
  });
});

import { describe, expect, it } from 'vitest';
import { errorClass } from '../../src/upstream/status.js';

describe('errorClass', () => {
  it("reads the gateway's own words for a failure as a class an agent can act on", () => {
    expect(
      [
        'connection failed',
        'HTTP 401',
        'HTTP 403',
        'HTTP 500',
        'not an MCP server',
        'result too large',
        'refused by policy (loopback)',
        'malformed tool list: entry 3 has no name',
        '2 tools not synced, the name held by another source of the catalog: a (a pushed tool), b (upstream "x")',
        'not served, the name carries invisible characters: a',
        'something new',
      ].map(errorClass),
    ).toEqual([
      'connection_failed',
      'unauthorized',
      'unauthorized',
      'http_error',
      'not_mcp',
      'too_large',
      'refused_address',
      'malformed_list',
      'name_conflict',
      'name_conflict',
      'other',
    ]);
  });
});

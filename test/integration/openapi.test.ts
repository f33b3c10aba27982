import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { assertMatchesSpec } from '../helpers/openapi.js';

describe('openapi.yaml', () => {
  it('lints clean with Redocly (recommended rules)', () => {
    const root = new URL('../..', import.meta.url).pathname;
    const lint = spawnSync(`${root}node_modules/.bin/redocly`, ['lint', 'openapi.yaml', '--format=stylish'], { cwd: root, encoding: 'utf8' });
    const output = `${lint.stdout}${lint.stderr}`;
    expect(output, output).toContain('Your API description is valid');
    expect(lint.status, output).toBe(0);
  });

  it('is what responses are checked against, and the check rejects a drifting body or status', () => {
    const catalog = {
      name: 'c',
      tool_count: 1,
      definition_tokens: { anthropic: 40, openai: 43, as_sent: 38 },
      revision: 1,
      code_mode: true,
      result_scan: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      embedding: null,
      upstreams: [],
    };
    expect(() => assertMatchesSpec('GET', '/v1/catalogs/c', 200, catalog)).not.toThrow();
    const { tool_count: _dropped, ...withoutCount } = catalog;
    expect(() => assertMatchesSpec('GET', '/v1/catalogs/c', 200, withoutCount)).toThrow(/tool_count/);
    expect(() => assertMatchesSpec('GET', '/v1/catalogs/c', 418, {})).toThrow(/documents no 418/);
    expect(() => assertMatchesSpec('POST', '/v1/tool-discovery/search', 200, { selected_names: ['a'] })).toThrow(/success/);
    expect(() =>
      assertMatchesSpec('POST', '/v1/tool-discovery/search', 200, { selected_names: ['a'], success: true, data: { relevant_tools: ['a'] } }),
    ).not.toThrow();
  });
});

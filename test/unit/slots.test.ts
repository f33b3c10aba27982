import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/lib/slots.js';

/** A task that ends when `end` is called, recording when it started. */
function gate(log: string[], name: string) {
  let end!: (value: string) => void;
  let fail!: (error: Error) => void;
  const ended = new Promise<string>((resolve, reject) => ((end = resolve), (fail = reject)));
  return { task: () => (log.push(`start ${name}`), ended), end: () => end(name), fail: (message: string) => fail(new Error(message)) };
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('Slots', () => {
  it('runs at most `limit` tasks at once, starting waiting ones in the order they asked', async () => {
    const log: string[] = [];
    const slots = new Slots(2);
    const gates = ['a', 'b', 'c', 'd'].map((name) => gate(log, name));
    const results = gates.map((g) => slots.run(g.task));
    await turns();
    expect(log).toEqual(['start a', 'start b']);
    gates[1]!.end();
    await turns();
    expect(log).toEqual(['start a', 'start b', 'start c']);
    gates[0]!.end();
    gates[2]!.end();
    await turns();
    expect(log).toEqual(['start a', 'start b', 'start c', 'start d']);
    gates[3]!.end();
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('start resolves once the task has started, so a producer waits for a free place, not for the task', async () => {
    const log: string[] = [];
    const slots = new Slots(1);
    const first = gate(log, 'first');
    const second = gate(log, 'second');
    const { done } = await slots.start(first.task);
    let secondStarted = false;
    const started = slots.start(second.task).then((value) => ((secondStarted = true), value));
    await turns();
    expect(secondStarted).toBe(false);
    first.end();
    expect(await done).toBe('first');
    const later = await started;
    expect(log).toEqual(['start first', 'start second']);
    second.end();
    expect(await later.done).toBe('second');
  });

  it('frees the place of a task that fails, and the failure waits for the caller (no unhandled rejection)', async () => {
    const log: string[] = [];
    const slots = new Slots(1);
    const failing = gate(log, 'failing');
    const next = gate(log, 'next');
    const { done } = await slots.start(failing.task);
    failing.fail('store failed');
    await turns(); // would be reported unhandled here had Slots not marked it
    const after = slots.run(next.task);
    await turns();
    expect(log).toEqual(['start failing', 'start next']);
    next.end();
    expect(await after).toBe('next');
    await expect(done).rejects.toThrow('store failed');
    expect(() => new Slots(0)).toThrow(/at least 1/);
  });
});

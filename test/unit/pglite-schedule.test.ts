import { describe, expect, it } from 'vitest';
import { BACKGROUND_AGE_MS, takeNext } from '../../src/store/pglite-schedule.js';

const unit = (name: string, arrived: number) => ({ name, arrived });

describe('the embedded database scheduler', () => {
  it('runs units a request waits for first, in arrival order', () => {
    const waiting = { request: [unit('r1', 5), unit('r2', 6)], background: [unit('b1', 0), unit('b2', 1)] };
    expect([takeNext(waiting, 10), takeNext(waiting, 11)].map((u) => u?.name)).toEqual(['r1', 'r2']);
    expect([takeNext(waiting, 12), takeNext(waiting, 13)].map((u) => u?.name)).toEqual(['b1', 'b2']);
    expect(takeNext(waiting, 14)).toBeUndefined();
  });

  it('runs a background unit next once it has waited its age, so it is never starved', () => {
    const waiting = { request: [unit('r1', 100), unit('r2', 200)], background: [unit('b1', 0)] };
    expect(takeNext(waiting, BACKGROUND_AGE_MS - 1)?.name).toBe('r1');
    expect(takeNext(waiting, BACKGROUND_AGE_MS)?.name).toBe('b1');
    expect(takeNext(waiting, BACKGROUND_AGE_MS)?.name).toBe('r2');
  });
});

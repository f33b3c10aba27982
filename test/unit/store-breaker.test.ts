import { describe, expect, it } from 'vitest';
import { StoreBreaker } from '../../src/search/store-breaker.js';

describe('StoreBreaker', () => {
  const clock = () => {
    const time = { now: 0 };
    return { time, breaker: new StoreBreaker(1_000, () => time.now) };
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('opens on a failure and closes by itself after the open window', () => {
    const { time, breaker } = clock();
    expect(breaker.open).toBe(false);
    breaker.failed();
    expect(breaker.open).toBe(true);
    time.now = 999;
    expect(breaker.open).toBe(true);
    time.now = 1_000;
    expect(breaker.open).toBe(false);
  });

  it('closes at once on a success', () => {
    const { breaker } = clock();
    breaker.failed();
    breaker.succeeded();
    expect(breaker.open).toBe(false);
  });

  it('stays open while its one probe waits, however long, and closes when the probe is answered', async () => {
    const { time, breaker } = clock();
    breaker.failed();
    let answer!: () => void;
    let reads = 0;
    const read = () => {
      reads++;
      return new Promise<void>((resolve) => (answer = resolve));
    };
    breaker.probe(read);
    breaker.probe(read);
    await settle();
    expect(reads).toBe(1);
    time.now = 60_000;
    expect(breaker.open).toBe(true);
    answer();
    await settle();
    expect(breaker.open).toBe(false);
    breaker.probe(read);
    await settle();
    expect(reads).toBe(2);
  });

  it('a failed probe (thrown or rejected) keeps it open from the failure on', async () => {
    const { time, breaker } = clock();
    breaker.failed();
    time.now = 900;
    breaker.probe(() => Promise.reject(new Error('connection refused')));
    await settle();
    time.now = 1_500;
    expect(breaker.open).toBe(true);
    time.now = 1_900;
    expect(breaker.open).toBe(false);
    breaker.probe(() => {
      throw new Error('no connection');
    });
    await settle();
    expect(breaker.open).toBe(true);
  });
});

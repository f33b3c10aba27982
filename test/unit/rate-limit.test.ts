/** The token bucket behind per-key rate limits (http/rate-limit.ts), on a clock the test moves. */
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/http/rate-limit.js';
import { parseKeysFile } from '../../src/trust/policy.js';

describe('RateLimiter', () => {
  it('lets a key send its minute at once, then one every 60/N seconds; keys count apart', () => {
    const limiter = new RateLimiter();
    const taken = Array.from({ length: 6 }, () => limiter.take('a', 6, 0));
    expect(taken.map((t) => t.ok)).toEqual([true, true, true, true, true, true]);
    expect(taken.map((t) => t.remaining)).toEqual([5, 4, 3, 2, 1, 0]);
    const refused = limiter.take('a', 6, 0);
    expect(refused).toMatchObject({ ok: false, remaining: 0 });
    expect(refused.retryAfterMs).toBeCloseTo(10_000, 6);
    // Another key has its own bucket.
    expect(limiter.take('b', 6, 0).ok).toBe(true);
    // Four seconds on, still refused (6 a minute: one every 10 s), and told how long is left.
    const waiting = limiter.take('a', 6, 4_000);
    expect(waiting.ok).toBe(false);
    expect(waiting.retryAfterMs).toBeCloseTo(6_000, 6);
    expect(limiter.take('a', 6, 10_000).ok).toBe(true);
    expect(limiter.take('a', 6, 10_000).ok).toBe(false);
    // A long pause refills the bucket to a minute's worth, no more.
    const later = Array.from({ length: 7 }, () => limiter.take('a', 6, 3_600_000).ok);
    expect(later).toEqual([true, true, true, true, true, true, false]);
  });
});

describe('requests_per_minute in API_KEYS_FILE', () => {
  const file = (extra: Record<string, unknown>) => JSON.stringify({ keys: [{ key: 'k'.repeat(20), id: 'limited', tenant: 't', ...extra }] });

  it('is read onto the key’s policy, and refused unless a whole number from 1', () => {
    expect(parseKeysFile(file({ requests_per_minute: 120 })).get('k'.repeat(20))).toMatchObject({ id: 'limited', requestsPerMinute: 120 });
    expect(parseKeysFile(file({})).get('k'.repeat(20))!.requestsPerMinute).toBeUndefined();
    for (const bad of [0, -1, 1.5, '60'])
      expect(() => parseKeysFile(file({ requests_per_minute: bad })), String(bad)).toThrow(/key "limited": requests_per_minute/);
  });
});

/**
 * Requests per minute, per API key (API_KEYS_FILE `requests_per_minute`, else RATE_LIMIT_PER_MINUTE
 * for every key; unset: none). A token bucket per key id: it holds a minute's worth and refills
 * continuously, so a key may send its minute's requests at once and then one every 60/N seconds.
 * With REDIS_URL the buckets are Redis's (store/shared-buckets.ts), shared by every replica; a Redis
 * that fails or is slower than SHARED_WAIT_MS leaves the request to this process's bucket (never
 * fail closed; `toolsift_rate_limit_fallbacks_total`). Without it, counted in this process: N
 * replicas let a key through N times as often. Past it: 429 `rate_limited` with `Retry-After`,
 * before the request's body is read. Every answer to a limited key carries `RateLimit-Limit` and
 * `RateLimit-Remaining`.
 */
import type { RequestHandler } from 'express';
import { AppError } from '../errors.js';
import { LruCache } from '../lib/lru-cache.js';
import type { Metrics } from '../metrics.js';
import type { SharedBuckets, Taken } from '../store/shared-buckets.js';
import type { Access } from '../trust/policy.js';

/** How long a request waits for the shared bucket before this process's decides (a local Redis answers in well under 1 ms). */
export const SHARED_WAIT_MS = 50;

/** Keys whose buckets are kept at once: a bucket forgotten is a full one, which only lets a key through. */
const BUCKETS_MAX = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

/** The buckets, one per key id, read at `now` (ms). Pure: the clock comes in. */
export class RateLimiter {
  private readonly buckets = new LruCache<string, Bucket>(BUCKETS_MAX);

  /** Takes one request of `id`'s `perMinute`: whether it may pass, what is left, and when the next one may. */
  take(id: string, perMinute: number, now: number): Taken {
    const perMs = perMinute / 60_000;
    const known = this.buckets.get(id);
    const bucket = known ?? { tokens: perMinute, at: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
    bucket.at = now;
    if (!known) this.buckets.set(id, bucket);
    if (bucket.tokens < 1) return { ok: false, remaining: 0, retryAfterMs: (1 - bucket.tokens) / perMs };
    bucket.tokens -= 1;
    return { ok: true, remaining: Math.floor(bucket.tokens), retryAfterMs: 0 };
  }
}

/** One more request of the key that sent this one, taken from its bucket; refused: why, to tell the caller. */
export type ChargeKey = () => Promise<{ ok: boolean; message: string }>;

const retrySeconds = (taken: Taken) => Math.max(1, Math.ceil(taken.retryAfterMs / 1000));

/** The middleware, after `authenticate` (it reads the key's policy from `res.locals.access`). */
export function rateLimit(options: { perMinute: number | undefined; metrics?: Metrics; shared?: SharedBuckets | null }): RequestHandler {
  const limiter = new RateLimiter();
  const { shared } = options;
  const take = async (id: string, perMinute: number): Promise<Taken> => {
    if (!shared) return limiter.take(id, perMinute, performance.now());
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        shared.take(id, perMinute),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('shared bucket too slow')), SHARED_WAIT_MS);
        }),
      ]);
    } catch {
      options.metrics?.rateLimitFallbacks.inc();
      return limiter.take(id, perMinute, performance.now());
    } finally {
      clearTimeout(timer);
    }
  };
  return async (_req, res, next) => {
    const access = res.locals.access as Access | undefined;
    const perMinute = access?.policy.requestsPerMinute ?? options.perMinute;
    if (!access || !perMinute) {
      next();
      return;
    }
    const id = access.policy.id;
    // What else this request does in the key's name counts too (a run_code program's tool calls).
    res.locals.chargeKey = (async () => {
      const more = await take(id, perMinute);
      if (!more.ok) options.metrics?.rateLimited.inc({ key: id });
      return { ok: more.ok, message: `key "${id}" is limited to ${perMinute} requests a minute: retry in ${retrySeconds(more)} s` };
    }) satisfies ChargeKey;
    const taken = await take(id, perMinute);
    res.setHeader('RateLimit-Limit', String(perMinute));
    res.setHeader('RateLimit-Remaining', String(taken.remaining));
    if (taken.ok) {
      next();
      return;
    }
    const seconds = retrySeconds(taken);
    res.setHeader('Retry-After', String(seconds));
    options.metrics?.rateLimited.inc({ key: id });
    throw new AppError('rate_limited', `key "${id}" is limited to ${perMinute} requests a minute: retry in ${seconds} s`);
  };
}

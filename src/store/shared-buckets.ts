/**
 * Token buckets kept in Redis (REDIS_URL), one per API key id, so that every replica takes from the
 * same bucket (http/rate-limit.ts): N replicas let a key through as often as one. One script per
 * request, atomic in Redis and timed by Redis's own clock (replicas' clocks may differ); a bucket
 * not touched for a minute holds a full minute's worth again, so its key expires then.
 */
import type { Redis } from 'ioredis';

/** What one request took from its key's bucket. */
export interface Taken {
  ok: boolean;
  /** Whole requests left in the bucket. */
  remaining: number;
  /** When the next request may pass, ms (0 when this one did). */
  retryAfterMs: number;
}

export interface SharedBuckets {
  take(id: string, perMinute: number): Promise<Taken>;
  close(): Promise<void>;
}

/** KEYS[1] the bucket; ARGV[1] requests a minute. Returns {passed, tokens left (string: Lua numbers pass as integers)}. */
const TAKE = `
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local capacity = tonumber(ARGV[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * capacity / 60000)
local passed = 0
if tokens >= 1 then
  tokens = tokens - 1
  passed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 60000)
return {passed, tostring(tokens)}
`;

type WithTake = Redis & { toolsiftTakeToken(key: string, perMinute: number): Promise<[number, string]> };

/** Buckets in `redis` under `prefix` + key id; `close` ends the connection. */
export function redisBuckets(redis: Redis, prefix = 'toolsift:rate:'): SharedBuckets {
  redis.defineCommand('toolsiftTakeToken', { numberOfKeys: 1, lua: TAKE });
  const client = redis as WithTake;
  return {
    async take(id, perMinute) {
      const [passed, left] = await client.toolsiftTakeToken(`${prefix}${id}`, perMinute);
      const tokens = Number(left);
      if (passed === 1) return { ok: true, remaining: Math.floor(tokens), retryAfterMs: 0 };
      return { ok: false, remaining: 0, retryAfterMs: ((1 - tokens) * 60_000) / perMinute };
    },
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * What benches that write a large catalog share: the push a platform team makes (a PUT of the
 * first slice, which replaces the catalog, then POSTs of the rest), and dropping a run's queue keys.
 */
import { Redis } from 'ioredis';

/** Tools per request: the request body limit (25 MB) holds 5,000 of the corpora's. */
export const SLICE = 5_000;

/** Writes `tools` to `catalog` at `base` (`http://host:port`) in requests of `slice` tools: PUT first, POSTs after. */
export async function pushInSlices(base: string, catalog: string, tools: readonly unknown[], slice = SLICE): Promise<void> {
  for (let from = 0; from < tools.length; from += slice) {
    const [method, path] = from === 0 ? ['PUT', `/v1/catalogs/${catalog}`] : ['POST', `/v1/catalogs/${catalog}/tools`];
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tools: tools.slice(from, from + slice) }),
    });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  }
}

/** Deletes every Redis key of a run's QUEUE_PREFIX. */
export async function dropQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
}

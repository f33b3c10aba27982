/**
 * What a key's rate limit adds to a request (`requests_per_minute`, http/rate-limit.ts): the same
 * cheap request (GET /v1/catalogs) by a key without a limit, with one counted in the process, and
 * with one counted in Redis (`REDIS_URL`: one atomic script a request, store/shared-buckets.ts),
 * three services in this process, one request at a time, in alternating rounds.
 *
 *   npx tsx bench/probes/rate-limit.ts [--requests 500] [--rounds 4] [--redis redis://127.0.0.1:6379]
 */
import { parseArgs } from 'node:util';
import { startInProcess, type InProcessService } from '../lib/in-process.js';
import { summarize } from '../lib/stats.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '4' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
  },
});
const KEY = 'bench-rate-limit-0123456789';
const keyed = { API_KEYS: `${KEY}:bench`, EMBED_MODEL: 'none', CATALOG_WARMUP: 'false' };
const services: [string, InProcessService][] = [
  ['no limit', await startInProcess(keyed)],
  ['limit in process', await startInProcess({ ...keyed, RATE_LIMIT_PER_MINUTE: '1000000' })],
  ['limit in Redis', await startInProcess({ ...keyed, RATE_LIMIT_PER_MINUTE: '1000000', REDIS_URL: values.redis!, QUEUE_PREFIX: `bench-rl-${process.pid}` })],
];
const times = new Map<string, number[]>(services.map(([label]) => [label, []]));
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [label, service] of round % 2 === 0 ? services : [...services].reverse()) {
      for (let i = 0; i < Number(values.requests); i++) {
        const started = performance.now();
        const answer = await fetch(`${service.base}/v1/catalogs`, { headers: { authorization: `Bearer ${KEY}` } });
        await answer.arrayBuffer();
        if (answer.status !== 200) throw new Error(`${label}: ${answer.status}`);
        if (round > 0) times.get(label)!.push(performance.now() - started);
      }
    }
  }
  const base = summarize(times.get('no limit')!).p50;
  for (const [label, ms] of times) {
    const s = summarize(ms);
    console.log(`${label.padEnd(18)} p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms (+${(s.p50 - base).toFixed(3)} ms at p50), ${ms.length} requests`);
  }
  const fallbacks = services[2]![1].deps.metrics?.registry?.getSingleMetric?.('toolsift_rate_limit_fallbacks_total');
  if (fallbacks) console.log(`Redis fallbacks: ${JSON.stringify((await fallbacks.get()).values)}`);
} finally {
  for (const [, service] of services) await service.close();
}

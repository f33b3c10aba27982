/**
 * `npx tsx bench/probes/gzip-put-gap.ts [tools]`: the longest wait of this process's event loop (a 2 ms
 * ticker) while a gzip-compressed catalog PUT of `tools` generated tools (default 10,000) is read,
 * parsed and stored by the app in this same process (test/helpers/app.ts: PGlite, or DATABASE_URL).
 * A compressed body's Content-Length counts the compressed bytes, so its size is known only once
 * read; before such bodies were parsed in slices, its JSON.parse was one long task. Three rounds.
 */
import { gzipSync } from 'node:zlib';
import { startTestApp } from '../../test/helpers/app.js';
import { watchEventLoopGap } from '../../test/helpers/event-loop-gap.js';

const count = Number(process.argv[2] ?? 10000);
const app = await startTestApp();
const tools = Array.from({ length: count }, (_, i) => ({
  name: `tool_${i}`,
  description: `Reads record ${i} from the store, with "quotes", [brackets] and more words to make it realistic in size.`,
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'integer', description: 'the record id' }, fields: { type: 'array', items: { type: 'string' } } },
    required: ['id'],
  },
}));
const text = JSON.stringify({ tools });
const gz = new Uint8Array(gzipSync(text));
console.log(`body ${(text.length / 1e6).toFixed(1)} MB, gzip ${(gz.length / 1e3).toFixed(0)} KB`);
for (let round = 0; round < 3; round++) {
  const gap = watchEventLoopGap(2);
  const started = performance.now();
  const response = await fetch(`${app.url}/v1/catalogs/gz-${round}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: gz,
  });
  await response.text();
  const worst = gap.stop();
  console.log(`round ${round}: ${response.status} in ${(performance.now() - started).toFixed(0)} ms; longest event-loop gap ${worst.toFixed(0)} ms`);
}
await app.close();
process.exit(0);

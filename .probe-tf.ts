import path from 'node:path';
import { createTransformersEmbedder } from './src/embed/transformers.js';
const modelDir = path.resolve(process.cwd(), '../shared/models');
const texts = Array.from({ length: 512 }, (_, i) => ('some long tool description text about files and web search ').repeat(20) + i);
for (const chunkSize of [512, 16]) {
  const e = await createTransformersEmbedder({ modelId: 'test/tiny-random-bert', modelDir, allowRemote: false, chunkSize });
  let last = performance.now(), maxGap = 0;
  const timer = setInterval(() => { const now = performance.now(); maxGap = Math.max(maxGap, now - last); last = now; }, 1);
  const t = performance.now();
  await e.embedDocuments(texts);
  const total = performance.now() - t;
  await new Promise(r => setTimeout(r, 5)); clearInterval(timer);
  console.log(`chunk ${chunkSize}: batch ${total.toFixed(0)} ms, longest event-loop gap ${maxGap.toFixed(0)} ms`);
  await e.close();
}

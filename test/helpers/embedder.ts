import { loadEmbedder } from '../../src/embed/create-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';

let shared: Promise<Embedder> | undefined;

/**
 * The real default model (USE Lite from npm), loaded once per test run and shared by every test
 * that needs it. A model that cannot load fails the test with the reason (the missing package),
 * never a silent skip.
 */
export function testEmbedder(): Promise<Embedder> {
  shared ??= loadEmbedder({ model: 'use-lite', allowRemote: false, threads: 2 }).then(({ embedder, status }) => {
    if (!embedder) throw new Error(`the default embedding model could not load: ${status.reason ?? status.state}`);
    return embedder;
  });
  return shared;
}

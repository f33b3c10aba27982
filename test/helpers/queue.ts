import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { termsDocument } from '../../src/catalog/catalog-service.js';
import { definitionTokens } from '../../src/catalog/count-tokens.js';
import type { Tool } from '../../src/lib/tool.js';
import { normalizeTools } from '../../src/catalog/tool-formats.js';
import type { Embedder } from '../../src/embed/embedder.js';
import type { CountedDocument } from '../../src/store/tool-store.js';
import { uniqueName } from './database.js';

/** The real Redis: REDIS_URL when set, else the one every CI machine runs. */
export const testRedisUrl = () => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Deletes every key under a test's queue prefix. */
export async function dropQueuePrefix(prefix: string): Promise<void> {
  const redis = new Redis(testRedisUrl());
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
}

/** `count` MCP tools whose content no other test or run shares (so their hashes are new). */
export function uniqueTools(count: number, label = 'tool'): { name: string; description: string; inputSchema: object }[] {
  const run = uniqueName(label);
  return Array.from({ length: count }, (_, i) => ({
    name: `${label}_${i}`,
    description: `Handles ${label} request number ${i} for run ${run}.`,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  }));
}

/** A tool's document as a catalog write stores it (terms and token counts), made here and now. */
export const toDocument = (tool: Tool, hash?: string): CountedDocument => ({ ...termsDocument(tool, hash), tokens: definitionTokens(tool) });

export function toDocuments(raws: unknown[]): CountedDocument[] {
  return normalizeTools(raws).tools.map((tool) => toDocument(tool));
}

/** A real embedder that counts the texts it embeds, keeps each call's texts in order, and can be told to fail its next calls. */
export function countingEmbedder(inner: Embedder): Embedder & { texts: number; batches: string[][]; failNext: number } {
  const wrapper = {
    modelId: inner.modelId,
    dimension: inner.dimension,
    texts: 0,
    batches: [] as string[][],
    failNext: 0,
    async embedDocuments(texts: string[]) {
      // The worker's start-up warm-up is not work: neither counted nor failed.
      if (texts.every((text) => text.startsWith('warm up embedding worker'))) return inner.embedDocuments(texts);
      if (wrapper.failNext > 0) {
        wrapper.failNext -= 1;
        throw new Error('model busy (injected)');
      }
      wrapper.batches.push(texts);
      const vectors = await inner.embedDocuments(texts);
      wrapper.texts += texts.length;
      return vectors;
    },
    embedQuery: (text: string) => inner.embedQuery(text),
    close: async () => {},
  };
  return wrapper;
}

/**
 * A TCP proxy in front of the real Redis: `cut()` drops every connection and refuses new ones
 * (Redis lost, as a client sees it), `restore()` listens again on the same port.
 */
export async function startRedisProxy(): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const target = new URL(testRedisUrl());
  const sockets = new Set<Socket>();
  let server: Server;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 6379), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  const cut = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    cut,
    restore: async () => {
      await listen(port);
    },
    close: cut,
  };
}

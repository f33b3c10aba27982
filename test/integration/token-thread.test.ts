// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * The counting thread (catalog/token-thread.ts) on a real worker thread: the same counts as this
 * thread's, in order, across its slices; a write still gets its counts when the thread is gone; and
 * the service's main thread never loads the tokenizer.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTokenThread } from '../../src/catalog/token-thread.js';
import { definitionTokens } from '../../src/catalog/count-tokens.js';
import { COUNT_SLICE, countDefinitions } from '../../src/catalog/tokens.js';
import { createLogger } from '../../src/logger.js';

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
}
const tools = ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable'].flatMap((corpus) =>
  readFileSync(new URL(`../../../shared/eval/${corpus}/catalog.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line)
    // Every other tool as sent in Anthropic's own shape: its as-sent count reuses that text's.
    .map((line, index) => {
      const tool = { name: line.name, description: line.description ?? '', inputSchema: line.input_schema ?? null };
      return {
        ...tool,
        definition:
          index % 2 === 0 ? line : { name: tool.name, description: tool.description, input_schema: tool.inputSchema ?? { type: 'object', properties: {} } },
      };
    }),
);

describe('the token counting thread', () => {
  it('counts 8,553 real tools as this thread does, in order, across slices', async () => {
    expect(tools.length).toBeGreaterThan(20 * COUNT_SLICE);
    const thread = startTokenThread(createLogger('silent'));
    try {
      const counted = await countDefinitions(thread, tools);
      expect(counted).toEqual(tools.map((tool) => definitionTokens(tool)));
      expect(await countDefinitions(thread, [])).toEqual([]);
    } finally {
      await thread.close();
    }
  });

  it('counts on this thread when the thread is gone, and says so', async () => {
    const lines: string[] = [];
    const logger = createLogger('warn', { write: (line: string) => void lines.push(line) });
    const thread = startTokenThread(logger);
    await countDefinitions(thread, tools.slice(0, 1));
    await thread.close();
    const sample = tools.slice(0, 300);
    expect(await countDefinitions(thread, sample)).toEqual(sample.map((tool) => definitionTokens(tool)));
    expect(lines.join('')).toContain('counting those tools on the main thread');
  });

  it('starts on the first count and ends after a while without one, and starts again for the next', async () => {
    const thread = startTokenThread(createLogger('silent'), 300);
    try {
      expect(thread.running).toBe(false);
      const sample = tools.slice(0, 50);
      expect(await countDefinitions(thread, sample)).toEqual(sample.map((tool) => definitionTokens(tool)));
      expect(thread.running).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(thread.running).toBe(false);
      expect(await countDefinitions(thread, sample)).toEqual(sample.map((tool) => definitionTokens(tool)));
      expect(thread.running).toBe(true);
    } finally {
      await thread.close();
    }
    expect(thread.running).toBe(false);
  });

  it("keeps the tokenizer off the service's main thread: nothing src/main.ts imports statically reaches it", () => {
    const src = new URL('../../src/', import.meta.url).pathname;
    const reached = new Set<string>();
    const importers = new Map<string, string>();
    const visit = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      const text = readFileSync(file, 'utf8');
      // Static imports and re-exports only (`import type` is erased); `import()` loads lazily.
      for (const [, specifier] of text.matchAll(/^(?:import|export) (?!type )[^;]*? from '([^']+)';/gms)) {
        if (!specifier!.startsWith('.')) {
          if (!importers.has(specifier!)) importers.set(specifier!, file);
          continue;
        }
        visit(path.resolve(path.dirname(file), specifier!.replace(/\.js$/, '.ts')));
      }
    };
    // main.ts binds the port, then imports the service (deps.ts, http/app.ts): all of it the main thread's.
    for (const entry of ['main.ts', 'deps.ts', 'http/app.ts']) visit(path.join(src, entry));
    expect(reached.size).toBeGreaterThan(50);
    expect(reached.has(path.join(src, 'catalog/token-thread.ts'))).toBe(true);
    expect([...importers.keys()].filter((name) => name.startsWith('gpt-tokenizer'))).toEqual([]);
    expect(reached.has(path.join(src, 'catalog/count-tokens.ts'))).toBe(false);
  });
});

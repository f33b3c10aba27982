// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * The layering is checked, not hoped for: data flows one way, from the surfaces (HTTP, MCP) through
 * the catalog and search to the store and the embedder, with pure ranking maths and leaf utilities
 * at the bottom. Every import of every file under src/ (`import type` too: a type names what a
 * layer knows about) must point at its own layer or a lower one. The order is written once, here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Top to bottom; a file may import its own layer and any below it. */
export const LAYERS: readonly (readonly string[])[] = [
  ['main.ts', 'worker.ts', 'deps.ts', 'config.ts', 'cli'],
  ['http'],
  ['mcp'],
  ['upstream'],
  ['eval'],
  ['search'],
  ['catalog'],
  ['jobs'],
  ['embed'],
  ['store'],
  ['trust', 'ranking', 'sandbox'],
  ['audit.ts', 'metrics.ts', 'logger.ts', 'errors.ts', 'tracing'],
  ['lib'],
];

/** A file's layer: the index of the entry holding its first path segment under src/. */
function layerOf(file: string): number {
  const top = relative(SRC, file).split('/')[0]!;
  const index = LAYERS.findIndex((layer) => layer.includes(top));
  if (index < 0) throw new Error(`src/${relative(SRC, file)} is in no layer: add "${top}" to LAYERS`);
  return index;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative module specifiers of a file: static imports and exports, type-only ones too, and dynamic imports. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    found.push((match[1] ?? match[2])!);
  }
  return found;
}

describe('layers', () => {
  it('every import under src/ points at its own layer or a lower one', () => {
    const upward: string[] = [];
    for (const file of sources(SRC)) {
      const layer = layerOf(file);
      for (const specifier of importsOf(file)) {
        const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
        if (!target.startsWith(SRC)) continue;
        const targetLayer = layerOf(target);
        if (targetLayer < layer)
          upward.push(`src/${relative(SRC, file)} imports src/${relative(SRC, target)} (${LAYERS[layer]!.join(', ')} -> ${LAYERS[targetLayer]!.join(', ')})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('reads the imports it checks: a known upward import is found when the order is turned over', () => {
    // search/selector.ts imports the catalog service; with catalog placed above search, that is upward.
    const selector = join(SRC, 'search/selector.ts');
    expect(importsOf(selector)).toContain('../catalog/catalog-service.js');
    expect(layerOf(selector)).toBeLessThan(layerOf(join(SRC, 'catalog/catalog-service.ts')));
  });
});

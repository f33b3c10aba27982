// @store-independent: reads files only (vitest.config.ts runs it once, not again on PostgreSQL).
/**
 * The README and docs/configuration.md say what the code reads: every variable of the config
 * schema is documented, no table names one the code does not read, and the README stays short
 * enough to read in five minutes (issue 27: at most 250 lines, the rest in docs/).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema, FILE_VARIABLES } from '../../src/config.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const configuration = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const schemaKeys = Object.keys((configSchema as unknown as { def: { out: { shape: Record<string, unknown> } } }).def.out.shape);

/** The variables a markdown table's first column names (`NAME`, `NAME2` | ...). */
const tableVariables = (markdown: string) =>
  markdown
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]!));

describe('documentation of the configuration', () => {
  it('reads the schema (a guard on the introspection below)', () => {
    expect(schemaKeys).toContain('PORT');
    expect(schemaKeys.length).toBeGreaterThan(50);
  });

  it('docs/configuration.md names every variable the code reads, and every secret file', () => {
    const documented = new Set(tableVariables(configuration));
    expect(schemaKeys.filter((key) => !documented.has(key))).toEqual([]);
    for (const name of FILE_VARIABLES) expect(configuration).toContain(`\`${name}_FILE\``);
  });

  it('no table names a variable the code does not read', () => {
    const known = new Set([...schemaKeys, ...FILE_VARIABLES.map((name) => `${name}_FILE`)]);
    expect([...tableVariables(readme), ...tableVariables(configuration)].filter((name) => !known.has(name))).toEqual([]);
  });

  it('keeps the README within 250 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });
});

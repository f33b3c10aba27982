/**
 * The tools of every large generated catalog (bench:scale, bench:embed --size): the four public
 * corpora's 8,553 real tools in ../shared/eval, then renamed copies of them (`<name>_copy<k>`,
 * server `<server>-copy<k>`), deterministically: tool i is the same in every run.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { normalizeTools } from '../../src/catalog/tool-formats.js';
import { documentTerms } from '../../src/ranking/search-text.js';

const EVAL = fileURLToPath(new URL('../../../shared/eval/', import.meta.url));

interface Line {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown> | null;
  tags?: string[];
  server?: string | null;
}

const base: Line[] = [];
const seen = new Set<string>();
for (const corpus of ['bfcl', 'livemcpbench', 'sealtools', 'toolbench_stable']) {
  for (const line of readFileSync(`${EVAL}${corpus}/catalog.jsonl`, 'utf8').trim().split('\n')) {
    const tool = JSON.parse(line) as Line;
    // The corpora share a few names; a catalog holds each name once.
    let name = tool.name;
    for (let k = 2; seen.has(name); k++) name = `${tool.name}_${k}`;
    seen.add(name);
    base.push({ ...tool, name });
  }
}

/** The i-th tool of every generated catalog, in the REST API's shape. */
export function toolAt(i: number) {
  const tool = base[i % base.length]!;
  const copy = Math.floor(i / base.length);
  // Names are at most 128 characters: a long name is cut before its suffix, so copies stay distinct.
  const suffix = (text: string, separator: string) => (copy === 0 ? text : `${text.slice(0, 128 - `${separator}copy${copy}`.length)}${separator}copy${copy}`);
  return {
    name: suffix(tool.name, '_'),
    description: tool.description ?? '',
    inputSchema: tool.input_schema ?? { type: 'object', properties: {} },
    ...(tool.tags?.length ? { tags: tool.tags } : {}),
    ...(tool.server ? { server: suffix(tool.server, '-') } : {}),
  };
}

/** How many of the tag lists carry each tag (lower-cased, as a tag filter compares), commonest first. */
export function tagCounts(tagLists: Iterable<readonly string[] | undefined>): [tag: string, tools: number][] {
  const counts = new Map<string, number>();
  for (const tags of tagLists) for (const tag of tags ?? []) counts.set(tag.toLowerCase(), (counts.get(tag.toLowerCase()) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

/** The first `size` generated tools as a catalog index's rows (CatalogIndex.build), their documents' terms counted as the store counts them. */
export function scaleIndexRows(size: number) {
  const { tools } = normalizeTools(Array.from({ length: size }, (_, i) => toolAt(i)));
  const rows = tools.map((tool) => {
    const { length, termFreqs } = documentTerms(tool);
    return {
      name: tool.name,
      length,
      server: tool.server,
      tags: tool.tags,
      tokens: { anthropic: null, openai: null, as_sent: null },
      terms: [...termFreqs].map(([t, tf]) => `${t} ${tf}`).join(' '),
    };
  });
  return { tools, rows };
}

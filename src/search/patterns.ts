/**
 * Pieces of a query that may be a tool's exact name: the whole query, and each whitespace-separated
 * word with quotes, brackets and trailing punctuation stripped ("use `read_file`." -> read_file).
 */
export function nameCandidates(query: string): string[] {
  const trimmed = query.trim();
  if (trimmed === '') return [];
  const candidates = new Set<string>([trimmed]);
  for (const word of trimmed.split(/\s+/)) {
    const bare = word.replace(/^[`'"([{<]+/, '').replace(/[`'"\])}>,;:!?.]+$/, '');
    if (bare.length > 0 && bare.length <= 128) candidates.add(bare);
  }
  return [...candidates].slice(0, 64);
}

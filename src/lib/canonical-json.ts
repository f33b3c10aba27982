/**
 * JSON with object keys sorted at every depth, so key order never changes the hash. Built by
 * appending to one string: it runs for every never-seen tool on the request path, and the
 * entries, sorted copies and joins of a first version were a tenth of that path's garbage.
 * Keys sort by UTF-16 code units (the default sort, as `<` compares strings).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) out += (index === 0 ? '' : ',') + canonicalJson(value[index]);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    out += (out.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(item);
  }
  return out + '}';
}

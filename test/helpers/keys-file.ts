import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One key of an API_KEYS_FILE (trust/policy.ts reads it): its scopes beside the key, id and tenant. */
export type KeyEntry = { key: string; id: string; tenant: string } & Record<string, unknown>;

/** An API_KEYS_FILE holding `keys`, in a folder of its own; `remove` deletes the folder. */
export function keysFile(keys: KeyEntry[]): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'toolsift-keys-'));
  const path = join(dir, 'keys.json');
  writeFileSync(path, JSON.stringify({ keys }));
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

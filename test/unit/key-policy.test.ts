import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import {
  Access,
  canCall,
  canSeeCatalog,
  canSeeTool,
  canWrite,
  fullAccess,
  parseKeysFile,
  type KeyPolicy,
  type PolicyDecision,
} from '../../src/trust/policy.js';

const KEY = 'k-0123456789abcdef';
const file = (keys: unknown[]) => JSON.stringify({ keys });

describe('the keys file', () => {
  it('gives a key without scopes full access within its tenant (manage only when asked), and a short hash as its id', () => {
    const keys = parseKeysFile(file([{ key: KEY, tenant: 'acme' }]));
    const policy = keys.get(KEY)!;
    expect(policy).toEqual({ id: expect.stringMatching(/^k_[0-9a-f]{16}$/), tenant: 'acme', call: true, write: true, manage: false });
    expect(policy.id).not.toContain(KEY);
  });

  it.each([
    [[{ key: KEY, tenant: 'acme', tool: { deny: ['x'] } }], /keys\[0\]: .*tool/],
    [[{ key: KEY, id: 'bot', tenant: 'acme', tools: { allow: [] } }], /key "bot": tools\.allow: an empty list would match no tool/],
    [[{ key: KEY, id: 'bot', tenant: 'acme', call: 'no' }], /key "bot": call: call is true, false or "read_only"/],
    [[{ key: KEY, id: 'bot', tenant: 'acme', call: 'readonly' }], /key "bot": call: call is true, false or "read_only"/],
    [[{ key: 'short', id: 'bot', tenant: 'acme' }], /key "bot": key: keys are at least 16 characters/],
    [[{ key: KEY, id: 'bot', tenant: 'bad tenant' }], /key "bot": tenant: /],
    [
      [
        { key: KEY, id: 'a', tenant: 't' },
        { key: `${KEY}x`, id: 'a', tenant: 't' },
      ],
      /id "a" is given to two keys/,
    ],
    [
      [
        { key: KEY, id: 'a', tenant: 't' },
        { key: KEY, id: 'b', tenant: 't' },
      ],
      /key "b": the same key is listed twice/,
    ],
  ])('refuses a bad entry, naming the key and the field: %j', (keys, message) => {
    expect(() => parseKeysFile(file(keys))).toThrow(message);
  });

  it('reads call: "read_only"', () => {
    expect(parseKeysFile(file([{ key: KEY, id: 'reader', tenant: 'acme', call: 'read_only' }])).get(KEY)).toMatchObject({ call: 'read_only' });
  });

  it('is refused whole when it is not JSON or not {"keys": [...]}', () => {
    expect(() => parseKeysFile('keys: []')).toThrow(/not JSON/);
    expect(() => parseKeysFile('[]')).toThrow(/expected \{"keys": \[\.\.\.\]\}/);
  });

  describe('through loadConfig', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolsift-keys-unit-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('adds the file keys to API_KEYS (tenant) and KEY_POLICIES (scopes); the service then listens as a keyed one', () => {
      const path = join(dir, 'keys.json');
      writeFileSync(path, file([{ key: KEY, id: 'bot', tenant: 'acme', call: false }]));
      const config = loadConfig({ API_KEYS_FILE: path, API_KEYS: 'inline:other' });
      expect([...config.API_KEYS!]).toEqual([
        ['inline', 'other'],
        [KEY, 'acme'],
      ]);
      expect(config.KEY_POLICIES!.get(KEY)!.call).toBe(false);
      expect(config.HOST).toBe('0.0.0.0');
    });

    it('names API_KEYS_FILE and the key when the file is bad, missing, or repeats an API_KEYS key', () => {
      const path = join(dir, 'bad.json');
      writeFileSync(path, file([{ key: KEY, id: 'bot', tenant: 'acme', servers: { alow: ['x'] } }]));
      expect(() => loadConfig({ API_KEYS_FILE: path })).toThrow(/API_KEYS_FILE: .*key "bot": servers/);
      expect(() => loadConfig({ API_KEYS_FILE: join(dir, 'absent.json') })).toThrow(/API_KEYS_FILE: cannot read .*ENOENT/);
      writeFileSync(path, file([{ key: KEY, id: 'bot', tenant: 'acme' }]));
      expect(() => loadConfig({ API_KEYS_FILE: path, API_KEYS: `${KEY}:acme` })).toThrow(/key "bot" is also in API_KEYS/);
    });
  });
});

describe('policy decisions', () => {
  const policy: KeyPolicy = {
    ...fullAccess('acme', 'bot'),
    catalogs: ['shop-*'],
    tools: { allow: ['get_*', 'shop-b/*'], deny: ['*secret*'] },
    servers: { deny: ['payments'] },
    write: false,
  };
  const tool = (catalog: string, name: string, server: string | null = null) => ({ catalog, name, server });

  it('reads catalogs, tool allow and deny (a pattern with / against catalog/name), and servers', () => {
    expect(canSeeCatalog(policy, 'shop-a')).toBe(true);
    expect(canSeeCatalog(policy, 'ops')).toBe(false);
    expect(canSeeTool(policy, tool('shop-a', 'get_order'))).toBe(true);
    expect(canSeeTool(policy, tool('shop-a', 'list_orders'))).toBe(false);
    expect(canSeeTool(policy, tool('shop-b', 'list_orders'))).toBe(true);
    expect(canSeeTool(policy, tool('shop-a', 'get_secret'))).toBe(false);
    expect(canSeeTool(policy, tool('shop-a', 'get_order', 'payments'))).toBe(false);
    expect(canSeeTool(policy, tool('ops', 'get_order'))).toBe(false);
    expect(canCall(policy, tool('shop-a', 'get_order'))).toBe(true);
    expect(canCall({ ...policy, call: false }, tool('shop-a', 'get_order'))).toBe(false);
    // "read_only": only a definition that declares readOnlyHint true; a hint of false, a string or none is not one.
    const reader = { ...policy, call: 'read_only' as const };
    const defined = (annotations?: unknown) => ({ ...tool('shop-a', 'get_order'), definition: { name: 'get_order', annotations } });
    expect(canCall(reader, defined({ readOnlyHint: true }))).toBe(true);
    for (const annotations of [undefined, {}, { readOnlyHint: false }, { readOnlyHint: 'true' }, { destructiveHint: false }])
      expect(canCall(reader, defined(annotations))).toBe(false);
    expect(canCall(reader, { ...tool('shop-b', 'list_orders'), definition: null })).toBe(false);
    expect(canWrite(policy, 'shop-a')).toBe(false);
  });

  it('takes a server allow list to mean only those servers: a tool of none is outside it', () => {
    const only = { ...fullAccess('acme', 'bot'), servers: { allow: ['github'] } };
    expect(canSeeTool(only, tool('c', 'x', 'github'))).toBe(true);
    expect(canSeeTool(only, tool('c', 'x', null))).toBe(false);
    expect(canSeeTool({ ...fullAccess('acme', 'bot'), servers: { deny: ['github'] } }, tool('c', 'x', null))).toBe(true);
  });

  it("narrows a key's view by a caller's filter: the two together, a scope of its own, writes judged by the key alone", () => {
    const open = new Access(fullAccess('acme', 'writer'));
    const byServer = open.narrowed('server:github', (tool) => tool.server === 'github');
    expect(open.limitsTools).toBe(false);
    expect(byServer.limitsTools).toBe(true);
    expect(byServer.seesTool(tool('c', 'x', 'github'))).toBe(true);
    expect(byServer.seesTool(tool('c', 'x', 'jira'))).toBe(false);
    // The filter narrows the view only: a key that may write whole catalogs still may.
    expect(() => byServer.requireWholeCatalog('c')).not.toThrow();
    expect(() => byServer.requireWriter('embed')).not.toThrow();
    // A limited key narrowed sees what both let through, under a scope id of its own.
    const limited = new Access(policy).narrowed('names', (tool) => tool.name.endsWith('_order'));
    expect(limited.seesTool(tool('shop-a', 'get_order'))).toBe(true);
    expect(limited.seesTool(tool('shop-a', 'get_orders'))).toBe(false);
    expect(limited.seesTool(tool('shop-a', 'list_order'))).toBe(false);
    expect(limited.seesTool(tool('shop-a', 'get_secret_order'))).toBe(false);
    expect(limited.scopeId).not.toBe(new Access(policy).scopeId);
    expect(limited.narrowed('more', () => true).scopeId).not.toBe(limited.scopeId);
    expect(limited.at('mcp', 'search_tools').scopeId).toBe(limited.scopeId);
  });

  it('records each refusal once, with the key id and where it was made, and throws a 403 naming what is not allowed', () => {
    const seen: PolicyDecision[] = [];
    const access = new Access(policy, (decision) => seen.push(decision)).at('rest', 'GET /v1/catalogs/{catalog}');
    expect(() => access.requireCatalog('ops')).toThrow(/API key "bot" may not use catalog "ops" \(its catalogs: shop-\*\)/);
    expect(() => access.requireWrite('shop-a')).toThrow(/may not write catalogs or register upstreams \(write: false\)/);
    expect(access.callRefusal()).toBeUndefined();
    expect(seen).toEqual([
      { decision: 'deny', action: 'see_catalog', surface: 'rest', via: 'GET /v1/catalogs/{catalog}', key: 'bot', tenant: 'acme', catalog: 'ops' },
      { decision: 'deny', action: 'write', surface: 'rest', via: 'GET /v1/catalogs/{catalog}', key: 'bot', tenant: 'acme', catalog: 'shop-a' },
    ]);
  });
});

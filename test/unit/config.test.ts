// @store-independent: never opens the store the suite is given (vitest.config.ts runs it once, not again on PostgreSQL).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

/** The ConfigError that loading `env` throws. */
function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be rejected`);
}

describe('loadConfig', () => {
  it('has working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(8080);
    // Open (no API_KEYS): loopback only, and only the loopback names in Host (DNS rebinding).
    expect(config.HOST).toBe('127.0.0.1');
    expect(config.ALLOWED_HOSTS).toBe('localhost,127.0.0.1,[::1]');
    expect(config.DATA_DIR).toBe('./data');
    expect(config.BODY_LIMIT).toBe(26_214_400);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.API_KEYS).toBeUndefined();
  });

  it('with API keys listens on every interface and answers any Host; HOST and ALLOWED_HOSTS (or the older MCP_ALLOWED_HOSTS) decide when set', () => {
    expect(loadConfig({ API_KEYS: 'k:t' })).toMatchObject({ HOST: '0.0.0.0', ALLOWED_HOSTS: '*' });
    expect(loadConfig({ HOST: '0.0.0.0' })).toMatchObject({ HOST: '0.0.0.0', ALLOWED_HOSTS: 'localhost,127.0.0.1,[::1]' });
    expect(loadConfig({ API_KEYS: 'k:t', HOST: '10.0.0.5', ALLOWED_HOSTS: 'toolsift.internal' })).toMatchObject({
      HOST: '10.0.0.5',
      ALLOWED_HOSTS: 'toolsift.internal',
    });
    expect(loadConfig({ MCP_ALLOWED_HOSTS: 'a.example', MCP_ALLOWED_ORIGINS: 'https://b.example' })).toMatchObject({
      ALLOWED_HOSTS: 'a.example',
      ALLOWED_ORIGINS: 'https://b.example',
    });
    expect(loadConfig({ ALLOWED_ORIGINS: 'c.example', MCP_ALLOWED_ORIGINS: 'b.example' }).ALLOWED_ORIGINS).toBe('c.example');
  });

  it('reads the gateway limits: UPSTREAM_MAX_RESULT_BYTES as a size, SCAN_POLICY as one of three, METRICS_TOKEN long enough', () => {
    expect(loadConfig({}).UPSTREAM_MAX_RESULT_BYTES).toBe(4 * 1024 * 1024);
    expect(loadConfig({ UPSTREAM_MAX_RESULT_BYTES: '512kb' }).UPSTREAM_MAX_RESULT_BYTES).toBe(524_288);
    expect(loadConfig({}).SCAN_POLICY).toBe('refuse');
    expect(configError({ SCAN_POLICY: 'maybe' }).message).toContain('SCAN_POLICY');
    expect(configError({ METRICS_TOKEN: 'short' }).message).toContain('METRICS_TOKEN');
  });

  it('reads explicit values', () => {
    const config = loadConfig({
      PORT: '9000',
      DATA_DIR: '/var/lib/toolsift',
      BODY_LIMIT: '512kb',
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgres://u@db:5432/x',
    });
    expect(config).toMatchObject({
      PORT: 9000,
      DATA_DIR: '/var/lib/toolsift',
      BODY_LIMIT: 524_288,
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgres://u@db:5432/x',
    });
  });

  it('reads BODY_LIMIT in the body parser notation', () => {
    expect(loadConfig({ BODY_LIMIT: '1048576' }).BODY_LIMIT).toBe(1_048_576);
    expect(loadConfig({ BODY_LIMIT: '2kb' }).BODY_LIMIT).toBe(2048);
    expect(loadConfig({ BODY_LIMIT: '1.5MB' }).BODY_LIMIT).toBe(1_572_864);
    expect(loadConfig({ BODY_LIMIT: '1gb' }).BODY_LIMIT).toBe(1024 ** 3);
    expect(loadConfig({ BODY_LIMIT: '' }).BODY_LIMIT).toBe(26_214_400);
  });

  it('treats an empty DATABASE_URL or API_KEYS as unset', () => {
    const config = loadConfig({ DATABASE_URL: '', API_KEYS: '' });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.API_KEYS).toBeUndefined();
  });

  const bad: [string, string][] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '80.5'],
    ['BODY_LIMIT', 'lots'],
    ['BODY_LIMIT', '25 megabytes'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'not a url'],
    ['API_KEYS', 'k1:bad tenant!'],
    ['API_KEYS', ':t1'],
    ['EMBED_THREAD_NICE', '20'],
    ['EMBED_THREAD_NICE', '-5'],
  ];
  for (const [name, value] of bad) {
    it(`rejects ${name}=${value} with a ConfigError naming the variable`, () => {
      const error = configError({ [name]: value });
      expect(error.message).toMatch(new RegExp(`^\\s+${name}: `, 'm'));
      // Only the bad variable is named.
      expect(error.message.split('\n').filter((line) => line.startsWith('  '))).toHaveLength(1);
    });
  }

  it('OAUTH_CLIENT_METADATA_URL: an https URL with a path and no trailing slash, written as a URL parser writes it, beside OAUTH_REDIRECT_URL', () => {
    const redirect = { OAUTH_REDIRECT_URL: 'https://toolsift.example.com/oauth/callback' };
    const url = 'https://toolsift.example.com/oauth/client-metadata';
    expect(loadConfig({ ...redirect, OAUTH_CLIENT_METADATA_URL: url }).OAUTH_CLIENT_METADATA_URL).toBe(url);
    expect(loadConfig({ ...redirect, OAUTH_CLIENT_METADATA_URL: '' }).OAUTH_CLIENT_METADATA_URL).toBeUndefined();
    const refused: [string, string][] = [
      ['http://toolsift.example.com/oauth/client-metadata', 'must be an https URL'],
      ['https://toolsift.example.com/oauth/client-metadata/', 'must not end with a slash'],
      ['https://toolsift.example.com/', 'needs a path'],
      ['https://toolsift.example.com', 'needs a path'],
      ['https://ops:pw@toolsift.example.com/oauth/client-metadata', 'must not hold a user name or password'],
      ['https://toolsift.example.com/oauth/client-metadata?tenant=a', 'must have no query and no fragment'],
      ['https://toolsift.example.com/oauth/client-metadata#x', 'must have no query and no fragment'],
      // An authorization server compares the client_id as a string: a spelling it may normalize is refused here.
      ['https://Toolsift.example.com:443/oauth/../client.json', 'write it as https://toolsift.example.com/client.json'],
      ['toolsift.example.com/client.json', 'expected an https URL'],
    ];
    for (const [value, message] of refused) {
      const lines = configError({ ...redirect, OAUTH_CLIENT_METADATA_URL: value }).message.split('\n');
      expect(lines.find((line) => line.startsWith('  OAUTH_CLIENT_METADATA_URL: ')) ?? lines, value).toContain(message);
    }
    // The document names the callback: one from each start request's Host cannot be named.
    expect(configError({ OAUTH_CLIENT_METADATA_URL: url }).message).toContain('OAUTH_CLIENT_METADATA_URL: needs OAUTH_REDIRECT_URL');
  });

  it('treats any variable set to the empty string as unset (PORT, EMBED_THREADS, ...)', () => {
    const config = loadConfig({ PORT: '', EMBED_THREADS: '', LOG_LEVEL: '', EMBED_MODEL: '' });
    expect(config.PORT).toBe(8080);
    expect(config.EMBED_THREADS).toBe(2);
    expect(config.EMBED_THREAD_NICE).toBe(10);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.EMBED_MODEL).toBe('use-lite');
  });

  it('rejects an API_KEYS entry with more than key:tenant', () => {
    expect(() => loadConfig({ API_KEYS: 'k1:t1:x' })).toThrow(/API_KEYS/);
  });

  it('names every bad variable at once', () => {
    const error = configError({ PORT: 'abc', LOG_LEVEL: 'loud' });
    expect(error.message).toMatch(/PORT: /);
    expect(error.message).toMatch(/LOG_LEVEL: /);
  });

  it('parses API_KEYS into key -> tenant, with "default" for a key without one', () => {
    const keys = loadConfig({ API_KEYS: 'k1:t1, k2:t2 ,k3,,' }).API_KEYS;
    expect(keys).toBeInstanceOf(Map);
    expect([...keys!.entries()]).toEqual([
      ['k1', 't1'],
      ['k2', 't2'],
      ['k3', 'default'],
    ]);
  });

  it('lets two keys share a tenant', () => {
    const keys = loadConfig({ API_KEYS: 'old:acme,new:acme' }).API_KEYS!;
    expect(keys.get('old')).toBe('acme');
    expect(keys.get('new')).toBe('acme');
  });
});

describe('secrets from files (<NAME>_FILE)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolsift-config-'));
  const secret = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const key = randomBytes(32).toString('base64');

  it('reads each secret from its file, its final line break dropped, and leaves process.env as it was', () => {
    const config = loadConfig({
      SECRETS_KEY_FILE: secret('secrets-key', `${key}\n`),
      METRICS_TOKEN_FILE: secret('metrics-token', 'metrics-token-from-a-file'),
      DATABASE_URL_FILE: secret('database-url', 'postgres://toolsift:pw@db.internal:5432/toolsift\r\n'),
      EMBED_API_KEY_FILE: secret('embed-key', 'sk-embed\n'),
      RERANK_API_KEY_FILE: secret('rerank-key', 'rerank-key'),
      REDIS_URL_FILE: secret('redis-url', 'redis://:pw@cache.internal:6379'),
      UPSTREAM_PROXY_FILE: secret('proxy', 'http://user:pw@proxy.internal:3128\n'),
    });
    expect(config).toMatchObject({
      SECRETS_KEY: key,
      METRICS_TOKEN: 'metrics-token-from-a-file',
      DATABASE_URL: 'postgres://toolsift:pw@db.internal:5432/toolsift',
      EMBED_API_KEY: 'sk-embed',
      RERANK_API_KEY: 'rerank-key',
      REDIS_URL: 'redis://:pw@cache.internal:6379',
      UPSTREAM_PROXY: 'http://user:pw@proxy.internal:3128',
    });
    expect(process.env.SECRETS_KEY).toBeUndefined();
  });

  it('a file value is checked like the variable, and no error shows the value', () => {
    const bad = configError({ SECRETS_KEY_FILE: secret('short-key', 'c2hvcnQ=\n') });
    expect(bad.message).toContain('SECRETS_KEY');
    expect(bad.message).not.toContain('c2hvcnQ=');
  });

  it('refuses both forms of one variable, an unreadable file and an empty one, naming each', () => {
    const message = configError({
      SECRETS_KEY: key,
      SECRETS_KEY_FILE: secret('both', key),
      METRICS_TOKEN_FILE: join(dir, 'no-such-file'),
      EMBED_API_KEY_FILE: secret('empty', '\n'),
    }).message;
    expect(message).toContain('SECRETS_KEY_FILE: SECRETS_KEY is set too');
    expect(message).toContain(`METRICS_TOKEN_FILE: cannot read ${join(dir, 'no-such-file')}: ENOENT`);
    expect(message).toContain('EMBED_API_KEY_FILE:');
    expect(message).toContain('is empty');
    expect(message).not.toContain(key);
  });

  it('API_KEYS_FILE stays the keys file (JSON with scopes), not API_KEYS as text', () => {
    expect(configError({ API_KEYS_FILE: secret('keys-as-text', 'key-1:alpha\n') }).message).toContain('API_KEYS_FILE');
  });
});

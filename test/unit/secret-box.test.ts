/**
 * The secret box (lib/secret-box.ts): AES-256-GCM with a random IV per value, the key id beside each
 * value, SECRETS_KEY's forms (base64, hex, named, derived ids, rotation lists), and every way a
 * stored value can be wrong: a key the box lacks, no key at all, a changed IV, tag, ciphertext or
 * key id, a value that is not sealed. No message ever repeats a secret or a key.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createSecretBox, isSealed, parseSecretKeys, sealedKeyId, SecretKeyError, SecretOpenError } from '../../src/lib/secret-box.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);
const SECRET = 'Bearer sk-live-0123456789abcdef';

function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('secret box', () => {
  it('seals to ts1:<key id>:<iv>:<tag>:<ciphertext> that opens to the same text, a new IV each time', () => {
    const box = createSecretBox(`a:${keyA.toString('base64')}`);
    expect(box.keyId).toBe('a');
    const one = box.seal(SECRET);
    const two = box.seal(SECRET);
    expect(one).toMatch(/^ts1:a:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$/);
    expect(one).not.toBe(two);
    expect(box.open(one)).toBe(SECRET);
    expect(box.open(two)).toBe(SECRET);
    expect(box.open(box.seal(''))).toBe('');
    expect(box.open(box.seal('ünïcödé ✓'))).toBe('ünïcödé ✓');
    expect(isSealed(one)).toBe(true);
    expect(sealedKeyId(one)).toBe('a');
    expect(isSealed(SECRET)).toBe(false);
    for (const form of [SECRET, Buffer.from(SECRET).toString('base64'), Buffer.from(SECRET).toString('base64url'), Buffer.from(SECRET).toString('hex')]) {
      expect(one).not.toContain(form);
    }
  });

  it('reads keys as base64 (padded or not, url-safe too) or hex; an unnamed key gets a short id derived from it', () => {
    const fromBase64 = createSecretBox(keyA.toString('base64'));
    const fromHex = createSecretBox(keyA.toString('hex'));
    const fromUrl = createSecretBox(keyA.toString('base64url'));
    expect(fromBase64.keyId).toMatch(/^[0-9a-f]{8}$/);
    expect(fromHex.keyId).toBe(fromBase64.keyId);
    expect(fromUrl.keyId).toBe(fromBase64.keyId);
    expect(fromHex.open(fromBase64.seal(SECRET))).toBe(SECRET);
    expect(createSecretBox(keyB.toString('base64')).keyId).not.toBe(fromBase64.keyId);
    // The derived id is not the key, nor part of it.
    expect(keyA.toString('hex')).not.toContain(fromBase64.keyId!);
  });

  it('rotation: the first key seals, every key opens', () => {
    const old = createSecretBox(`old:${keyA.toString('base64')}`);
    const sealedOld = old.seal(SECRET);
    const rotated = createSecretBox(`new:${keyB.toString('hex')}, old:${keyA.toString('base64')}`);
    expect(rotated.keyId).toBe('new');
    expect(rotated.open(sealedOld)).toBe(SECRET);
    const sealedNew = rotated.seal(SECRET);
    expect(sealedKeyId(sealedNew)).toBe('new');
    const error = thrown(() => old.open(sealedNew)) as SecretOpenError;
    expect(error).toBeInstanceOf(SecretOpenError);
    expect(error.reason).toBe('unknown_key');
    expect(error.message).toContain('"new"');
    expect(error.message).toContain('SECRETS_KEY');
  });

  it('without a key: keyId null, seal names SECRETS_KEY, open of a sealed value names its key id', () => {
    const none = createSecretBox(undefined);
    expect(none.keyId).toBeNull();
    expect(createSecretBox('').keyId).toBeNull();
    expect(thrown(() => none.seal(SECRET)).message).toContain('SECRETS_KEY');
    const sealed = createSecretBox(`k7:${keyA.toString('base64')}`).seal(SECRET);
    const error = thrown(() => none.open(sealed));
    expect(error.message).toContain('"k7"');
    expect(error.message).toContain('SECRETS_KEY');
  });

  it('a value altered anywhere does not open (the GCM tag), and the message repeats no value', () => {
    const box = createSecretBox(`a:${keyA.toString('base64')}`);
    const sealed = box.seal(SECRET);
    const parts = sealed.split(':');
    const flip = (text: string) => (text[0] === 'A' ? 'B' : 'A') + text.slice(1);
    for (const index of [2, 3, 4]) {
      const altered = parts.map((part, at) => (at === index ? flip(part) : part)).join(':');
      const error = thrown(() => box.open(altered)) as SecretOpenError;
      expect(error.reason, `part ${index}`).toBe('not_authentic');
      expect(error.message).not.toContain(SECRET);
    }
    // A value moved under another key id of the same box does not open either (the id is authenticated).
    const two = createSecretBox(`a:${keyA.toString('base64')},b:${keyA.toString('hex').replace(/^../, 'ff')}`);
    const relabelled = ['ts1', 'b', ...parts.slice(2)].join(':');
    expect((thrown(() => two.open(relabelled)) as SecretOpenError).reason).toBe('not_authentic');
    // Two boxes with the same id and different keys: the wrong key does not authenticate.
    const impostor = createSecretBox(`a:${keyB.toString('base64')}`);
    expect((thrown(() => impostor.open(sealed)) as SecretOpenError).reason).toBe('not_authentic');
    expect((thrown(() => box.open(SECRET)) as SecretOpenError).reason).toBe('not_sealed');
    expect(thrown(() => box.open(SECRET)).message).not.toContain(SECRET);
    expect((thrown(() => box.open(`${sealed}x=`)) as SecretOpenError).reason).toBe('not_sealed');
  });

  it('a malformed SECRETS_KEY is a start error naming it, never repeating the key', () => {
    const short = randomBytes(16).toString('base64');
    const cases = [
      short,
      'not a key',
      `${keyA.toString('hex')}00`,
      `bad id!:${keyA.toString('base64')}`,
      `a:${keyA.toString('base64')},a:${keyB.toString('base64')}`,
      `a:${keyA.toString('base64')},b:${keyA.toString('hex')}`,
      `a:${keyA.toString('base64')},,`,
      ',',
    ];
    for (const value of cases) {
      expect(() => parseSecretKeys(value), value).toThrow(SecretKeyError);
      const error = thrown(() => loadConfig({ SECRETS_KEY: value }));
      expect(error, value).toBeInstanceOf(ConfigError);
      expect(error.message).toContain('SECRETS_KEY');
      expect(error.message).not.toContain(short);
      expect(error.message).not.toContain(keyA.toString('base64'));
    }
    expect(loadConfig({ SECRETS_KEY: `a:${keyA.toString('base64')}` }).SECRETS_KEY).toBe(`a:${keyA.toString('base64')}`);
    expect(loadConfig({ SECRETS_KEY: '' }).SECRETS_KEY).toBeUndefined();
  });
});

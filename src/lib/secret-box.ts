/**
 * Secrets at rest (issue 76): credentials the store keeps (upstream header values, OAuth tokens and
 * client secrets) are sealed with AES-256-GCM under a key from SECRETS_KEY before they are written,
 * and opened only where they are used. A sealed value is one line of text that names the key it was
 * sealed with, so the key can be rotated: `ts1:<keyId>:<iv>:<tag>:<ciphertext>` (base64url parts).
 *
 * SECRETS_KEY is a comma list of keys, each 32 bytes as base64 (44 characters, or 43 unpadded) or
 * hex (64 digits), optionally named `<id>:<key>`; a key without an id gets a short one derived from
 * it. The first key seals; every key opens (rotation: `new:<key>,old:<key>`).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SecretBox {
  /** The key that seals (SECRETS_KEY's first); null without SECRETS_KEY (seal throws, open of a sealed value throws). */
  readonly keyId: string | null;
  seal(plain: string): string;
  open(stored: string): string;
}

/** SECRETS_KEY could not be read: the message says which entry and why, never a key. */
export class SecretKeyError extends Error {}

/**
 * A value that cannot be sealed or opened: no key to seal with, a key id SECRETS_KEY does not hold,
 * a value that does not authenticate (altered), or one that is not sealed. The message names the
 * key id and SECRETS_KEY, never the value.
 */
export class SecretOpenError extends Error {
  constructor(
    readonly reason: 'no_key' | 'unknown_key' | 'not_authentic' | 'not_sealed',
    message: string,
    /** The key id the value names, when it names one. */
    readonly keyId?: string,
  ) {
    super(message);
    this.name = 'SecretOpenError';
  }
}

/** The version prefix of a sealed value: another scheme later gets another prefix. */
const PREFIX = 'ts1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9._-]{1,32}$/;
const SEALED = /^ts1:([A-Za-z0-9._-]{1,32}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22}):([A-Za-z0-9_-]*)$/;

export interface SecretKey {
  id: string;
  key: Buffer;
}

/** Whether a stored value is SecretBox output (any key); anything else is plaintext an older release wrote. */
export function isSealed(stored: string): boolean {
  return SEALED.test(stored);
}

/** The key id a sealed value names; null for a value that is not sealed. */
export function sealedKeyId(stored: string): string | null {
  return SEALED.exec(stored)?.[1] ?? null;
}

/** Reads SECRETS_KEY: its keys, the sealing one first. Throws SecretKeyError naming the bad entry (by position, never its text). */
export function parseSecretKeys(value: string): SecretKey[] {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.every((entry) => entry === '')) throw new SecretKeyError('no key given');
  const keys: SecretKey[] = [];
  entries.forEach((entry, index) => {
    const where = entries.length > 1 ? `key ${index + 1}: ` : '';
    if (entry === '') throw new SecretKeyError(`${where}empty entry`);
    const colon = entry.indexOf(':');
    const id = colon < 0 ? undefined : entry.slice(0, colon);
    const material = colon < 0 ? entry : entry.slice(colon + 1);
    if (id !== undefined && !KEY_ID.test(id)) throw new SecretKeyError(`${where}key ids are 1-32 characters of A-Z a-z 0-9 . _ -`);
    const key = decodeKey(material);
    if (!key) {
      throw new SecretKeyError(
        `${where}expected 32 random bytes as base64 (44 characters) or hex (64 digits), optionally named <id>:<key>; generate one with: openssl rand -base64 32`,
      );
    }
    const keyId = id ?? derivedKeyId(key);
    if (keys.some((other) => other.id === keyId)) throw new SecretKeyError(`${where}key id "${keyId}" is given twice`);
    if (keys.some((other) => other.key.equals(key))) throw new SecretKeyError(`${where}the same key is given twice`);
    keys.push({ id: keyId, key });
  });
  return keys;
}

function decodeKey(material: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(material)) return Buffer.from(material, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(material)) {
    const key = Buffer.from(material, 'base64');
    if (key.length === KEY_BYTES) return key;
  }
  return undefined;
}

/** A key's id when SECRETS_KEY names none: 8 hex digits of a digest of it (not the key, nor enough to guess it). */
function derivedKeyId(key: Buffer): string {
  return createHash('sha256').update('toolsift secret key id\0').update(key).digest('hex').slice(0, 8);
}

/**
 * The box SECRETS_KEY gives (undefined or empty: a box without a key). A malformed SECRETS_KEY
 * throws SecretKeyError; config.ts checks it at start so this does not throw there.
 */
export function createSecretBox(keys: string | undefined): SecretBox {
  const parsed = keys === undefined || keys.trim() === '' ? [] : parseSecretKeys(keys);
  const byId = new Map(parsed.map((key) => [key.id, key.key]));
  const sealing = parsed[0];
  return {
    keyId: sealing?.id ?? null,
    seal(plain: string): string {
      if (!sealing)
        throw new SecretOpenError('no_key', 'a credential cannot be stored without SECRETS_KEY: set it to 32 random bytes (openssl rand -base64 32)');
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', sealing.key, iv);
      // The header (version and key id) is authenticated with the ciphertext: neither can be swapped alone.
      cipher.setAAD(Buffer.from(`${PREFIX}:${sealing.id}`));
      const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [PREFIX, sealing.id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join(':');
    },
    open(stored: string): string {
      const match = SEALED.exec(stored);
      if (!match)
        throw new SecretOpenError(
          'not_sealed',
          'the stored credential is not a sealed value (written before SECRETS_KEY was set? start with SECRETS_KEY to seal it)',
        );
      const [, keyId, iv, tag, ciphertext] = match as unknown as [string, string, string, string, string];
      const key = byId.get(keyId);
      if (!key) {
        throw new SecretOpenError(
          'unknown_key',
          sealing
            ? `the stored credential is sealed with key id "${keyId}", which SECRETS_KEY does not hold (it holds ${[...byId.keys()].map((id) => `"${id}"`).join(', ')}): add that key to SECRETS_KEY`
            : `the stored credential is sealed with key id "${keyId}" and SECRETS_KEY is not set: set SECRETS_KEY with that key`,
          keyId,
        );
      }
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(`${PREFIX}:${keyId}`));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretOpenError(
          'not_authentic',
          `the stored credential sealed with key id "${keyId}" does not authenticate: it was altered, or that id names another key`,
          keyId,
        );
      }
    },
  };
}

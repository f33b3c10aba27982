import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyAlgorithms } from '../../src/upstream/client-key.js';

const pkcs8 = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;

describe('keyAlgorithms (private_key_jwt keys, RFC 7518)', () => {
  it('an RSA key of 2048 bits or more signs with RS* and PS*, RS256 first', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect(keyAlgorithms(pkcs8(privateKey))).toEqual({ kind: 'an RSA key', algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] });
  });

  it('an EC key signs with its curve algorithm alone', () => {
    for (const [namedCurve, kind, algorithm] of [
      ['prime256v1', 'a P-256 key', 'ES256'],
      ['secp384r1', 'a P-384 key', 'ES384'],
      ['secp521r1', 'a P-521 key', 'ES512'],
    ] as const)
      expect(keyAlgorithms(pkcs8(generateKeyPairSync('ec', { namedCurve }).privateKey))).toEqual({ kind, algorithms: [algorithm] });
  });

  it('refuses what cannot sign client assertions, never repeating the key', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const small = pkcs8(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey);
    const cases: [string, RegExp][] = [
      ['', /is a PEM PKCS#8 private key/],
      [rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, /is a PEM PKCS#8 private key/],
      [
        rsa.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pass' }) as string,
        /is a PEM PKCS#8 private key, unencrypted/,
      ],
      [rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string, /is a PEM PKCS#8 private key/],
      [`junk\n${pkcs8(rsa.privateKey)}`, /is a PEM PKCS#8 private key/],
      ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', /does not read as a PKCS#8 private key/],
      [small, /an RSA key of 1024 bits: client assertions need 2048 or more/],
      [pkcs8(generateKeyPairSync('ed25519').privateKey), /neither an RSA key nor an EC key/],
      [pkcs8(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey), /neither an RSA key nor an EC key/],
    ];
    for (const [pem, reason] of cases) {
      const result = keyAlgorithms(pem);
      expect(result, pem.slice(0, 40)).toHaveProperty('invalid');
      const { invalid } = result as { invalid: string };
      expect(invalid).toMatch(reason);
      for (const line of pem.split('\n').filter((text) => text.length === 64)) expect(invalid).not.toContain(line);
    }
  });
});

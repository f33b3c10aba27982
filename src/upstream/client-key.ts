/**
 * The private key toolsift signs its client assertions with (`private_key_jwt`, RFC 7523), read
 * at registration: a key the signer would refuse (jose's importPKCS8, through the SDK's
 * createPrivateKeyJwtAuth) is a 400 then, not a failure at the first token request. Every
 * message names the key's kind, never its value.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';

/** The JWS algorithms a client assertion may be signed with (RFC 7518 §3.1), by key. */
export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

const RSA_ALGORITHMS: readonly SigningAlgorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
/** Each curve signs with one algorithm (RFC 7518 §3.4). */
const EC_ALGORITHMS: Readonly<Record<string, { curve: string; algorithm: SigningAlgorithm }>> = {
  prime256v1: { curve: 'P-256', algorithm: 'ES256' },
  secp384r1: { curve: 'P-384', algorithm: 'ES384' },
  secp521r1: { curve: 'P-521', algorithm: 'ES512' },
};
/** RFC 7518 §3.3: RSA keys for these algorithms are 2048 bits or more (jose refuses smaller ones). */
const RSA_MIN_BITS = 2048;

/** The one form jose reads: unencrypted PKCS#8 in PEM, nothing around it. */
const PKCS8_PEM = /^\s*-----BEGIN PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PRIVATE KEY-----\s*$/;

export interface KeyAlgorithms {
  /** What the key is, for messages: "an RSA key", "a P-256 key". */
  kind: string;
  /** The algorithms it signs with, the default first (RS256 for RSA, the curve's for EC). */
  algorithms: readonly SigningAlgorithm[];
}

/** What `pem` signs with, or why it cannot sign client assertions. */
export function keyAlgorithms(pem: string): KeyAlgorithms | { invalid: string } {
  if (!PKCS8_PEM.test(pem))
    return { invalid: 'private_key is a PEM PKCS#8 private key, unencrypted ("-----BEGIN PRIVATE KEY-----"; openssl pkcs8 -topk8 -nocrypt converts one)' };
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    return { invalid: 'private_key does not read as a PKCS#8 private key' };
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < RSA_MIN_BITS) return { invalid: `private_key is an RSA key of ${bits} bits: client assertions need ${RSA_MIN_BITS} or more` };
    return { kind: 'an RSA key', algorithms: RSA_ALGORITHMS };
  }
  const ec = key.asymmetricKeyType === 'ec' ? EC_ALGORITHMS[details.namedCurve ?? ''] : undefined;
  if (ec) return { kind: `a ${ec.curve} key`, algorithms: [ec.algorithm] };
  return { invalid: 'private_key is neither an RSA key nor an EC key on P-256, P-384 or P-521: those sign client assertions' };
}

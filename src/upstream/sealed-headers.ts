/**
 * An upstream's header values are credentials: sealed (lib/secret-box.ts) before the store sees
 * them, opened only to connect. Names stay readable: the API and the management tools show them.
 */
import { AppError } from '../errors.js';
import { SecretOpenError, type SecretBox } from '../lib/secret-box.js';
import { headerPlaintext, headerValueFor } from '../store/stored-secrets.js';

/**
 * A registration that gives credentials to keep (header values, OAuth) needs SECRETS_KEY: without
 * it a 400 naming it, before anything is stored.
 */
export function requireSecretsKey(box: SecretBox, registration: { headers: Record<string, string>; oauth?: unknown }): void {
  if (box.keyId !== null) return;
  const gives = Object.keys(registration.headers).length > 0 ? 'headers' : registration.oauth ? 'auth' : null;
  if (gives === null) return;
  throw new AppError(
    'validation_failed',
    `${gives}: this service keeps no upstream credentials because SECRETS_KEY is not set (the operator sets it to seal them at rest); register without ${gives === 'headers' ? 'headers' : 'auth'}, or ask the operator to set SECRETS_KEY`,
  );
}

/** Each value sealed with the URL it is for. */
export function sealHeaders(box: SecretBox, url: string, headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, box.seal(headerPlaintext(url, value))]));
}

/**
 * The values to send to `url`; throws SecretOpenError (naming the key id or the header, never a
 * value) when one cannot be opened, or was sealed for another URL (the row was altered).
 */
export function openHeaders(box: SecretBox, url: string, headers: Record<string, string> | null | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, sealed]) => {
      const value = headerValueFor(url, box.open(sealed));
      if (value === null)
        throw new SecretOpenError('not_authentic', `header ${name} was sealed for another URL than the upstream's: register the upstream again`);
      return [name, value];
    }),
  );
}

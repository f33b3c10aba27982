/**
 * An upstream's header values are credentials: sealed (lib/secret-box.ts) before the store sees
 * them, opened only to connect. Names stay readable: the API and the management tools show them.
 */
import { AppError } from '../errors.js';
import { SecretOpenError, type SecretBox } from '../lib/secret-box.js';
import { boundPlaintext, boundValue, type UpstreamBinding } from '../store/stored-secrets.js';
import type { UpstreamRow } from '../store/upstream-store.js';

/** What an upstream's row holds its credentials for: its tenant, catalog, name and URL as the row says now. */
export const bindingOf = (row: Pick<UpstreamRow, 'tenant' | 'catalogId' | 'name' | 'url'>): UpstreamBinding => ({
  tenant: row.tenant,
  catalogId: row.catalogId,
  upstream: row.name,
  url: row.url,
});

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

/** Each value sealed with what it is for: the tenant, catalog, upstream and URL (stored-secrets.ts, UpstreamBinding). */
export function sealHeaders(box: SecretBox, binding: UpstreamBinding, headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, box.seal(boundPlaintext(binding, value))]));
}

/**
 * The values to send for `binding`'s upstream; throws SecretOpenError (naming the key id or the
 * header, never a value) when one cannot be opened, or was sealed for another upstream, tenant or
 * URL (the row was altered, or the value copied from another row), or alone by an earlier release
 * after the start bound the others.
 */
export function openHeaders(box: SecretBox, binding: UpstreamBinding, headers: Record<string, string> | null | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, sealed]) => {
      const opened = boundValue(binding, box.open(sealed));
      if ('elsewhere' in opened)
        throw new SecretOpenError('not_authentic', `header ${name} was ${opened.elsewhere}: nothing was sent; register the upstream again`);
      return [name, opened.value];
    }),
  );
}

/**
 * The credentials the store keeps, brought under SECRETS_KEY at start (issue 76): every value an
 * older release wrote in plaintext is sealed, and every value sealed with another key than the
 * sealing one (a rotation: `SECRETS_KEY=new:...,old:...`) is opened and sealed again. SQL migrations
 * cannot do this (they have no key), so it runs in code after them, on every start.
 *
 * Where the store keeps credentials: `mcp_upstreams.headers` (the values; names stay readable),
 * `upstream_oauth.client_secret`, `.private_key`, `.client`, `.tokens` and `.discovery_sealed`,
 * `upstream_oauth_pending.code_verifier`.
 * Each value is sealed with what it is for (UpstreamBinding: the tenant, catalog, upstream and its
 * URL; an OAuth client secret or private key with the issuer configured with it too): one who can
 * write the database but lacks the key cannot point an upstream, or its OAuth client, elsewhere,
 * copy a value into another upstream's row (another tenant's at the same URL, say), or move a
 * catalog to another tenant, and have a credential sent or used there. Values an earlier release
 * stored alone (plaintext, or sealed before a binding, or with part of it) are bound here to what
 * their row says now.
 *
 * A start is refused, with what to set, when the store holds credentials and SECRETS_KEY is unset,
 * or holds values sealed with a key id SECRETS_KEY lacks (the key was dropped too early). Each
 * value is rewritten only if it is still the one read (compare and set): replicas starting side by
 * side, or a registration landing meanwhile, are never overwritten.
 */
import { sql } from 'drizzle-orm';
import { isSealed, sealedKeyId, SecretOpenError, type SecretBox } from '../lib/secret-box.js';
import type { Logger } from '../logger.js';
import { queryRows } from './database.js';
import type { Executor } from './tool-store.js';

/**
 * What a credential the store keeps for an upstream is for: the tenant and catalog whose upstream
 * it is, that upstream, and its URL (where header values and access tokens go, from which OAuth
 * discovery starts). Each value is sealed with it: one who can write the database but lacks the key
 * cannot copy a value into another upstream's row (another tenant's with the same URL, say), move a
 * catalog to another tenant, or point an upstream elsewhere, and have it sent.
 */
export interface UpstreamBinding {
  tenant: string;
  catalogId: number;
  upstream: string;
  url: string;
}

/** A header value's or an OAuth state value's sealed plaintext: `[tenant, catalog id, upstream, URL, value]`. */
export function boundPlaintext(binding: UpstreamBinding, value: string): string {
  return JSON.stringify([binding.tenant, binding.catalogId, binding.upstream, binding.url, value]);
}

const parse = (plaintext: string): unknown => {
  try {
    return JSON.parse(plaintext);
  } catch {
    return undefined;
  }
};

/** An opened bound value: what it was sealed for, and the value; undefined for one sealed otherwise (alone, or by an earlier release). */
export function readBound(plaintext: string): (UpstreamBinding & { value: string }) | undefined {
  const parsed = parse(plaintext);
  if (!Array.isArray(parsed) || parsed.length !== 5) return undefined;
  const [tenant, catalogId, upstream, url, value] = parsed as unknown[];
  if (typeof tenant !== 'string' || !Number.isSafeInteger(catalogId) || typeof upstream !== 'string' || typeof url !== 'string' || typeof value !== 'string')
    return undefined;
  return { tenant, catalogId: catalogId as number, upstream, url, value };
}

/** Why a value sealed for `bound` is not for `binding` (undefined: it is), in words a last_error may show. */
export function boundElsewhere(bound: Partial<UpstreamBinding>, binding: UpstreamBinding): string | undefined {
  if (bound.catalogId !== binding.catalogId || bound.upstream !== binding.upstream) return 'sealed for another upstream';
  if (bound.tenant !== binding.tenant) return "sealed for another tenant than the catalog's";
  if (bound.url !== binding.url) return "sealed for another URL than the upstream's";
  return undefined;
}

/** The value an opened plaintext (a header value, OAuth state) holds for `binding`, or why it holds none for it. */
export function boundValue(binding: UpstreamBinding, plaintext: string): { value: string } | { elsewhere: string } {
  const bound = readBound(plaintext);
  const elsewhere = bound ? boundElsewhere(bound, binding) : 'sealed without the upstream it is for';
  return elsewhere ? { elsewhere } : { value: bound!.value };
}

/** The header value an opened plaintext holds for `binding`; null when it was sealed for another (or is not one). */
export function headerValueFor(binding: UpstreamBinding, plaintext: string): string | null {
  const opened = boundValue(binding, plaintext);
  return 'value' in opened ? opened.value : null;
}

/**
 * A header value as the start keeps it: one an earlier release sealed with its URL alone
 * (`[url, value]`) bound to its row if that URL is still the row's (otherwise left, to be refused),
 * one bound already left as it is, anything else (plaintext) bound to the row.
 */
function bindHeader(binding: UpstreamBinding, plaintext: string): string {
  if (readBound(plaintext)) return plaintext;
  const parsed = parse(plaintext);
  if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string')
    return parsed[0] === binding.url ? boundPlaintext(binding, parsed[1]) : plaintext;
  return boundPlaintext(binding, plaintext);
}

/** An OAuth state value (client information, tokens) an earlier release sealed alone, bound to `binding`; one bound stays as it is. */
function bindOAuthState(binding: UpstreamBinding, plaintext: string): string {
  return readBound(plaintext) ? plaintext : boundPlaintext(binding, plaintext);
}

/**
 * What an OAuth client credential (client secret, private key) is for: its upstream (above), and
 * the authorization server configured with it (null: none, the upstream's metadata names it).
 */
export interface OAuthCredentialBinding extends UpstreamBinding {
  issuer: string | null;
}

/**
 * What an OAuth client credential is sealed as, `[issuer, tenant, catalog id, upstream, URL, value]`:
 * a row whose issuer is changed or cleared, or that is not the upstream's it was sealed for (above),
 * does not hand it over.
 */
export function oauthCredentialPlaintext(binding: OAuthCredentialBinding, value: string): string {
  return JSON.stringify([binding.issuer, binding.tenant, binding.catalogId, binding.upstream, binding.url, value]);
}

/**
 * An opened OAuth client credential: what it was sealed for, and the value; undefined for one
 * sealed alone (an earlier release). `tenant` and `url` null: sealed by a release that bound the
 * issuer, catalog and upstream only (`[issuer, catalog id, upstream, value]`), bound in full at the
 * next start.
 */
export function readOAuthCredential(
  plaintext: string,
): (Omit<OAuthCredentialBinding, 'tenant' | 'url'> & { tenant: string | null; url: string | null; value: string }) | undefined {
  const parsed = parse(plaintext);
  if (!Array.isArray(parsed) || (parsed.length !== 4 && parsed.length !== 6)) return undefined;
  const [issuer, tenant, catalogId, upstream, url, value] =
    parsed.length === 6 ? (parsed as unknown[]) : [parsed[0], null, parsed[1], parsed[2], null, parsed[3]];
  if (
    (issuer !== null && typeof issuer !== 'string') ||
    (tenant !== null && typeof tenant !== 'string') ||
    !Number.isSafeInteger(catalogId) ||
    typeof upstream !== 'string' ||
    (url !== null && typeof url !== 'string') ||
    typeof value !== 'string'
  )
    return undefined;
  return { issuer, tenant, catalogId: catalogId as number, upstream, url, value };
}

/**
 * A credential an earlier release stored alone, bound to `binding`; one bound without its tenant
 * and URL gets them, what it was bound to otherwise kept (a mismatch stays one); one bound in full
 * stays as it is.
 */
function bindOAuthCredential(binding: OAuthCredentialBinding, plaintext: string): string {
  const bound = readOAuthCredential(plaintext);
  if (!bound) return oauthCredentialPlaintext(binding, plaintext);
  if (bound.tenant !== null && bound.url !== null) return plaintext;
  return oauthCredentialPlaintext({ ...bound, tenant: binding.tenant, url: binding.url }, bound.value);
}

/** The store holds credentials SECRETS_KEY cannot serve: the start stops with this. */
export class StoredSecretsError extends Error {}

/** One stored credential: where it lives, and how to write it back if unchanged. */
interface StoredValue {
  where: string;
  value: string;
  /** What a plaintext value is sealed as: with what it is for (UpstreamBinding; an OAuth client credential with its issuer too). */
  plaintext?: (value: string) => string;
  /**
   * A sealed value too is opened and sealed again as `plaintext` makes it, when that changes it:
   * an OAuth client credential or state value an earlier release sealed alone (`plaintext` leaves a
   * bound one as it is).
   */
  rebinds?: true;
  /** Writes `next` in place of `value` if the row still holds `value`. */
  replace(next: string): Promise<void>;
}

export interface SealReport {
  /** Plaintext values sealed. */
  sealed: number;
  /** Values sealed with another key, or sealed before their binding (bound now), sealed again with the first. */
  resealed: number;
  /** Values left as they were because they do not authenticate (each upstream's sync says so). */
  unreadable: number;
}

/** Seals plaintext credentials and re-seals those under older keys; throws StoredSecretsError when SECRETS_KEY cannot serve the store. */
export async function sealStoredSecrets(db: Executor, box: SecretBox, logger?: Logger): Promise<SealReport> {
  const values = await storedValues(db);
  const report: SealReport = { sealed: 0, resealed: 0, unreadable: 0 };
  if (values.length === 0) return report;
  if (box.keyId === null) {
    const ids = [...new Set(values.map((value) => sealedKeyId(value.value)).filter((id) => id !== null))];
    throw new StoredSecretsError(
      `the store holds ${values.length} credential${values.length > 1 ? 's' : ''} (upstream header values, OAuth secrets) and SECRETS_KEY is not set: ` +
        `set SECRETS_KEY ${ids.length > 0 ? `with the key${ids.length > 1 ? 's' : ''} ${ids.map((id) => `"${id}"`).join(', ')} they are sealed with` : 'to 32 random bytes (openssl rand -base64 32) to seal them'}`,
    );
  }
  const missing = new Map<string, number>();
  const work: { stored: StoredValue; next: string; kind: 'sealed' | 'resealed' }[] = [];
  for (const stored of values) {
    if (!isSealed(stored.value)) {
      work.push({ stored, next: box.seal(stored.plaintext ? stored.plaintext(stored.value) : stored.value), kind: 'sealed' });
      continue;
    }
    const current = sealedKeyId(stored.value) === box.keyId;
    if (current && !stored.rebinds) continue;
    try {
      const opened = box.open(stored.value);
      const plain = stored.rebinds ? stored.plaintext!(opened) : opened;
      if (current && plain === opened) continue;
      work.push({ stored, next: box.seal(plain), kind: 'resealed' });
    } catch (error) {
      if (!(error instanceof SecretOpenError)) throw error;
      if (error.reason === 'unknown_key') missing.set(error.keyId!, (missing.get(error.keyId!) ?? 0) + 1);
      else {
        report.unreadable++;
        logger?.warn({ where: stored.where, reason: error.reason }, 'a stored credential does not open with SECRETS_KEY: left as it is');
      }
    }
  }
  if (missing.size > 0) {
    throw new StoredSecretsError(
      `SECRETS_KEY does not hold ${[...missing].map(([id, count]) => `key id "${id}" (${count} stored credential${count > 1 ? 's' : ''} sealed with it)`).join(', ')}: ` +
        `add it to SECRETS_KEY after the sealing key (SECRETS_KEY=<new id>:<new key>,<old id>:<old key>) until the start has re-sealed them`,
    );
  }
  for (const { stored, next, kind } of work) {
    await stored.replace(next);
    report[kind]++;
  }
  if (report.sealed + report.resealed > 0) logger?.info({ ...report, keyId: box.keyId }, 'stored credentials sealed with SECRETS_KEY');
  return report;
}

/** Every credential the store holds, each with its compare-and-set writer. */
async function storedValues(db: Executor): Promise<StoredValue[]> {
  const values: StoredValue[] = [];
  const upstreams = await queryRows<{ tenant: string; catalogId: number; name: string; url: string; headers: string }>(
    db,
    sql`select c.tenant, u.catalog_id as "catalogId", u.name, u.url, u.headers::text as headers from mcp_upstreams u join catalogs c on c.id = u.catalog_id
        where json_typeof(u.headers) = 'object' and u.headers::text <> '{}'`,
  );
  for (const row of upstreams) {
    const headers = JSON.parse(row.headers) as Record<string, unknown>;
    const binding: UpstreamBinding = { tenant: row.tenant, catalogId: row.catalogId, upstream: row.name, url: row.url };
    for (const [header, value] of Object.entries(headers)) {
      if (typeof value !== 'string') continue;
      values.push({
        where: `upstream "${row.name}" (catalog ${row.catalogId}) header ${header}`,
        value,
        plaintext: (plain) => bindHeader(binding, plain),
        rebinds: true,
        // The whole object is rewritten against the text read: a header changed meanwhile (a
        // registration, or another of its values sealed first) leaves this one to the next start.
        replace: async (next) => {
          const current = await queryRows<{ headers: string }>(
            db,
            sql`select headers::text as headers from mcp_upstreams where catalog_id = ${row.catalogId} and name = ${row.name}`,
          );
          const before = current[0]?.headers;
          if (before === undefined) return;
          const object = JSON.parse(before) as Record<string, unknown>;
          if (object[header] !== value) return;
          await db.execute(sql`update mcp_upstreams set headers = ${JSON.stringify({ ...object, [header]: next })}::json
            where catalog_id = ${row.catalogId} and name = ${row.name} and headers::text = ${before}`);
        },
      });
    }
  }
  const oauth = await queryRows<{
    catalogId: number;
    upstream: string;
    tenant: string | null;
    url: string | null;
    issuer: string | null;
    clientSecret: string | null;
    privateKey: string | null;
    client: string | null;
    tokens: string | null;
    discovery: string | null;
  }>(
    db,
    sql`select o.catalog_id as "catalogId", o.upstream, c.tenant, u.url, o.issuer, o.client_secret as "clientSecret", o.private_key as "privateKey", o.client,
          o.tokens, o.discovery_sealed as discovery
        from upstream_oauth o left join mcp_upstreams u on u.catalog_id = o.catalog_id and u.name = o.upstream left join catalogs c on c.id = o.catalog_id
        where o.client_secret is not null or o.private_key is not null or o.client is not null or o.tokens is not null or o.discovery_sealed is not null`,
  );
  for (const row of oauth) {
    // Bound to what their row says now: the client credentials with the issuer it names, the client
    // information and tokens without. An OAuth row without its upstream (none: the registration
    // deletes both) is re-sealed only.
    const { url, tenant } = row;
    const binding =
      url === null || tenant === null
        ? undefined
        : ({ issuer: row.issuer, tenant, catalogId: row.catalogId, upstream: row.upstream, url } satisfies OAuthCredentialBinding);
    const credential = binding ? ({ plaintext: (plain: string) => bindOAuthCredential(binding, plain), rebinds: true } as const) : {};
    const state = binding ? ({ plaintext: (plain: string) => bindOAuthState(binding, plain), rebinds: true } as const) : {};
    for (const [column, value] of [
      ['client_secret', row.clientSecret],
      ['private_key', row.privateKey],
      ['client', row.client],
      ['tokens', row.tokens],
      ['discovery_sealed', row.discovery],
    ] as const) {
      if (value === null) continue;
      values.push({
        where: `upstream "${row.upstream}" (catalog ${row.catalogId}) OAuth ${column}`,
        value,
        ...(column === 'client_secret' || column === 'private_key' ? credential : column === 'discovery_sealed' ? {} : state),
        replace: async (next) => {
          await db.execute(
            sql`update upstream_oauth set ${sql.identifier(column)} = ${next} where catalog_id = ${row.catalogId} and upstream = ${row.upstream} and ${sql.identifier(column)} = ${value}`,
          );
        },
      });
    }
  }
  const pending = await queryRows<{ stateHash: string; catalogId: number; upstream: string; codeVerifier: string }>(
    db,
    sql`select state_hash as "stateHash", catalog_id as "catalogId", upstream, code_verifier as "codeVerifier" from upstream_oauth_pending`,
  );
  for (const row of pending) {
    values.push({
      where: `upstream "${row.upstream}" (catalog ${row.catalogId}) pending authorization`,
      value: row.codeVerifier,
      replace: async (next) => {
        await db.execute(
          sql`update upstream_oauth_pending set code_verifier = ${next} where state_hash = ${row.stateHash} and code_verifier = ${row.codeVerifier}`,
        );
      },
    });
  }
  return values;
}

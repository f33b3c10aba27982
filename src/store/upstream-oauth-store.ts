/**
 * An upstream's OAuth row (migration 0018) and its pending authorizations. Secret columns are
 * written and read as the sealed text the caller gives (SecretBox output): nothing here sees a
 * plaintext token or client secret.
 */
import { sql } from 'drizzle-orm';
import { queryRows, retryOnConflict, type Db } from './database.js';
import type { Executor } from './tool-store.js';

export type OAuthGrant = 'authorization_code' | 'client_credentials';
export type OAuthStatus = 'authorized' | 'authorization_required' | 'refresh_failed';

export interface OAuthRow {
  catalogId: number;
  upstream: string;
  grantType: OAuthGrant;
  scope: string | null;
  clientId: string | null;
  /** Sealed with `issuer` and what it is for (stored-secrets.ts, oauthCredentialPlaintext): opened only for this row's issuer, upstream and URL. */
  clientSecret: string | null;
  /** Sealed PEM of the key signing client assertions (private_key_jwt, migration 0022), in place of a secret; sealed as the secret is. */
  privateKey: string | null;
  /** Its JWS algorithm (RS256, ES256, ...). */
  privateKeyAlg: string | null;
  /** The authorization server the operator named (migration 0022), the only one credentials go to; null: the upstream's. */
  issuer: string | null;
  /** The client information in use, tokens and discovery: each sealed JSON bound to its upstream (stored-secrets.ts, boundPlaintext). */
  client: string | null;
  discovery: string | null;
  tokens: string | null;
  tokenVersion: number;
  issuedAt: Date | null;
  expiresAt: Date | null;
  status: OAuthStatus;
  lastError: string | null;
  authorizedAt: Date | null;
  /** What toolsift asks for since an upstream's insufficient_scope challenge widened it (oauth.ts); null: no step-up. */
  stepUpScope: string | null;
}

/** The settings a registration gives (the secret and the private key sealed, with the issuer). */
export interface OAuthSettingsRow {
  grantType: OAuthGrant;
  scope: string | null;
  clientId: string | null;
  clientSecret: string | null;
  privateKey: string | null;
  privateKeyAlg: string | null;
  issuer: string | null;
}

type Dated<T> = { [K in keyof T]: T[K] extends Date | null ? string | Date | null : T[K] };
const date = (value: string | Date | null) => (value === null ? null : new Date(value));

const columns = sql`catalog_id as "catalogId", upstream, grant_type as "grantType", scope, client_id as "clientId", client_secret as "clientSecret",
  private_key as "privateKey", private_key_alg as "privateKeyAlg", issuer, client, discovery_sealed as discovery, tokens, token_version as "tokenVersion",
  issued_at as "issuedAt", expires_at as "expiresAt", status, last_error as "lastError", authorized_at as "authorizedAt", step_up_scope as "stepUpScope"`;

export async function getOAuth(db: Executor, catalogId: number, upstream: string): Promise<OAuthRow | undefined> {
  const rows = await queryRows<Dated<OAuthRow>>(db, sql`select ${columns} from upstream_oauth where catalog_id = ${catalogId} and upstream = ${upstream}`);
  const row = rows[0];
  return row && { ...row, issuedAt: date(row.issuedAt), expiresAt: date(row.expiresAt), authorizedAt: date(row.authorizedAt) };
}

/**
 * Writes a registration's OAuth settings. `keep` false (another server, grant, client, key,
 * issuer or scope) forgets the client, discovery and tokens, and every pending authorization: they
 * were for what the registration no longer says.
 */
export async function putOAuthSettings(db: Db, catalogId: number, upstream: string, settings: OAuthSettingsRow, keep: boolean): Promise<void> {
  await retryOnConflict(() =>
    db.transaction(async (tx) => {
      await tx.execute(sql`insert into upstream_oauth (catalog_id, upstream, grant_type, scope, client_id, client_secret, private_key, private_key_alg, issuer)
        values (${catalogId}, ${upstream}, ${settings.grantType}, ${settings.scope}, ${settings.clientId}, ${settings.clientSecret},
          ${settings.privateKey}, ${settings.privateKeyAlg}, ${settings.issuer})
        on conflict (catalog_id, upstream) do update set grant_type = excluded.grant_type, scope = excluded.scope, client_id = excluded.client_id,
          client_secret = excluded.client_secret, private_key = excluded.private_key, private_key_alg = excluded.private_key_alg, issuer = excluded.issuer`);
      if (keep) return;
      await tx.execute(sql`update upstream_oauth set client = null, discovery = null, discovery_sealed = null, tokens = null, token_version = token_version + 1, issued_at = null,
        expires_at = null, status = 'authorization_required', last_error = null, authorized_at = null,
        step_up_scope = null where catalog_id = ${catalogId} and upstream = ${upstream}`);
      await tx.execute(sql`delete from upstream_oauth_pending where catalog_id = ${catalogId} and upstream = ${upstream}`);
    }),
  );
}

/** A registration without OAuth: its OAuth row (and pending authorizations, by cascade of nothing: explicitly) go. */
export async function deleteOAuth(db: Executor, catalogId: number, upstream: string): Promise<void> {
  await db.execute(sql`delete from upstream_oauth_pending where catalog_id = ${catalogId} and upstream = ${upstream}`);
  await db.execute(sql`delete from upstream_oauth where catalog_id = ${catalogId} and upstream = ${upstream}`);
}

export async function saveClient(db: Executor, catalogId: number, upstream: string, sealedClient: string | null): Promise<void> {
  await db.execute(sql`update upstream_oauth set client = ${sealedClient} where catalog_id = ${catalogId} and upstream = ${upstream}`);
}

export async function saveDiscovery(db: Executor, catalogId: number, upstream: string, sealedDiscovery: string | null): Promise<void> {
  await db.execute(sql`update upstream_oauth set discovery_sealed = ${sealedDiscovery} where catalog_id = ${catalogId} and upstream = ${upstream}`);
}

/** An OAuth state column that holds what does not open for its row: forgotten, if it still holds `value` (nothing is sent with it). */
export async function forgetState(db: Executor, catalogId: number, upstream: string, which: 'client' | 'tokens' | 'discovery', value: string): Promise<void> {
  if (which === 'tokens') {
    await db.execute(sql`update upstream_oauth set tokens = null, token_version = token_version + 1, issued_at = null, expires_at = null
      where catalog_id = ${catalogId} and upstream = ${upstream} and tokens = ${value}`);
    return;
  }
  const column = which === 'client' ? sql.identifier('client') : sql.identifier('discovery_sealed');
  await db.execute(sql`update upstream_oauth set ${column} = null where catalog_id = ${catalogId} and upstream = ${upstream} and ${column} = ${value}`);
}

/** Stores new tokens: authorized, the error cleared, the version bumped. Returns the new version. */
export async function saveTokens(
  db: Executor,
  catalogId: number,
  upstream: string,
  tokens: { sealed: string; issuedAt: Date; expiresAt: Date | null },
): Promise<number> {
  const rows = await queryRows<{ version: number }>(
    db,
    sql`update upstream_oauth set tokens = ${tokens.sealed}, token_version = token_version + 1, issued_at = ${tokens.issuedAt.toISOString()}::timestamptz,
      expires_at = ${tokens.expiresAt?.toISOString() ?? null}::timestamptz, status = 'authorized', last_error = null, authorized_at = coalesce(authorized_at, now())
      where catalog_id = ${catalogId} and upstream = ${upstream} returning token_version as version`,
  );
  return rows[0]?.version ?? 0;
}

/**
 * Forgets the tokens the server rejected, only if they are still the ones stored (`version`): a
 * refresh another replica landed meanwhile is kept.
 */
export async function forgetTokens(db: Executor, catalogId: number, upstream: string, version: number): Promise<void> {
  await db.execute(sql`update upstream_oauth set tokens = null, token_version = token_version + 1, issued_at = null, expires_at = null
    where catalog_id = ${catalogId} and upstream = ${upstream} and token_version = ${version}`);
}

/**
 * Takes the upstream's renewal lease (migration 0024) for `holder` for `ms`, unless another
 * holder's has not expired yet: one replica at a time renews an upstream's tokens. One statement,
 * so two replicas asking together cannot both take it; its times are the database's clock, so the
 * replicas' clocks need not agree. True also when the upstream has no OAuth row (nothing to wait
 * for: the renewal finds it gone).
 */
export async function takeRenewalLease(db: Executor, catalogId: number, upstream: string, holder: string, ms: number): Promise<boolean> {
  const rows = await queryRows<{ taken: boolean }>(
    db,
    sql`with taken as (
          update upstream_oauth set renewal_holder = ${holder}, renewal_lease_until = now() + make_interval(secs => ${ms / 1000})
          where catalog_id = ${catalogId} and upstream = ${upstream} and (renewal_lease_until is null or renewal_lease_until < now())
          returning 1)
        select exists (select 1 from taken) or not exists (select 1 from upstream_oauth where catalog_id = ${catalogId} and upstream = ${upstream}) as taken`,
  );
  return rows[0]?.taken === true;
}

/** Gives the renewal lease back, if `holder` still has it (one that expired and was taken since is the taker's). */
export async function releaseRenewalLease(db: Executor, catalogId: number, upstream: string, holder: string): Promise<void> {
  await db.execute(sql`update upstream_oauth set renewal_holder = null, renewal_lease_until = null
    where catalog_id = ${catalogId} and upstream = ${upstream} and renewal_holder = ${holder}`);
}

/** Stores the scope a step-up asks for from now on (oauth.ts). */
export async function saveStepUpScope(db: Executor, catalogId: number, upstream: string, scope: string): Promise<void> {
  await db.execute(sql`update upstream_oauth set step_up_scope = ${scope} where catalog_id = ${catalogId} and upstream = ${upstream}`);
}

/** Records why the upstream has no usable token (the gateway's own words), and the status it leaves (null: as it is). */
export async function recordOAuthFailure(db: Executor, catalogId: number, upstream: string, status: OAuthStatus | null, error: string): Promise<void> {
  await db.execute(
    sql`update upstream_oauth set status = coalesce(${status}, status), last_error = ${error} where catalog_id = ${catalogId} and upstream = ${upstream}`,
  );
}

export interface PendingAuthorization {
  catalogId: number;
  upstream: string;
  /** Sealed. */
  codeVerifier: string;
  redirectUri: string;
}

/** Starts a pending authorization; expired ones of every upstream are swept on the way. */
export async function putPending(db: Executor, stateHash: string, pending: PendingAuthorization, expiresAt: Date): Promise<void> {
  await db.execute(sql`delete from upstream_oauth_pending where expires_at < now()`);
  await db.execute(sql`insert into upstream_oauth_pending (state_hash, catalog_id, upstream, code_verifier, redirect_uri, expires_at)
    values (${stateHash}, ${pending.catalogId}, ${pending.upstream}, ${pending.codeVerifier}, ${pending.redirectUri}, ${expiresAt.toISOString()}::timestamptz)`);
}

/** Takes a pending authorization by its state's digest: single use (deleted as read); undefined when unknown or expired. */
export async function takePending(db: Executor, stateHash: string): Promise<(PendingAuthorization & { tenant: string; catalog: string }) | undefined> {
  const rows = await queryRows<PendingAuthorization & { tenant: string; catalog: string; expired: boolean }>(
    db,
    sql`with taken as (delete from upstream_oauth_pending where state_hash = ${stateHash}
          returning catalog_id, upstream, code_verifier, redirect_uri, expires_at)
        select t.catalog_id as "catalogId", t.upstream, t.code_verifier as "codeVerifier", t.redirect_uri as "redirectUri",
          t.expires_at < now() as expired, c.tenant, c.name as catalog
        from taken t join catalogs c on c.id = t.catalog_id`,
  );
  const row = rows[0];
  if (!row || row.expired) return undefined;
  const { expired: _expired, ...pending } = row;
  return pending;
}

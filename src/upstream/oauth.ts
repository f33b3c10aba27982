/**
 * OAuth to upstream MCP servers, as the MCP authorization spec has it and the official SDK's
 * `auth()` implements it: the server's 401 names its protected-resource metadata, that names the
 * authorization server, whose metadata gives the endpoints; toolsift registers itself there
 * (dynamic client registration) unless a client is configured or, in an operator's browser flow
 * with a server that supports it, its client ID metadata document's URL is its client id
 * (client-metadata.ts: nothing registered, the server reads the document); then it gets tokens
 * by the client_credentials grant (machine access) or by an authorization code with PKCE that an
 * operator approves in a browser (`start` answers the authorization URL, `finish` takes the
 * callback).
 *
 * Every request of it (discovery, registration, token) goes through the guarded fetch: metadata
 * that points at an internal address is refused like an upstream URL would be. Tokens and client
 * secrets are stored sealed (lib/secret-box.ts). An access token is renewed before it expires (a
 * quarter of its lifetime, at most a minute, ahead); a renewal that fails is recorded in the
 * upstream's OAuth state, its sync state, the audit and the metrics, in the gateway's own words,
 * and the call that needed it answers a generic error. Replicas sharing the store renew an
 * upstream's tokens one at a time (a lease in its row); one that waited uses the tokens the other
 * stored, so a rotating refresh token is never spent twice.
 *
 * A call answered 403 `insufficient_scope` steps up (SEP-2350) once: a token for the wider scope,
 * then the same request again. A configured scope is the ceiling of everything toolsift asks for:
 * neither an upstream's challenge nor its metadata widens it.
 *
 * A configured issuer is the one authorization server toolsift's credentials go to: discovery
 * starts from it, metadata naming another is refused before anything is sent, and a configured
 * client is never presented elsewhere (without it, the SDK binds the client to the first server it
 * is used with). A configured private key signs a client assertion per token request
 * (private_key_jwt, RFC 7523) in place of a secret. A configured secret or key is sealed with that
 * issuer (none is a value too), its tenant, catalog, upstream and URL: a row whose issuer was
 * changed or cleared since, or that is not the one it was sealed for, has it refused before
 * anything is sent (openClientCredential). The client information, tokens and discovery are sealed
 * with their tenant, catalog, upstream and URL: one copied from another upstream's row, or left when
 * the URL or the catalog's tenant was changed in the database, is forgotten as it is read (#vet), so
 * no access token goes to another URL than the one it was got for or serves another tenant, and no
 * refresh token or client secret goes to a token endpoint another upstream's discovery names.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  auth,
  AuthorizationServerMismatchError,
  computeScopeUnion,
  createPrivateKeyJwtAuth,
  extractWWWAuthenticateParams,
  InsecureTokenEndpointError,
  IssuerMismatchError,
  OAuthError,
  OAuthErrorCode,
  RegistrationRejectedError,
  type AddClientAuthentication,
  type AuthProvider,
  type FetchLike,
  type OAuthClientInformationContext,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { AuditLog } from '../audit.js';
import { AppError } from '../errors.js';
import { SecretOpenError, type SecretBox } from '../lib/secret-box.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Db } from '../store/database.js';
import { boundElsewhere, boundPlaintext, boundValue, oauthCredentialPlaintext, readOAuthCredential, type UpstreamBinding } from '../store/stored-secrets.js';
import * as store from '../store/upstream-oauth-store.js';
import type { UpstreamRow } from '../store/upstream-store.js';
import { getUpstream, recordUpstreamError } from '../store/upstream-store.js';
import type { SigningAlgorithm } from './client-key.js';
import { tenantClientId, type ClientMetadataSettings } from './client-metadata.js';
import { describeUpstreamFailure, refusalIn, UpstreamRefused, type GuardedFetch } from './guarded-fetch.js';
import { oauthScope } from './registration.js';
import { bindingOf } from './sealed-headers.js';

export type { OAuthGrant } from '../store/upstream-oauth-store.js';

/** What a registration says about OAuth (`auth: {type: "oauth", ...}`). */
export interface OAuthSettings {
  grant: store.OAuthGrant;
  clientId?: string;
  clientSecret?: string;
  /** A PEM PKCS#8 key signing client assertions (private_key_jwt) in place of a secret, and its algorithm. */
  privateKey?: string;
  algorithm?: SigningAlgorithm;
  /** The authorization server the operator named: the only one credentials go to. */
  issuer?: string;
  scope?: string;
}

/** An upstream's OAuth state as its status view shows it: never a token or a secret. */
export interface OAuthState {
  type: 'oauth';
  grant: store.OAuthGrant;
  status: store.OAuthStatus;
  /** configured: given at registration; registered: by dynamic client registration, or the client ID metadata document URL; null: none yet. */
  client: 'configured' | 'registered' | null;
  expires_at: string | null;
  authorized_at: string | null;
  last_error: string | null;
}

/** A pending authorization lives this long: the operator has that long to approve in the browser. */
const PENDING_MS = 10 * 60_000;
/** An access token is renewed this share of its lifetime before it expires ... */
const RENEW_SHARE = 0.25;
/** ... but never more than this ahead. */
const RENEW_AHEAD_MAX_MS = 60_000;
/** A renewal's requests (discovery, registration, token) end this long after it starts ... */
const RENEWAL_MS = 20_000;
/** ... inside its lease, which other replicas wait out should the holder die renewing. */
const RENEWAL_LEASE_MS = RENEWAL_MS + 10_000;
/** How often a renewal waiting for the lease asks whether it is free ... */
const LEASE_POLL_MS = 50;
/** ... and for how long: longer than a lease lives, so one still taken then is being retaken, and the renewal goes on without. */
const LEASE_WAIT_MS = RENEWAL_LEASE_MS + 5_000;

/** How an operator mends an authorization: every message that needs one says so. */
const AUTHORIZE_AGAIN = 'an operator authorizes it again with POST /v1/catalogs/{catalog}/upstreams/{name}/oauth/start';

/**
 * Why an upstream has no usable token, in the gateway's own words: shown in its sync state and
 * OAuth status, never to an agent (a call answers a generic error).
 */
export class UpstreamAuthorizationFailed extends Error {
  override readonly name = 'UpstreamAuthorizationFailed';
  constructor(
    message: string,
    /** The OAuth status it leaves; null keeps the status (a scope refused for one call: the token serves the others). */
    readonly status: store.OAuthStatus | null,
  ) {
    super(message);
  }
}

/** Thrown inside the SDK's flow where it would send a browser somewhere: a background renewal cannot. */
class NeedsOperator extends Error {}

export interface UpstreamOAuthDeps {
  db: Db;
  secrets: SecretBox;
  /** The guarded fetch: every OAuth request passes the address policy. */
  fetch: GuardedFetch;
  logger: Logger;
  audit: AuditLog;
  metrics?: Metrics;
  version: string;
  /** OAUTH_CLIENT_METADATA_URL: each tenant's document, served by toolsift; absent: every client not configured is registered. */
  clientMetadata?: ClientMetadataSettings;
}

interface HeldToken {
  access: string;
  /** The upstream's URL it was got for and read with: a row read with another URL (changed in the database) does not send it. */
  url: string;
  issuedAt: number;
  expiresAt: number | null;
  /** The stored tokens' version (store.saveTokens): a renewal knows by it whether another replica renewed meanwhile. */
  version: number;
}

/**
 * What a renewal is asked with: a 401's challenge, or a step-up's scope (`stepUp`: its failure
 * leaves the status as it was); and the version of the tokens it replaces, found due or refused
 * (absent: none were held): tokens of another version stored meanwhile, not yet due, serve instead.
 */
interface Challenge {
  resourceMetadataUrl?: URL;
  scope?: string;
  stepUp?: true;
  replaces?: number;
}

type Mode = { kind: 'background' } | { kind: 'start'; redirectUri: string; state: string } | { kind: 'callback'; redirectUri: string; codeVerifier: string };

const keyOf = (row: Pick<UpstreamRow, 'catalogId' | 'name'>) => `${row.catalogId}\0${row.name}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const digest = (state: string) => createHash('sha256').update(state).digest('hex');

export class UpstreamOAuth {
  readonly #deps: UpstreamOAuthDeps;
  /** Access tokens as last read or written here, by upstream: a call does not read the store while one is fresh. */
  readonly #held = new Map<string, HeldToken>();
  /** One renewal at a time per upstream in this process (across replicas, the lease: #lease). */
  readonly #renewing = new Map<string, Promise<HeldToken>>();

  constructor(deps: UpstreamOAuthDeps) {
    this.#deps = deps;
  }

  /**
   * Stores a registration's settings. The same server, grant, client (secret or key), issuer and
   * scope keep the client, discovery and tokens (re-registering does not ask for a new
   * authorization); anything else forgets them. Null: the registration has no OAuth, and whatever
   * it had goes.
   */
  async configure(upstream: UpstreamBinding, urlBefore: string | undefined, settings: OAuthSettings | null): Promise<void> {
    const { catalogId, upstream: name } = upstream;
    this.#held.delete(keyOf({ catalogId, name }));
    if (!settings) return store.deleteOAuth(this.#deps.db, catalogId, name);
    const before = await store.getOAuth(this.#deps.db, catalogId, name);
    const keep = urlBefore === upstream.url && before !== undefined && this.#unchanged(before, upstream, settings);
    const binding = { ...upstream, issuer: settings.issuer ?? null };
    const seal = (value: string | undefined) => (value === undefined ? null : this.#deps.secrets.seal(oauthCredentialPlaintext(binding, value)));
    await store.putOAuthSettings(
      this.#deps.db,
      catalogId,
      name,
      {
        grantType: settings.grant,
        scope: settings.scope ?? null,
        clientId: settings.clientId ?? null,
        clientSecret: seal(settings.clientSecret),
        privateKey: seal(settings.privateKey),
        privateKeyAlg: settings.algorithm ?? null,
        issuer: settings.issuer ?? null,
      },
      keep,
    );
  }

  /**
   * Whether a registration says what the stored row says (the secret and key compared opened). One
   * that does not open for the row (altered, or sealed for another issuer) is a change: the
   * registration stores it afresh.
   */
  #unchanged(before: store.OAuthRow, upstream: UpstreamBinding, settings: OAuthSettings): boolean {
    const unopened = Symbol('unopened');
    const open = (which: ClientCredential) => {
      try {
        return openClientCredential(this.#deps.secrets, before, upstream, which);
      } catch (error) {
        if (error instanceof SecretOpenError) return unopened;
        throw error;
      }
    };
    return (
      before.grantType === settings.grant &&
      before.scope === (settings.scope ?? null) &&
      before.clientId === (settings.clientId ?? null) &&
      before.issuer === (settings.issuer ?? null) &&
      before.privateKeyAlg === (settings.algorithm ?? null) &&
      open('client_secret') === settings.clientSecret &&
      open('private_key') === settings.privateKey
    );
  }

  /**
   * What the upstream's transport needs: a bearer token before each request (renewed when due),
   * what to do on a 401, and the fetch that steps up on a 403 (`fetch`, the guarded one, below).
   */
  forTransport(row: UpstreamRow): { authProvider: AuthProvider; fetch: FetchLike } {
    const authProvider: AuthProvider = {
      token: () => this.#token(row),
      onUnauthorized: async (context) => {
        const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(context.response);
        const refused = this.#held.get(keyOf(row));
        this.#held.delete(keyOf(row));
        await this.#renew(row, { resourceMetadataUrl, scope, replaces: refused?.version });
      },
    };
    return { authProvider, fetch: this.#steppingUp(row) };
  }

  /**
   * Starts an authorization code flow for an operator: discovery (from the server's 401), the
   * client (configured, the metadata document's URL, or registered now for `redirectUri`), PKCE;
   * answers the URL to open in a browser. The state is single use and expires; only its digest is
   * stored.
   */
  async start(row: UpstreamRow, redirectUri: string): Promise<{ authorizationUrl: string; expiresAt: Date }> {
    const settings = await this.#settings(row);
    if (settings.grantType !== 'authorization_code')
      throw new AppError('validation_failed', `upstream "${row.name}" uses the client_credentials grant: it gets its tokens itself, nothing to authorize`);
    const unusable = await this.#unusableCredentials(row, settings, 'start');
    if (unusable) throw new AppError('upstream_failed', `could not start the authorization of upstream "${row.name}": credentials: ${unusable.message}`);
    const state = randomBytes(32).toString('base64url');
    const provider = new StoredProvider(this, row, settings, { kind: 'start', redirectUri, state });
    const { fetch, refused } = this.#watchedFetch();
    try {
      const { resourceMetadataUrl, scope } = settings.discovery ? {} : await probeChallenge(row.url, fetch);
      const result = await auth(provider, {
        serverUrl: row.url,
        fetchFn: fetch,
        forceReauthorization: true,
        resourceMetadataUrl,
        scope: scopeToAsk(settings, scope),
      });
      if (result !== 'REDIRECT' || !provider.authorizationUrl) throw new Error('the authorization server gave no authorization URL');
    } catch (error) {
      const failure = oauthFailure(error, { refused });
      this.#note(row, 'start', 'error', failure.message);
      throw new AppError('upstream_failed', `could not start the authorization of upstream "${row.name}": ${failure.message}`);
    }
    this.#note(row, 'start', 'ok');
    return { authorizationUrl: provider.authorizationUrl.href, expiresAt: provider.pendingExpiresAt! };
  }

  /**
   * The browser's return from the authorization server: the state (single use, unexpired) names
   * the upstream, the code is exchanged with the verifier kept for it. Answers the upstream.
   */
  async finish(params: { state?: string; code?: string; iss?: string; error?: string }): Promise<{ tenant: string; catalog: string; upstream: string }> {
    const pending = params.state ? await store.takePending(this.#deps.db, digest(params.state)) : undefined;
    if (!pending) throw new AppError('validation_failed', 'unknown or expired authorization state: start the authorization again (POST .../oauth/start)');
    const where = { tenant: pending.tenant, catalog: pending.catalog, upstream: pending.upstream };
    const row = { catalogId: pending.catalogId, name: pending.upstream, tenant: pending.tenant, catalog: pending.catalog };
    if (params.error !== undefined || params.code === undefined) {
      const code = params.error !== undefined && KNOWN_CODES.has(params.error) ? params.error : 'no code';
      const message = `the authorization was not granted (${code}): start it again (POST .../oauth/start)`;
      await store.recordOAuthFailure(this.#deps.db, row.catalogId, row.name, 'authorization_required', message);
      this.#note(row, 'callback', 'error', message);
      throw new AppError('validation_failed', message);
    }
    const upstream = await this.#upstreamRow(pending.catalogId, pending.upstream, pending.tenant, pending.catalog);
    const settings = await this.#settings(upstream);
    const unusable = await this.#unusableCredentials(upstream, settings, 'callback');
    if (unusable) throw new AppError('validation_failed', `the authorization of upstream "${row.name}" did not complete: credentials: ${unusable.message}`);
    const provider = new StoredProvider(this, upstream, settings, {
      kind: 'callback',
      redirectUri: pending.redirectUri,
      codeVerifier: this.#deps.secrets.open(pending.codeVerifier),
    });
    const { fetch, refused } = this.#watchedFetch();
    // Under the renewal lease: a renewal of the old grant on another replica neither runs beside the
    // exchange nor stores its tokens over the new ones (it waits, then finds these).
    const release = await this.#lease(upstream);
    try {
      await auth(provider, { serverUrl: upstream.url, authorizationCode: params.code, iss: params.iss, fetchFn: fetch });
    } catch (error) {
      const failure = oauthFailure(error, { refused });
      await store.recordOAuthFailure(this.#deps.db, row.catalogId, row.name, 'authorization_required', failure.message);
      this.#note(row, 'callback', 'error', failure.message);
      throw new AppError('validation_failed', `the authorization of upstream "${row.name}" did not complete: ${failure.message}`);
    } finally {
      await release?.();
    }
    this.#note(row, 'callback', 'ok');
    return where;
  }

  /** The upstream's OAuth state for its status view, or null without OAuth. */
  static stateOf(row: UpstreamRow): OAuthState | null {
    const oauth = row.oauth;
    if (!oauth) return null;
    const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString());
    return {
      type: 'oauth',
      grant: oauth.grant,
      status: oauth.status,
      client: oauth.client,
      expires_at: iso(oauth.expires_at),
      authorized_at: iso(oauth.authorized_at),
      last_error: oauth.last_error,
    };
  }

  // --- the transport's token ---

  async #token(row: UpstreamRow): Promise<string | undefined> {
    const key = keyOf(row);
    let held: HeldToken | undefined = this.#held.get(key);
    if (!held || held.url !== row.url || renewDue(held)) held = await this.#read(row);
    // No token yet: the request goes without one and the server's 401 starts discovery.
    if (!held) return undefined;
    if (!renewDue(held)) return held.access;
    try {
      return (await this.#renew(row, { replaces: held.version })).access;
    } catch (error) {
      // Renewal failed (recorded): a token that has not expired yet still serves.
      if (!expired(held)) return held.access;
      throw error;
    }
  }

  /** The stored access token, held here from now on; undefined when there is none. */
  async #read(row: UpstreamRow): Promise<HeldToken | undefined> {
    const stored = await this.#load(row);
    const held = stored && this.#heldOf(row, stored);
    if (held) this.#held.set(keyOf(row), held);
    return held;
  }

  #heldOf(row: UpstreamRow, stored: store.OAuthRow): HeldToken | undefined {
    const tokens = openState<StoredOAuthTokens>(this.#deps.secrets, stored, bindingOf(row), 'tokens');
    if (!tokens) return undefined;
    const issuedAt = stored.issuedAt?.getTime() ?? Date.now();
    return { access: tokens.access_token, url: row.url, issuedAt, expiresAt: stored.expiresAt?.getTime() ?? null, version: stored.tokenVersion };
  }

  /**
   * Gets a fresh token the way the SDK's `auth()` does (a refresh, the client_credentials grant,
   * discovery first when nothing is known); one at a time per upstream, here and across replicas.
   * A failure is recorded and thrown as UpstreamAuthorizationFailed.
   */
  #renew(row: UpstreamRow, challenge: Challenge): Promise<HeldToken> {
    const key = keyOf(row);
    let running = this.#renewing.get(key);
    if (!running) {
      running = this.#renewNow(row, challenge).finally(() => this.#renewing.delete(key));
      this.#renewing.set(key, running);
    }
    return running;
  }

  async #renewNow(row: UpstreamRow, challenge: Challenge): Promise<HeldToken> {
    const release = await this.#lease(row);
    try {
      // Read under the lease: what another replica renewed while this one waited is there.
      const settings = await this.#settings(row);
      const landed = challenge.stepUp ? undefined : this.#landed(row, settings, challenge.replaces);
      if (landed) return landed;
      const action = challenge.stepUp ? 'step_up' : settings.tokens ? (settings.grantType === 'client_credentials' ? 'token' : 'refresh') : 'token';
      const unusable = await this.#unusableCredentials(row, settings, action);
      if (unusable) throw unusable;
      const provider = new StoredProvider(this, row, settings, { kind: 'background' });
      const { fetch, refused } = this.#watchedFetch(AbortSignal.timeout(RENEWAL_MS));
      try {
        await auth(provider, {
          serverUrl: row.url,
          fetchFn: fetch,
          resourceMetadataUrl: challenge.resourceMetadataUrl,
          scope: scopeToAsk(settings, challenge.scope),
        });
      } catch (error) {
        const failure = oauthFailure(error, { refused, refreshRejected: provider.refreshRejected, refreshFailed: provider.holdsRefreshToken });
        // A step-up refused leaves the held token (and the status) as they were: it serves the calls that need no more.
        const stepUpFailure = () => new UpstreamAuthorizationFailed(`the step-up to scope "${challenge.scope}" failed: ${failure.message}`, null);
        throw await this.#failed(row, action, challenge.stepUp ? stepUpFailure() : failure);
      }
      const held = this.#held.get(keyOf(row));
      if (!held) throw new UpstreamAuthorizationFailed('the authorization server answered no token', 'authorization_required');
      this.#note(row, action, 'ok');
      return held;
    } finally {
      await release?.();
    }
  }

  /**
   * Waits for the upstream's renewal lease and takes it: one renewal at a time per upstream across
   * replicas sharing the store, without holding a connection while the authorization server
   * answers (the lease is a row). Answers its release; undefined when the store could not take it
   * or it stayed taken past a lease's life (others keep retaking it): the renewal goes on without,
   * as if alone, and a refresh token another replica spent meanwhile is mended by the SDK's retry
   * (StoredProvider.invalidateCredentials re-reads what it stored).
   */
  async #lease(row: UpstreamRow): Promise<(() => Promise<void>) | undefined> {
    const { db, logger } = this.#deps;
    const holder = randomBytes(16).toString('hex');
    const giveUp = Date.now() + LEASE_WAIT_MS;
    const where = { tenant: row.tenant, catalog: row.catalog, upstream: row.name };
    try {
      while (!(await store.takeRenewalLease(db, row.catalogId, row.name, holder, RENEWAL_LEASE_MS))) {
        if (Date.now() >= giveUp) {
          logger.warn(where, 'OAuth renewal goes on without its lease: another replica kept it past its life');
          return undefined;
        }
        await sleep(LEASE_POLL_MS);
      }
    } catch (error) {
      logger.warn({ ...where, err: error }, 'OAuth renewal goes on without its lease: the store did not take it');
      return undefined;
    }
    // A release that fails leaves the lease to expire.
    return () => store.releaseRenewalLease(db, row.catalogId, row.name, holder).catch(() => {});
  }

  /** Tokens stored since the ones a renewal replaces (another replica renewed), not yet due: held and used as they are. */
  #landed(row: UpstreamRow, settings: store.OAuthRow, replaces: number | undefined): HeldToken | undefined {
    if (settings.tokenVersion === replaces) return undefined;
    const held = this.#heldOf(row, settings);
    if (!held || renewDue(held)) return undefined;
    this.#held.set(keyOf(row), held);
    return held;
  }

  // --- the step-up (SEP-2350) ---

  /**
   * `fetch` with the step-up. The SDK's transport steps up only for a full OAuthClientProvider;
   * the minimal AuthProvider it is given here has no hook for a 403, so the 403 is answered below
   * the transport: a token for the wider scope when one may be had (#stepUp), then the same request
   * once more. A second 403 insufficient_scope ends the request, recorded: one step-up per request,
   * so an upstream cannot keep toolsift asking.
   */
  #steppingUp(row: UpstreamRow): FetchLike {
    const fetch = this.#deps.fetch;
    return async (url, init) => {
      const response = await fetch(url, init);
      const challenge = insufficientScope(response);
      if (!challenge) return response;
      await response.body?.cancel().catch(() => {});
      const headers = new Headers(init?.headers);
      const token = await this.#stepUp(row, challenge.scope, headers.get('authorization'));
      headers.set('authorization', `Bearer ${token}`);
      const retried = await fetch(url, { ...init, headers });
      if (!insufficientScope(retried)) return retried;
      await retried.body?.cancel().catch(() => {});
      const message = 'the upstream answered 403 insufficient_scope again after the step-up: the request was not retried again';
      throw await this.#failed(row, 'step_up', new UpstreamAuthorizationFailed(message, null));
    };
  }

  /**
   * The token to retry a request with after a 403 insufficient_scope naming `challenged` (what
   * `sent` carried was refused): see planStepUp for what is asked. The authorization code grant
   * cannot widen itself: an operator authorizes again, and the next start asks for the union.
   * Every refusal is recorded and thrown as UpstreamAuthorizationFailed.
   */
  async #stepUp(row: UpstreamRow, challenged: string | undefined, sent: string | null): Promise<string> {
    // A renewal under way (another call's step-up, say) lands first: its token may be the one wanted.
    await this.#renewing.get(keyOf(row))?.catch(() => {});
    const settings = await this.#settings(row);
    const plan = planStepUp(settings.scope, this.#grantedScope(row, settings), challenged);
    if ('refused' in plan) {
      const cached = this.#held.get(keyOf(row));
      const held = cached?.url === row.url ? cached : await this.#read(row);
      // Another call's step-up landed meanwhile: the token it got holds the scope.
      if (plan.held && held && sent !== `Bearer ${held.access}`) return held.access;
      throw await this.#failed(row, 'step_up', new UpstreamAuthorizationFailed(plan.refused, null));
    }
    if (settings.grantType === 'authorization_code') {
      await store.saveStepUpScope(this.#deps.db, row.catalogId, row.name, plan.ask);
      throw await this.#failed(row, 'step_up', new UpstreamAuthorizationFailed(scopeNotGranted(plan.missing), 'authorization_required'));
    }
    const renewed = await this.#renew(row, { scope: plan.ask, stepUp: true });
    // Kept once granted, so renewals ask it too; one the authorization server refused would fail them all.
    await store.saveStepUpScope(this.#deps.db, row.catalogId, row.name, plan.ask);
    return renewed.access;
  }

  /** The held token's scope: as the authorization server answered it, else as asked (RFC 6749 §5.1 omits it then). */
  #grantedScope(row: UpstreamRow, settings: store.OAuthRow): string | undefined {
    const tokens = openState<StoredOAuthTokens>(this.#deps.secrets, settings, bindingOf(row), 'tokens');
    if (!tokens) return undefined;
    return tokens.scope ?? scopeToAsk(settings) ?? advertisedScope(openState<OAuthDiscoveryState>(this.#deps.secrets, settings, bindingOf(row), 'discovery'));
  }

  /**
   * Asked before anything is sent to an authorization server: whether the configured client
   * credentials open for this row (sealed for its issuer and upstream). One that does not is
   * recorded where an operator looks, as a failure is (#failed), and answered for the caller to
   * throw (a renewal throws it as it is: the sync shows it as `credentials: ...`).
   */
  async #unusableCredentials(row: UpstreamRow, settings: store.OAuthRow, action: string): Promise<SecretOpenError | undefined> {
    try {
      openClientCredential(this.#deps.secrets, settings, bindingOf(row), 'client_secret');
      openClientCredential(this.#deps.secrets, settings, bindingOf(row), 'private_key');
      return undefined;
    } catch (error) {
      if (!(error instanceof SecretOpenError)) throw error;
      const message = `credentials: ${error.message}`;
      await store.recordOAuthFailure(this.#deps.db, row.catalogId, row.name, 'authorization_required', message);
      await recordUpstreamError(this.#deps.db, row.catalogId, row.name, message);
      this.#note(row, action, 'error', message);
      return error;
    }
  }

  /** Records a failure where an operator looks (OAuth state, sync state, audit, metrics); answers it, to throw. */
  async #failed(row: UpstreamRow, action: string, failure: UpstreamAuthorizationFailed): Promise<UpstreamAuthorizationFailed> {
    await store.recordOAuthFailure(this.#deps.db, row.catalogId, row.name, failure.status, failure.message);
    await recordUpstreamError(this.#deps.db, row.catalogId, row.name, `oauth: ${failure.message}`);
    this.#note(row, action, 'error', failure.message);
    return failure;
  }

  // --- for the provider ---

  async #settings(row: UpstreamRow): Promise<store.OAuthRow> {
    const settings = await this.#load(row);
    if (!settings) throw new AppError('validation_failed', `upstream "${row.name}" is not registered with auth.type "oauth"`);
    return settings;
  }

  /** The upstream's OAuth row, its state values vetted (#vet); undefined without one. */
  async #load(row: UpstreamRow): Promise<store.OAuthRow | undefined> {
    const stored = await store.getOAuth(this.#deps.db, row.catalogId, row.name);
    return stored && this.#vet(row, stored);
  }

  /**
   * The row without the state values (client information, tokens, discovery) that open but not for
   * it: sealed for another upstream or another URL than the upstream's (copied there, or the URL
   * changed in the database), or alone by an earlier release after the start bound the others.
   * Each is forgotten in the store too (if it still holds it), and said where an operator looks
   * (OAuth state, audit, metrics, log); nothing is ever sent with it: the next renewal gets new
   * tokens (or needs an operator), discovers again from the upstream's URL, registers again. One
   * that does not open at all (altered, its key missing) stays, to throw where it is used.
   */
  async #vet(row: UpstreamRow, settings: store.OAuthRow): Promise<store.OAuthRow> {
    let vetted = settings;
    for (const which of STATE_COLUMNS) {
      const sealed = settings[which];
      if (sealed === null) continue;
      let opened: ReturnType<typeof boundValue>;
      try {
        opened = boundValue(bindingOf(row), this.#deps.secrets.open(sealed));
      } catch (error) {
        if (error instanceof SecretOpenError) continue;
        throw error;
      }
      if ('value' in opened) continue;
      const message = `OAuth ${which} ${opened.elsewhere}: forgotten, nothing was sent with it`;
      await store.forgetState(this.#deps.db, row.catalogId, row.name, which, sealed);
      await store.recordOAuthFailure(this.#deps.db, row.catalogId, row.name, null, message);
      this.#deps.logger.warn({ tenant: row.tenant, catalog: row.catalog, upstream: row.name }, message);
      this.#note(row, 'state', 'error', message);
      vetted = { ...vetted, [which]: null, ...(which === 'tokens' ? { tokenVersion: vetted.tokenVersion + 1 } : {}) };
      if (which === 'tokens') this.#held.delete(keyOf(row));
    }
    return vetted;
  }

  async #upstreamRow(catalogId: number, name: string, tenant: string, catalog: string): Promise<UpstreamRow> {
    const row = await getUpstream(this.#deps.db, tenant, catalog, name);
    if (!row || row.catalogId !== catalogId) throw new AppError('not_found', `upstream "${name}" in catalog "${catalog}" not found`);
    return row;
  }

  /**
   * The guarded fetch, remembering what the address policy refused (the SDK swallows some discovery
   * failures); with `deadline`, every request ends when it fires.
   */
  #watchedFetch(deadline?: AbortSignal): { fetch: FetchLike; refused: UpstreamRefused[] } {
    const refused: UpstreamRefused[] = [];
    const fetch: FetchLike = async (url, init) => {
      const signal = deadline && init?.signal ? AbortSignal.any([deadline, init.signal]) : (deadline ?? init?.signal);
      try {
        return await this.#deps.fetch(url, signal ? { ...init, signal } : init);
      } catch (error) {
        const refusal = refusalIn(error);
        if (refusal) refused.push(refusal);
        throw error;
      }
    };
    return { fetch, refused };
  }

  #note(row: Pick<UpstreamRow, 'tenant' | 'catalog' | 'name'>, action: string, outcome: 'ok' | 'error', reason?: string): void {
    this.#deps.metrics?.upstreamOAuth.inc({ action, outcome });
    this.#deps.audit.record({ event: 'oauth', tenant: row.tenant, catalog: row.catalog, upstream: row.name, action, outcome, ...(reason ? { reason } : {}) });
  }

  /** @internal The provider's writes. */
  readonly store = {
    secrets: () => this.#deps.secrets,
    db: () => this.#deps.db,
    hold: (row: UpstreamRow, held: HeldToken | undefined) => (held ? this.#held.set(keyOf(row), held) : this.#held.delete(keyOf(row))),
    vet: (row: UpstreamRow, settings: store.OAuthRow) => this.#vet(row, settings),
    version: () => this.#deps.version,
    clientMetadata: () => this.#deps.clientMetadata,
  };
}

/**
 * The SDK's OAuthClientProvider over one upstream's stored row: what `auth()` reads and writes,
 * sealed at rest. `mode` says what this run may do: a background renewal never registers a client
 * for a browser flow nor starts one (it fails, recorded, for an operator to act on).
 */
class StoredProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  pendingExpiresAt: Date | undefined;
  /** The server refused the refresh token (invalid_grant): the tokens were forgotten. */
  refreshRejected = false;

  /** Tokens with a refresh token are still stored: a renewal that needs an operator means their refresh failed. */
  get holdsRefreshToken(): boolean {
    return this.tokens()?.refresh_token !== undefined;
  }
  /** private_key_jwt with a configured key (assertionSigner); undefined: the SDK sends the client secret, if any. */
  readonly addClientAuthentication: AddClientAuthentication | undefined;
  #tokenVersion: number;

  constructor(
    private readonly oauth: UpstreamOAuth,
    private readonly row: UpstreamRow,
    private settings: store.OAuthRow,
    private readonly mode: Mode,
  ) {
    this.#tokenVersion = settings.tokenVersion;
    this.addClientAuthentication = assertionSigner(settings, bindingOf(row), oauth.store.secrets());
  }

  get redirectUrl(): string | undefined {
    if (this.settings.grantType === 'client_credentials') return undefined;
    if (this.mode.kind !== 'background') return this.mode.redirectUri;
    // A refresh sends no redirect URI; the SDK needs one to know this is an interactive client.
    return this.#client()?.redirect_uris?.[0] ?? 'urn:toolsift:background';
  }

  get clientMetadata(): OAuthClientMetadata {
    const interactive = this.settings.grantType === 'authorization_code';
    return {
      client_name: 'toolsift',
      software_id: 'toolsift',
      software_version: this.oauth.store.version(),
      redirect_uris: interactive && this.mode.kind !== 'background' ? [this.mode.redirectUri] : [],
      grant_types: interactive ? ['authorization_code', 'refresh_token'] : ['client_credentials'],
      response_types: interactive ? ['code'] : [],
      token_endpoint_auth_method: 'client_secret_post',
      ...(this.settings.scope ? { scope: this.settings.scope } : {}),
    };
  }

  /**
   * The upstream's tenant's client ID metadata document URL, which the SDK presents as the client
   * id where the authorization server advertises `client_id_metadata_document_supported` (and
   * registers otherwise). Only for an operator's authorization code flow without a configured
   * client, and only while the documents name this flow's callback: a client_credentials client is
   * not the public browser client the document describes.
   */
  get clientMetadataUrl(): string | undefined {
    const settings = this.oauth.store.clientMetadata();
    if (!settings || this.settings.grantType !== 'authorization_code' || this.settings.clientId !== null || this.mode.kind === 'background') return undefined;
    return settings.redirectUri === this.mode.redirectUri ? tenantClientId(settings, this.row.tenant) : undefined;
  }

  state(): string {
    if (this.mode.kind !== 'start') throw new NeedsOperator();
    return this.mode.state;
  }

  #client(): (StoredOAuthClientInformation & { redirect_uris?: string[] }) | undefined {
    return openState(this.oauth.store.secrets(), this.settings, bindingOf(this.row), 'client');
  }

  /**
   * The client to present to the authorization server the SDK resolved (`ctx.issuer`). Asked before
   * anything is sent to one (a registration, a token request): with a configured issuer, another
   * server is refused here whatever led to it (stored discovery included). A configured client
   * carries the configured issuer as its stamp (SEP-2352); without one the SDK stamps the first.
   */
  clientInformation(ctx?: OAuthClientInformationContext): StoredOAuthClientInformation | undefined {
    const { issuer } = this.settings;
    if (issuer !== null && ctx && !sameIssuer(ctx.issuer, issuer))
      throw new UpstreamAuthorizationFailed(
        `the authorization server in use is ${shownUrl(ctx.issuer)}, not the configured issuer ${issuer}`,
        'authorization_required',
      );
    const stored = this.#client();
    const configured = this.settings.clientId;
    if (configured !== null) {
      if (stored?.client_id === configured) return stored;
      const secret = openClientCredential(this.oauth.store.secrets(), this.settings, bindingOf(this.row), 'client_secret');
      return { client_id: configured, ...(secret === undefined ? {} : { client_secret: secret }), ...(issuer === null ? {} : { issuer }) };
    }
    const usable =
      stored && (this.mode.kind === 'background' || this.settings.grantType !== 'authorization_code' || this.#servesCallback(stored, this.mode.redirectUri));
    if (usable) return stored;
    // Registering an interactive client needs the callback URL, which only an operator's start gives.
    if (this.mode.kind === 'background' && this.settings.grantType === 'authorization_code') throw new NeedsOperator();
    return undefined;
  }

  /**
   * Whether a stored client can take the browser back to `redirectUri`: one registered with it, or
   * the document's URL while toolsift serves the document naming it. A URL client id of an earlier
   * setting is not (the server would read a document that no longer names it): the SDK resolves
   * the client anew.
   */
  #servesCallback(client: StoredOAuthClientInformation & { redirect_uris?: string[] }, redirectUri: string): boolean {
    return client.redirect_uris?.includes(redirectUri) === true || client.client_id === this.clientMetadataUrl;
  }

  async saveClientInformation(client: StoredOAuthClientInformation): Promise<void> {
    const sealed = sealState(this.oauth.store.secrets(), this.row, client);
    await store.saveClient(this.oauth.store.db(), this.row.catalogId, this.row.name, sealed);
    this.settings = { ...this.settings, client: sealed };
  }

  tokens(): StoredOAuthTokens | undefined {
    return openState(this.oauth.store.secrets(), this.settings, bindingOf(this.row), 'tokens');
  }

  async saveTokens(tokens: StoredOAuthTokens): Promise<void> {
    const issuedAt = new Date();
    // Kept from the last tokens when a refresh answer omits it (RFC 6749 §6 allows that).
    const previous = this.tokens();
    const kept = { ...tokens, ...(tokens.refresh_token === undefined && previous?.refresh_token ? { refresh_token: previous.refresh_token } : {}) };
    const expiresAt = typeof tokens.expires_in === 'number' ? new Date(issuedAt.getTime() + tokens.expires_in * 1000) : null;
    const sealed = sealState(this.oauth.store.secrets(), this.row, kept);
    this.#tokenVersion = await store.saveTokens(this.oauth.store.db(), this.row.catalogId, this.row.name, { sealed, issuedAt, expiresAt });
    this.settings = { ...this.settings, tokens: sealed, tokenVersion: this.#tokenVersion };
    this.oauth.store.hold(this.row, {
      access: tokens.access_token,
      url: this.row.url,
      issuedAt: issuedAt.getTime(),
      expiresAt: expiresAt?.getTime() ?? null,
      version: this.#tokenVersion,
    });
    // A refresh keeps the grant's scope: what a step-up asked for and the grant still lacks keeps needing an operator.
    const lacking = this.settings.grantType === 'authorization_code' && this.settings.stepUpScope !== null && tokens.scope !== undefined;
    const missing = lacking ? missingFrom(this.settings.stepUpScope!, tokens.scope!) : undefined;
    if (missing) await store.recordOAuthFailure(this.oauth.store.db(), this.row.catalogId, this.row.name, 'authorization_required', scopeNotGranted(missing));
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    if (this.mode.kind !== 'start') throw new NeedsOperator();
    this.authorizationUrl = authorizationUrl;
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    if (this.mode.kind !== 'start') throw new NeedsOperator();
    this.pendingExpiresAt = new Date(Date.now() + PENDING_MS);
    await store.putPending(
      this.oauth.store.db(),
      digest(this.mode.state),
      {
        catalogId: this.row.catalogId,
        upstream: this.row.name,
        codeVerifier: this.oauth.store.secrets().seal(codeVerifier),
        redirectUri: this.mode.redirectUri,
      },
      this.pendingExpiresAt,
    );
  }

  codeVerifier(): string {
    if (this.mode.kind !== 'callback') throw new NeedsOperator();
    return this.mode.codeVerifier;
  }

  prepareTokenRequest(scope?: string): URLSearchParams | undefined {
    if (this.settings.grantType !== 'client_credentials') return undefined;
    return new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const db = this.oauth.store.db();
    if (scope === 'all' || scope === 'tokens') {
      await store.forgetTokens(db, this.row.catalogId, this.row.name, this.#tokenVersion);
      // Another replica may have renewed meanwhile (a renewal that went on without its lease: a
      // rotating refresh token is then spent here): its tokens stay, and the SDK's retry refreshes with them.
      const read = await store.getOAuth(db, this.row.catalogId, this.row.name);
      const now = read && (await this.oauth.store.vet(this.row, read));
      if (scope === 'tokens' && now?.tokens) {
        this.settings = { ...this.settings, tokens: now.tokens, tokenVersion: now.tokenVersion };
        this.#tokenVersion = now.tokenVersion;
      } else {
        if (this.settings.tokens) this.refreshRejected = this.settings.grantType === 'authorization_code';
        this.settings = { ...this.settings, tokens: null };
        this.oauth.store.hold(this.row, undefined);
      }
    }
    // A configured client stays (the operator gave it); a registered one is registered again.
    if ((scope === 'all' || scope === 'client') && this.settings.clientId === null) {
      await store.saveClient(db, this.row.catalogId, this.row.name, null);
      this.settings = { ...this.settings, client: null };
    }
    if (scope === 'all' || scope === 'discovery') {
      await store.saveDiscovery(db, this.row.catalogId, this.row.name, null);
      this.settings = { ...this.settings, discovery: null };
    }
  }

  /**
   * The discovery stored; none yet with a configured issuer, that issuer: the SDK then reads its
   * metadata and the upstream's protected-resource metadata, and never asks a server the upstream
   * names. Given with a trailing slash, so the SDK's RFC 8414 check takes the metadata's `issuer`
   * spelled with or without one (as sameIssuer does).
   */
  discoveryState(): OAuthDiscoveryState | undefined {
    const stored = openState<OAuthDiscoveryState>(this.oauth.store.secrets(), this.settings, bindingOf(this.row), 'discovery');
    if (stored) return stored;
    const { issuer } = this.settings;
    return issuer === null ? undefined : { authorizationServerUrl: issuer.endsWith('/') ? issuer : `${issuer}/` };
  }

  /** Stores what the SDK discovered; with a configured issuer, refuses metadata naming other servers (before anything is sent). */
  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    const refusal = this.settings.issuer === null ? undefined : issuerNotNamed(state, this.settings.issuer);
    if (refusal) throw new UpstreamAuthorizationFailed(refusal, 'authorization_required');
    const sealed = sealState(this.oauth.store.secrets(), this.row, state);
    await store.saveDiscovery(this.oauth.store.db(), this.row.catalogId, this.row.name, sealed);
    this.settings = { ...this.settings, discovery: sealed };
  }
}

function renewDue(held: HeldToken, now = Date.now()): boolean {
  if (held.expiresAt === null) return false;
  const ahead = Math.min(RENEW_AHEAD_MAX_MS, (held.expiresAt - held.issuedAt) * RENEW_SHARE);
  return now >= held.expiresAt - ahead;
}

const expired = (held: HeldToken, now = Date.now()) => held.expiresAt !== null && now >= held.expiresAt;

/**
 * The SDK's private_key_jwt signer over a configured key (undefined without one). Its assertion:
 * iss and sub the client id, aud the authorization server's issuer, five minutes of life, a fresh
 * jti. The key is opened only to sign. client_id goes in the body too: RFC 7521 §4.2 makes it
 * optional, and some authorization servers (Entra ID) require it.
 */
function assertionSigner(settings: store.OAuthRow, upstream: UpstreamBinding, secrets: SecretBox): AddClientAuthentication | undefined {
  const { clientId, privateKey, privateKeyAlg } = settings;
  if (clientId === null || privateKey === null || privateKeyAlg === null) return undefined;
  return async (headers, params, url, metadata) => {
    params.set('client_id', clientId);
    const key = openClientCredential(secrets, settings, upstream, 'private_key')!;
    const sign = createPrivateKeyJwtAuth({ issuer: clientId, subject: clientId, privateKey: key, alg: privateKeyAlg });
    await sign(headers, params, url, metadata);
  };
}

type ClientCredential = 'client_secret' | 'private_key';

/** The OAuth state a row keeps, each sealed with the row and the upstream's URL (oauthStatePlaintext). */
type StateColumn = 'client' | 'tokens' | 'discovery';
const STATE_COLUMNS: readonly StateColumn[] = ['client', 'tokens', 'discovery'];

/**
 * A state value opened for its upstream (`binding`: the row and URL it is read with); undefined
 * when the row holds none. Throws SecretOpenError when it does not open, or not for this upstream
 * (#vet forgets those first).
 */
function openState<T>(secrets: SecretBox, settings: store.OAuthRow, binding: UpstreamBinding, which: StateColumn): T | undefined {
  const sealed = settings[which];
  if (sealed === null) return undefined;
  const opened = boundValue(binding, secrets.open(sealed));
  if ('elsewhere' in opened) throw new SecretOpenError('not_authentic', `OAuth ${which} ${opened.elsewhere}: nothing was sent`);
  return JSON.parse(opened.value) as T;
}

/** A state value sealed with the upstream's tenant, catalog, name and URL. */
function sealState(secrets: SecretBox, row: UpstreamRow, value: unknown): string {
  return secrets.seal(boundPlaintext(bindingOf(row), JSON.stringify(value)));
}

/**
 * A configured client credential, opened for the upstream that holds it (`binding`: its row and
 * URL as read now); undefined when it has none. Throws SecretOpenError (naming the field, never a
 * value) when it does not open, or was sealed for another issuer than the row's (changed or cleared
 * since: the row was altered), another upstream, tenant or URL.
 */
function openClientCredential(secrets: SecretBox, settings: store.OAuthRow, binding: UpstreamBinding, which: ClientCredential): string | undefined {
  const sealed = which === 'client_secret' ? settings.clientSecret : settings.privateKey;
  if (sealed === null) return undefined;
  const bound = readOAuthCredential(secrets.open(sealed));
  const elsewhere =
    bound && bound.tenant !== null && bound.url !== null ? boundElsewhere({ ...bound, tenant: bound.tenant, url: bound.url }, binding) : undefined;
  const sealedFor = !bound
    ? 'was sealed without the issuer it is for'
    : bound.catalogId !== binding.catalogId || bound.upstream !== binding.upstream
      ? 'was sealed for another upstream'
      : bound.tenant === null || bound.url === null
        ? 'was sealed without the tenant and URL it is for'
        : elsewhere
          ? `was ${elsewhere}`
          : bound.issuer !== settings.issuer
            ? `was sealed for another issuer than the upstream's auth.issuer${settings.issuer === null ? ' (cleared since)' : bound.issuer === null ? ' (none configured when sealed)' : ''}`
            : undefined;
  if (sealedFor) throw new SecretOpenError('not_authentic', `auth.${which} ${sealedFor}: nothing was sent; register the upstream's auth again`);
  return bound!.value;
}

/** Two issuer identifiers naming one authorization server, as the SDK compares them (SEP-2352): one trailing slash aside. */
function sameIssuer(a: string, b: string): boolean {
  return a === b || (a.endsWith('/') && a.slice(0, -1) === b) || (b.endsWith('/') && b.slice(0, -1) === a);
}

/** A URL an upstream or authorization server gave, as a message may show it: parsed, and short. */
const shownUrl = (value: string) => (URL.canParse(value) ? new URL(value).href.slice(0, 200) : '(not a URL)');

/**
 * Why discovery rules out the configured issuer: the upstream's protected-resource metadata names
 * authorization servers, not that one. Undefined when it names it (among others too: toolsift uses
 * the one configured) or names none (the configured one is used).
 */
function issuerNotNamed(state: OAuthDiscoveryState, issuer: string): string | undefined {
  const named = state.resourceMetadata?.authorization_servers ?? [];
  if (named.length === 0 || named.some((server) => sameIssuer(server, issuer))) return undefined;
  return `the upstream's metadata names authorization server ${named.slice(0, 3).map(shownUrl).join(', ')}, not the configured issuer ${issuer}`;
}

/**
 * The scope a token request or an authorization asks for. A configured scope is asked as it is:
 * it is the ceiling, and nothing an upstream says (its 401, its metadata, a 403) widens it.
 * Without one the upstream's word is taken (the scope its 401 names; undefined leaves the SDK to
 * ask what the metadata advertises), with what a step-up added.
 */
function scopeToAsk(settings: store.OAuthRow, named?: string): string | undefined {
  if (settings.scope !== null) return settings.scope;
  return computeScopeUnion(named, settings.stepUpScope ?? undefined);
}

/** What the protected-resource metadata advertises: what the SDK asks when nothing names a scope. */
function advertisedScope(discovery: OAuthDiscoveryState | undefined): string | undefined {
  const supported = discovery?.resourceMetadata?.scopes_supported;
  return computeScopeUnion(...(supported ?? []));
}

/** The tokens of `scope` that `held` lacks, space-separated; undefined when it holds them all. */
function missingFrom(scope: string, held: string): string | undefined {
  const holds = new Set(held.split(' '));
  return computeScopeUnion(...scope.split(' ').filter((token) => !holds.has(token)));
}

const scopeNotGranted = (missing: string) =>
  `the upstream asked for scope "${missing}", which the authorization does not grant: ${AUTHORIZE_AGAIN} (the next start asks for it)`;

/** A 403 whose challenge is `insufficient_scope` (RFC 6750 §3.1), with the scope it names (unchecked). */
function insufficientScope(response: Response): { scope?: string } | undefined {
  if (response.status !== 403) return undefined;
  const { error, scope } = extractWWWAuthenticateParams(response);
  return error === 'insufficient_scope' ? { scope } : undefined;
}

/**
 * What a 403 insufficient_scope naming `challenged` asks of toolsift, given the configured scope
 * (null: none) and the held token's scope: the union of the three to ask for (SEP-2350), or a
 * refusal in the gateway's words. A configured scope is the ceiling (least privilege: an upstream
 * does not choose what toolsift's client may hold): a challenge beyond it is refused, and within it
 * the union is the ceiling itself. A token that already holds the named scope is not replaced
 * (`held`: the upstream contradicts itself, and asking again would not help). The scope is checked
 * as a registration's is before it reaches a token request or a message.
 */
export function planStepUp(
  configured: string | null,
  granted: string | undefined,
  challenged: string | undefined,
): { ask: string; missing: string } | { refused: string; held?: true } {
  const named = computeScopeUnion(challenged);
  if (named === undefined || !oauthScope.safeParse(named).success)
    return { refused: 'the upstream answered 403 insufficient_scope without naming a valid scope' };
  const beyond = configured === null ? undefined : missingFrom(named, configured);
  if (beyond)
    return { refused: `the upstream asked for scope "${beyond}" beyond the configured scope "${configured}": not requested (widen auth.scope to allow it)` };
  const missing = granted === undefined ? named : missingFrom(named, granted);
  if (!missing) return { refused: `the upstream answered 403 insufficient_scope for scope "${named}", which its token holds: not requested again`, held: true };
  const ask = configured ?? computeScopeUnion(granted, named)!;
  if (!oauthScope.safeParse(ask).success)
    return { refused: `the upstream asked for scope "${missing}": with the token's scope it passes 1024 characters, not requested` };
  return { ask, missing };
}

/**
 * An unauthenticated request to the server, for its 401's challenge: where its protected-resource
 * metadata is and what scope it asks for (the spec's first step of discovery).
 */
async function probeChallenge(url: string, fetch: FetchLike): Promise<{ resourceMetadataUrl?: URL; scope?: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'toolsift', version: '0' } },
    }),
  });
  await response.body?.cancel().catch(() => {});
  if (response.status !== 401) return {};
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
  return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
}

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(OAuthErrorCode));

/** An OAuth failure in the gateway's own words (an authorization server's description is never repeated). */
export function oauthFailure(
  error: unknown,
  { refused = [], refreshRejected = false, refreshFailed = false }: { refused?: UpstreamRefused[]; refreshRejected?: boolean; refreshFailed?: boolean } = {},
): UpstreamAuthorizationFailed {
  if (error instanceof UpstreamAuthorizationFailed) return error;
  const refusal = refused[0] ?? (error instanceof UpstreamRefused ? error : undefined);
  if (refusal?.tellable)
    return new UpstreamAuthorizationFailed(
      `an OAuth address is refused by policy (${refusal.reason}): the metadata points where upstreams may not go`,
      'authorization_required',
    );
  // A name refused where it resolves reads as one that does not resolve (guarded-fetch.ts).
  if (refusal) return new UpstreamAuthorizationFailed('OAuth discovery or token request failed', 'authorization_required');
  if (error instanceof NeedsOperator) {
    if (refreshRejected)
      return new UpstreamAuthorizationFailed(`the authorization server refused the refresh token (invalid_grant): ${AUTHORIZE_AGAIN}`, 'refresh_failed');
    // The SDK falls back to a new authorization when a refresh fails for another reason (the server unreachable, say): the tokens stay, the next renewal tries again.
    if (refreshFailed)
      return new UpstreamAuthorizationFailed(
        'the token refresh failed (the authorization server did not answer it); the next use tries again',
        'refresh_failed',
      );
    return new UpstreamAuthorizationFailed(`authorization required: ${AUTHORIZE_AGAIN}`, 'authorization_required');
  }
  if (error instanceof InsecureTokenEndpointError) return new UpstreamAuthorizationFailed('the token endpoint is not https', 'authorization_required');
  if (error instanceof IssuerMismatchError || error instanceof AuthorizationServerMismatchError)
    return new UpstreamAuthorizationFailed('the authorization server metadata does not match its issuer', 'authorization_required');
  if (error instanceof RegistrationRejectedError) return new UpstreamAuthorizationFailed('dynamic client registration was refused', 'authorization_required');
  if (error instanceof OAuthError) {
    const code = KNOWN_CODES.has(error.code) ? error.code : 'server_error';
    return new UpstreamAuthorizationFailed(`the authorization server refused (${code})`, refreshRejected ? 'refresh_failed' : 'authorization_required');
  }
  const described = describeUpstreamFailure(error);
  return new UpstreamAuthorizationFailed(
    `OAuth ${described === 'connection failed' ? 'discovery or token request failed' : `failed (${described})`}`,
    'authorization_required',
  );
}

/** The OAuth failure in an error's cause chain, if any. */
export function authorizationFailureIn(error: unknown): UpstreamAuthorizationFailed | undefined {
  let link: unknown = error;
  for (let depth = 0; depth < 8 && link; depth++) {
    if (link instanceof UpstreamAuthorizationFailed) return link;
    link = (link as { cause?: unknown }).cause;
  }
  return undefined;
}

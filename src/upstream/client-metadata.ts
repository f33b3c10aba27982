/**
 * toolsift's OAuth client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the
 * client registration the MCP authorization spec prefers): an authorization server that advertises
 * `client_id_metadata_document_supported` takes an https URL as the client_id and fetches the JSON
 * there to learn the client, so toolsift need not register itself with every server it meets.
 *
 * One document per tenant, under OAUTH_CLIENT_METADATA_URL: `<it>/<tenant digest>.json`. An
 * authorization server remembers a user's consent per client id, and may then approve without
 * asking; with one client id for the deployment, a user who approved toolsift for one tenant's
 * upstream would approve another tenant's silently (that tenant sends the user its authorization
 * URL, and its upstream gets the user's token). A client id of its own per tenant keeps each
 * tenant's consent its own, as dynamic registration's client per upstream did. Each document is a
 * public client (PKCE, no secret) of the authorization code grant whose browser comes back to
 * OAUTH_REDIRECT_URL; nothing in it is secret, and the digest names no tenant.
 */
import { createHash } from 'node:crypto';

/** OAUTH_CLIENT_METADATA_URL (where `/oauth/client-metadata` is reached) and the callback every document names. */
export interface ClientMetadataSettings {
  base: string;
  redirectUri: string;
}

export interface ClientMetadataDocument {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
}

/** A document's name under the base: 32 hex digits of a tenant's digest. */
const DOCUMENT = /^([0-9a-f]{32})\.json$/;

/** The client id toolsift presents for `tenant`'s upstreams: its document's URL, exactly (servers compare it as a string). */
export function tenantClientId(settings: ClientMetadataSettings, tenant: string): string {
  const digest = createHash('sha256').update(`toolsift client ${tenant}`).digest('hex').slice(0, 32);
  return `${settings.base}/${digest}.json`;
}

/** The document named `file` under the base (`<digest>.json`), or undefined for a name no client id can have. */
export function clientMetadataDocument(settings: ClientMetadataSettings, file: string): ClientMetadataDocument | undefined {
  const match = DOCUMENT.exec(file);
  if (!match) return undefined;
  return {
    client_id: `${settings.base}/${match[1]}.json`,
    client_name: 'toolsift',
    redirect_uris: [settings.redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/**
 * Why `value` cannot be OAUTH_CLIENT_METADATA_URL, or undefined when it can. The draft's rules for
 * the client ids made under it (https, a path, no credentials, no query or fragment), no trailing
 * slash (a document's name follows one), and written as a URL parser writes it: an authorization
 * server compares the client_id it is sent with the one in the document as strings, so a spelling
 * some server normalizes (an upper-case host, `:443`, a dot segment) would fail there, far from the
 * setting.
 */
export function clientMetadataUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return 'expected an https URL such as https://toolsift.example.com/oauth/client-metadata';
  const url = new URL(value);
  if (url.protocol !== 'https:') return 'must be an https URL: authorization servers fetch client metadata documents over https only';
  if (url.pathname === '/') return 'needs a path (toolsift serves the documents under /oauth/client-metadata)';
  if (url.username || url.password) return 'must not hold a user name or password';
  if (url.search || url.hash) return 'must have no query and no fragment';
  if (url.href !== value) return `write it as ${url.href}: the client_id is compared as a string`;
  if (value.endsWith('/')) return 'must not end with a slash: each tenant\'s document is "/<name>.json" under it';
  return undefined;
}

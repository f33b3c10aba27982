/**
 * What a registration of an upstream MCP server may say, for every surface that registers one (the
 * REST route `PUT /v1/catalogs/{catalog}/upstreams/{name}` and the MCP meta-tool
 * `register_upstream`): one set of rules, so an agent cannot reach past what an operator's API
 * call may do. The address policy, pinning and the scanner run in UpstreamService.register, after.
 */
import { assertSecureTokenEndpoint } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { AppError } from '../errors.js';
import { keyAlgorithms, SIGNING_ALGORITHMS, type SigningAlgorithm } from './client-key.js';
import type { UpstreamRegistration } from './upstreams.js';

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** `.` and `..` are path segments, not names: in a URL they would address another resource. */
const notDots = (name: string) => name !== '.' && name !== '..';

export const upstreamName = z
  .string()
  .regex(NAME, 'upstream names are 1-64 characters of A-Z a-z 0-9 . _ -')
  .refine(notDots, 'upstream names may not be . or ..');

/** An upstream's catalog and name, with the REST path's words for each. */
export const upstreamRef = z.object({
  catalog: z.string().regex(NAME, 'catalog names are 1-64 characters of A-Z, a-z, 0-9, ".", "_" and "-"').refine(notDots, 'catalog names may not be . or ..'),
  name: upstreamName,
});

/**
 * Headers the transport owns (framing, routing, the MCP session): set by a tenant they break or
 * redirect the connection (a `Content-Length: 0` held a registration for 30 s).
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'content-type',
  'accept',
  'proxy-authorization',
  'proxy-connection',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'cookie2',
]);

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]{1,128}$/, 'header names are letters, digits and -')
  .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'this header is set by the transport and may not be given');

/** A header value as HTTP allows it (no CR, LF or NUL); the message never repeats the value, a credential. */
const headerValue = z
  .string()
  .max(8_192, 'header values are at most 8,192 characters')
  .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'header values must be visible ASCII or Latin-1 without control characters (the value is not shown)');

/**
 * An OAuth scope as RFC 6749 §3.3 spells it (tokens of visible ASCII but `"` and `\`, one space
 * between), and short: what a registration configures, and what an upstream's scope challenge may
 * make toolsift ask for (oauth.ts).
 */
export const oauthScope = z
  .string()
  .min(1)
  .max(1_024)
  .regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'scope is space-separated scope tokens');

/**
 * An authorization server's issuer identifier (RFC 8414 §2): https without query or fragment, and
 * plain http only on a loopback host, as the SDK allows token endpoints (assertSecureTokenEndpoint).
 */
function isIssuer(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  if (url.search || url.hash || url.username || url.password || !/^https?:$/.test(url.protocol)) return false;
  try {
    assertSecureTokenEndpoint(url);
    return true;
  } catch {
    return false;
  }
}

/**
 * `auth: {type: "oauth"}`: toolsift gets its own tokens from the server's authorization server (the
 * MCP authorization spec). A client may be configured (an id, and a secret or a private key for a
 * confidential client); without one toolsift registers itself where the server offers dynamic
 * registration. `issuer` names the one authorization server toolsift's credentials go to.
 */
const oauthAuth = z
  .object({
    type: z.literal('oauth'),
    /** authorization_code (default): an operator authorizes in a browser (POST .../oauth/start); client_credentials: machine access. */
    grant: z.enum(['authorization_code', 'client_credentials']).default('authorization_code'),
    client_id: z
      .string()
      .min(1)
      .max(512)
      .regex(/^[\x21-\x7e]+$/, 'client_id is visible ASCII without spaces')
      .optional(),
    client_secret: z
      .string()
      .min(1)
      .max(4_096)
      .regex(/^[\x20-\x7e]+$/, 'client_secret must be visible ASCII (the value is not shown)')
      .optional(),
    /** A PEM PKCS#8 key (RSA, or EC on P-256/384/521) signing client assertions (private_key_jwt) in place of a secret; read by keyAlgorithms below. */
    private_key: z.string().min(1).max(16_384, 'private_key is at most 16,384 characters (the value is not shown)').optional(),
    /** The assertions' JWS algorithm; unset: RS256 for an RSA key, the curve's for an EC key. */
    algorithm: z.enum(SIGNING_ALGORITHMS).optional(),
    issuer: z
      .string()
      .max(2_048)
      .refine(isIssuer, "issuer is the authorization server's issuer URL: https:// (http:// only on a loopback host), without query or fragment")
      .optional(),
    scope: oauthScope.optional(),
  })
  .strict()
  .superRefine((value, context) => {
    const refuse = (field: string, message: string) => context.addIssue({ code: 'custom', path: [field], message });
    if (value.client_secret !== undefined && value.client_id === undefined) refuse('client_secret', 'client_secret needs client_id');
    if (value.algorithm !== undefined && value.private_key === undefined) refuse('algorithm', 'algorithm needs private_key');
    if (value.private_key === undefined) return;
    if (value.client_secret !== undefined) return refuse('private_key', 'give client_secret or private_key, not both');
    if (value.client_id === undefined) return refuse('private_key', 'private_key needs client_id');
    if (value.grant !== 'client_credentials')
      return refuse('private_key', 'private_key signs client_credentials token requests: give grant "client_credentials"');
    const key = keyAlgorithms(value.private_key);
    if ('invalid' in key) return refuse('private_key', `${key.invalid} (the value is not shown)`);
    if (value.algorithm !== undefined && !key.algorithms.includes(value.algorithm))
      refuse('algorithm', `algorithm ${value.algorithm} does not sign with ${key.kind}: it signs with ${key.algorithms.join(', ')}`);
  });

/** The algorithm a registration's key signs with: the one given, else the key's default. */
function signingAlgorithm(privateKey: string, given: SigningAlgorithm | undefined): SigningAlgorithm {
  if (given !== undefined) return given;
  const key = keyAlgorithms(privateKey);
  // oauthAuth refused a key that cannot sign; this only reads its default.
  if ('invalid' in key) throw new AppError('validation_failed', `auth.private_key: ${key.invalid}`);
  return key.algorithms[0]!;
}

/** The registration's body: the REST request body, and register_upstream's arguments besides catalog and name. */
export const upstreamRegistrationBody = z
  .object({
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//i.test(value), 'url must be http:// or https:// (stdio servers come from UPSTREAMS_FILE, never the API)'),
    headers: z.record(headerName, headerValue).optional(),
    refresh_seconds: z.number().int().min(10).max(86_400).default(300),
    trust: z.enum(['pin', 'auto']).default('pin'),
    /** How this upstream's results are read (RESULT_SCAN for it alone); absent or null: the service's. */
    result_scan: z.enum(['flag', 'block', 'off']).nullable().optional(),
    auth: oauthAuth.optional(),
  })
  .strict()
  .refine((body) => !body.auth || !Object.keys(body.headers ?? {}).some((name) => name.toLowerCase() === 'authorization'), {
    message: 'an Authorization header and auth.type "oauth" both set the bearer: give one',
    path: ['headers'],
  });

export type UpstreamRegistrationBody = z.infer<typeof upstreamRegistrationBody>;

/** The service's input from a parsed body. */
export function registrationOf(name: string, body: UpstreamRegistrationBody): UpstreamRegistration {
  const oauth = body.auth && {
    grant: body.auth.grant,
    ...(body.auth.client_id === undefined ? {} : { clientId: body.auth.client_id }),
    ...(body.auth.client_secret === undefined ? {} : { clientSecret: body.auth.client_secret }),
    ...(body.auth.private_key === undefined
      ? {}
      : { privateKey: body.auth.private_key, algorithm: signingAlgorithm(body.auth.private_key, body.auth.algorithm) }),
    ...(body.auth.issuer === undefined ? {} : { issuer: body.auth.issuer }),
    ...(body.auth.scope === undefined ? {} : { scope: body.auth.scope }),
  };
  return {
    name,
    url: body.url,
    headers: body.headers ?? {},
    refreshSeconds: body.refresh_seconds,
    trust: body.trust,
    resultScan: body.result_scan ?? null,
    oauth: oauth ?? null,
  };
}

/**
 * Parses with one of the schemas above; a failure is the 400 the REST API answers (`invalid <what>:
 * <field>: <why>`), for surfaces without its parser (MCP). Never repeats a value.
 */
export function parseRegistrationPart<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0]!;
  throw new AppError('validation_failed', `invalid ${what}: ${first.path.length ? first.path.join('.') : what}: ${first.message}`);
}

/** Who asked for a registration or removal, for the audit lines it causes: the key's id (never the key), and the surface when not REST. */
export interface UpstreamActor {
  key?: string;
  via?: string;
}

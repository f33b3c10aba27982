import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  customType,
  index,
  integer,
  json,
  pgTable,
  primaryKey,
  real,
  serial,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { vectorLiteral } from './vector-literal.js';

/**
 * A pgvector column without a fixed dimension: each embedding model has its own dimension, and the
 * HNSW index is a partial expression index per model (`embedding::vector(N) WHERE model = ...`).
 */
export const vector = customType<{ data: number[]; driverData: string }>({
  dataType: () => 'vector',
  toDriver: vectorLiteral,
  fromDriver: (value) => JSON.parse(value) as number[],
});

/** One row per distinct tool content, shared by every catalog, tenant and inline request. */
export const toolDocuments = pgTable(
  'tool_documents',
  {
    hash: text('hash').primaryKey(),
    name: text('name').notNull(),
    description: text('description').notNull(),
    /** `json`, not `jsonb`: keeps the author's key order (parameter order matters to models). */
    inputSchema: json('input_schema'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    server: text('server'),
    /** The definition as first seen; catalogs keep their own copy as sent. */
    definition: json('definition').notNull(),
    /** BM25 document length: the sum of `tool_terms.tf` for this hash. */
    docLength: integer('doc_length').notNull(),
    /**
     * The tokenizer/document recipe (search-text.ts TERMS_VERSION) the terms were computed with;
     * start-up recomputes older ones, so a release that changes tokenizing never mixes recipes.
     */
    termsVersion: integer('terms_version').notNull().default(1),
    /**
     * Estimated tokens (o200k) of the tool as Anthropic's and OpenAI's Responses requests carry it
     * (catalog/tokens.ts), counted when the document is stored; null only for documents stored by an
     * older release until start-up counts them.
     */
    tokensAnthropic: integer('tokens_anthropic'),
    tokensOpenai: integer('tokens_openai'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /**
     * When a request last used the document, or it was stored (kept fresh at most once an interval:
     * store/document-use.ts). Past DOCUMENT_RETENTION_HOURS, a document no catalog holds is removed
     * (store/document-gc.ts); a catalog's documents are kept by its rows, whatever this says.
     */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index('tool_documents_server_idx').on(table.server), index('tool_documents_last_used_idx').on(table.lastUsedAt)],
);

/**
 * Exact BM25 term frequencies per document (a tsvector would cap them at 255). `hash` is a
 * document's, without a foreign key: terms are written only after their document (tool-store.ts),
 * the sweep that removes documents removes their terms in the same statement (document-gc.ts), and
 * the key's per-row check cost ~40% of a push's largest statement (migrations/0011).
 */
export const toolTerms = pgTable(
  'tool_terms',
  {
    hash: text('hash').notNull(),
    term: text('term').notNull(),
    tf: integer('tf').notNull(),
  },
  // No key: a document's terms are written once, by the writer whose document insert won. A hash
  // index finds a document's rows, a btree on the term alone its postings (migrations/0013).
  (table) => [index('tool_terms_hash_idx').using('hash', table.hash), index('tool_terms_term_idx').on(table.term)],
);

/** One vector per (document, model); the HNSW indexes are partial, one per model. */
export const toolEmbeddings = pgTable(
  'tool_embeddings',
  {
    hash: text('hash')
      .notNull()
      .references(() => toolDocuments.hash, { onDelete: 'cascade' }),
    model: text('model').notNull(),
    dimension: integer('dimension').notNull(),
    embedding: vector('embedding').notNull(),
    /**
     * The embedding text recipe (search-text.ts EMBED_TEXT_VERSION) the vector was computed from:
     * an older one is re-embedded, and serves search until it is replaced.
     */
    textVersion: integer('text_version').notNull().default(1),
    /**
     * SHA-256 of the text the vector was computed from (null before it was recorded). When a new
     * recipe leaves a tool's text as it was, its vector is relabelled, not computed again.
     */
    textHash: text('text_hash'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.hash, table.model] })],
);

export const catalogs = pgTable(
  'catalogs',
  {
    id: serial('id').primaryKey(),
    tenant: text('tenant').notNull(),
    name: text('name').notNull(),
    /** Bumped on every change, so clients can tell whether their copy is current. */
    revision: bigint('revision', { mode: 'number' }).notNull().default(1),
    /** Tools in the catalog, kept by every write in its transaction (searches read it each time). */
    toolCount: integer('tool_count').notNull().default(0),
    /**
     * Estimated definition tokens of every tool of the catalog, per shape (the sums of the rows'
     * counts), kept by every write in its transaction: what sending the whole catalog would cost.
     */
    tokensAnthropic: bigint('tokens_anthropic', { mode: 'number' }).notNull().default(0),
    tokensOpenai: bigint('tokens_openai', { mode: 'number' }).notNull().default(0),
    tokensAsSent: bigint('tokens_as_sent', { mode: 'number' }).notNull().default(0),
    /** The bytes of every tool's definition as the catalog stores it (the rows' sum, kept like the tokens): what TENANT_MAX_BYTES counts. */
    definitionBytes: bigint('definition_bytes', { mode: 'number' }).notNull().default(0),
    /** Bumped by every PUT or DELETE of one of its upstreams: call_tool's cache of upstream rows keys on it. */
    upstreamRevision: bigint('upstream_revision', { mode: 'number' }).notNull().default(0),
    /** Whether run_code programs may call its tools (with CODE_MODE=on); PATCH /v1/catalogs/{catalog}. */
    codeMode: boolean('code_mode').notNull().default(true),
    /** How its tools' call results are read (off, flag, block); null: RESULT_SCAN's. PATCH /v1/catalogs/{catalog}. */
    resultScan: text('result_scan'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [uniqueIndex('catalogs_tenant_name_idx').on(table.tenant, table.name)],
);

export const catalogTools = pgTable(
  'catalog_tools',
  {
    catalogId: integer('catalog_id')
      .notNull()
      .references(() => catalogs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    hash: text('hash')
      .notNull()
      .references(() => toolDocuments.hash),
    /** The definition exactly as this catalog received it (detail=full returns it). */
    definition: json('definition').notNull(),
    /** Estimated tokens (o200k) of `definition` as sent; null only for rows of an older release until start-up counts them. */
    tokensAsSent: integer('tokens_as_sent'),
    /** UTF-8 bytes of `definition` as stored; null only for rows an older release wrote (sums read its length then). */
    definitionBytes: integer('definition_bytes'),
    /** Unused and no longer written (migration 0012); a release before it writes it. */
    position: integer('position'),
    /** The upstream MCP server that synced this row; null: pushed over REST. Calls go only to it. */
    upstream: text('upstream'),
  },
  (table) => [primaryKey({ columns: [table.catalogId, table.name] }), index('catalog_tools_hash_idx').on(table.hash)],
);

/**
 * The names each catalog revision changed (added, replaced or removed; null: every tool). A replica
 * holding an older revision's index derives the new one from them (search/catalog-index.ts);
 * writers keep the last CATALOG_CHANGES_KEPT revisions.
 */
export const catalogChanges = pgTable(
  'catalog_changes',
  {
    catalogId: integer('catalog_id')
      .notNull()
      .references(() => catalogs.id, { onDelete: 'cascade' }),
    revision: bigint('revision', { mode: 'number' }).notNull(),
    names: text('names').array(),
  },
  (table) => [primaryKey({ name: 'catalog_changes_pk', columns: [table.catalogId, table.revision] })],
);

/** Remote MCP servers synced into a catalog; `headers` values are credentials, sealed (store/stored-secrets.ts) and never returned. */
export const mcpUpstreams = pgTable(
  'mcp_upstreams',
  {
    catalogId: integer('catalog_id')
      .notNull()
      .references(() => catalogs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    url: text('url').notNull(),
    headers: json('headers').notNull().default(sql`'{}'::json`),
    refreshSeconds: integer('refresh_seconds').notNull().default(300),
    lastSyncAt: timestamp('last_sync_at', { withTimezone: true }),
    toolCount: integer('tool_count').notNull().default(0),
    lastAdded: integer('last_added'),
    lastChanged: integer('last_changed'),
    lastRemoved: integer('last_removed'),
    lastError: text('last_error'),
    /** One replica syncs an upstream at a time: it holds the lease until this time. */
    syncLeaseUntil: timestamp('sync_lease_until', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** `pin`: new and changed tools wait for approval; `auto`: the ones the scanner passes are approved. */
    trust: text('trust').notNull().default('pin'),
    /** When its tools were first pinned; null: the next sync pins what it lists, as a registration. */
    pinnedAt: timestamp('pinned_at', { withTimezone: true }),
    /** Tools the last sync left out because another source of the catalog holds their names. */
    conflicts: json('conflicts').notNull().default(sql`'[]'::json`),
    /** How its tools' results are read (`flag`, `block`, `off`); null: the service's RESULT_SCAN. */
    resultScan: text('result_scan'),
  },
  (table) => [primaryKey({ name: 'mcp_upstreams_pk', columns: [table.catalogId, table.name] })],
);

/**
 * Each upstream's tools as last listed, with what was approved and rejected (by pin hash: name,
 * title, description, input and output schema, annotations). A tool is served (in catalog_tools)
 * only while its current hash is its approved hash.
 */
export const upstreamTools = pgTable(
  'upstream_tools',
  {
    catalogId: integer('catalog_id').notNull(),
    upstream: text('upstream').notNull(),
    name: text('name').notNull(),
    currentHash: text('current_hash').notNull(),
    currentDefinition: json('current_definition').notNull(),
    /** The scanner's findings on the current definition. */
    findings: json('findings').notNull().default(sql`'[]'::json`),
    approvedHash: text('approved_hash'),
    approvedDefinition: json('approved_definition'),
    rejectedHash: text('rejected_hash'),
    changedAt: timestamp('changed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ name: 'upstream_tools_pk', columns: [table.catalogId, table.upstream, table.name] })],
);

/**
 * An upstream's OAuth settings and state (migration 0018): the client toolsift is to its
 * authorization server, the discovered metadata, the tokens. `clientSecret`, `privateKey`, `client`
 * and `tokens` hold SecretBox output (lib/secret-box.ts), never plaintext.
 */
export const upstreamOauth = pgTable(
  'upstream_oauth',
  {
    catalogId: integer('catalog_id').notNull(),
    upstream: text('upstream').notNull(),
    /** authorization_code (an operator authorizes in a browser) or client_credentials (machine access). */
    grantType: text('grant_type').notNull(),
    scope: text('scope'),
    /** A configured client (null: dynamic client registration). */
    clientId: text('client_id'),
    clientSecret: text('client_secret'),
    /** A configured client's key signing its assertions (private_key_jwt, migration 0022), sealed; and its JWS algorithm. */
    privateKey: text('private_key'),
    privateKeyAlg: text('private_key_alg'),
    /** The authorization server the operator named (migration 0022): the only one credentials go to. */
    issuer: text('issuer'),
    /** The client information in use (configured or registered), sealed JSON. */
    client: text('client'),
    /** Unused since migration 0027 (cleared there): an earlier release's plaintext discovery. */
    discovery: json('discovery'),
    /** Protected-resource and authorization-server metadata as discovered, sealed with the catalog, upstream and URL (migration 0027). */
    discoverySealed: text('discovery_sealed'),
    tokens: text('tokens'),
    /** Bumped at every token write: a refresh rejected by the server forgets only the tokens it tried. */
    tokenVersion: integer('token_version').notNull().default(0),
    issuedAt: timestamp('issued_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    /** authorized, authorization_required, refresh_failed. */
    status: text('status').notNull().default('authorization_required'),
    lastError: text('last_error'),
    authorizedAt: timestamp('authorized_at', { withTimezone: true }),
    /** What toolsift asks for since an upstream's insufficient_scope challenge widened it (migration 0021); null: no step-up. */
    stepUpScope: text('step_up_scope'),
    /** The renewal under way (migration 0024): one replica at a time renews an upstream's tokens; the lease expires should it die. */
    renewalHolder: text('renewal_holder'),
    renewalLeaseUntil: timestamp('renewal_lease_until', { withTimezone: true }),
  },
  (table) => [primaryKey({ name: 'upstream_oauth_pk', columns: [table.catalogId, table.upstream] })],
);

/** Authorization code flows started and not yet finished: keyed by a digest of their state, single use, expiring. */
export const upstreamOauthPending = pgTable(
  'upstream_oauth_pending',
  {
    stateHash: text('state_hash').primaryKey(),
    catalogId: integer('catalog_id').notNull(),
    upstream: text('upstream').notNull(),
    /** The PKCE verifier, sealed. */
    codeVerifier: text('code_verifier').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (table) => [index('upstream_oauth_pending_upstream_idx').on(table.catalogId, table.upstream)],
);

/**
 * What agents used after a search (migration 0016): one (query, tool) event per row, per catalog.
 * `toolHash` is the definition judged (the learned list counts an event only while the catalog
 * holds that definition); `caller` a digest of the API key (never the key).
 */
export const feedbackEvents = pgTable(
  'feedback_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    catalogId: integer('catalog_id')
      .notNull()
      .references(() => catalogs.id, { onDelete: 'cascade' }),
    query: text('query').notNull(),
    toolName: text('tool_name').notNull(),
    toolHash: text('tool_hash').notNull(),
    caller: text('caller').notNull(),
    strength: real('strength').notNull(),
    queryModel: text('query_model'),
    queryVector: real('query_vector').array(),
    /** The tools shown with it and not used (migration 0020): not its twins for queries like this one. */
    passedOver: text('passed_over').array(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    index('feedback_events_catalog_idx').on(table.catalogId, table.id),
    index('feedback_events_created_idx').on(table.createdAt),
    // A caller's events of a tool, newest last: a write trims the older ones (migration 0025).
    index('feedback_events_window_idx').on(table.catalogId, table.toolName, table.caller, table.id),
  ],
);

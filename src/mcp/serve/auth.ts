/**
 * Authentication of the HTTP gateway: who a session acts for comes from its credentials.
 *
 * - **Bearer tokens** (`--auth tokens FILE`): a file of SHA-256 digests of tokens, each mapped to a
 *   principal, a tenant and roles. The tokens themselves are never stored.
 * - **OAuth 2.1 resource server** (`--auth oauth`), per the MCP authorization spec: an access token
 *   is a JWT signed by the issuer (verified against the issuer's JWKS, fetched once and cached by
 *   `jose`), for this gateway (`aud` = its resource URL), unexpired. The gateway publishes its
 *   protected-resource metadata (RFC 9728) and answers `401` with `WWW-Authenticate`.
 */
import { isPrincipalKind, PRINCIPAL_KINDS, ToolEnvelopeError, isJsonObject, type JsonObject, type Principal } from 'tool-envelope/core';
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Identity } from '../../governance/identity.js';
import { parseYamlWithin } from '../../governance/yaml-depth.js';
import { readBoundedText } from '../../store/bounded-read.js';

/** The largest tokens file read, in bytes (as a policy file): tens of thousands of entries. */
export const TOKENS_FILE_MAX_BYTES = 4 * 1024 * 1024;

/** The keys of a tokens file's entry. */
const TOKEN_KEYS = ['sha256', 'principal', 'tenant', 'roles', 'claims'] as const;

/** A tokens file's authenticator, with the roles its entries give (each once, in file order). */
export interface TokenAuthenticator extends Authenticator {
  readonly kind: 'tokens';
  readonly roles: readonly string[];
}

/** Why a request was not authenticated (an OAuth `error` code and a description for the client). */
export interface AuthFailure {
  error: 'invalid_request' | 'invalid_token';
  description: string;
}

/** Verifies the credentials of HTTP requests. */
export interface Authenticator {
  readonly kind: 'tokens' | 'oauth';
  /** The identity an `Authorization` header proves, or why not. Never throws for bad credentials. */
  authenticate(authorization: string | undefined): Promise<Identity | AuthFailure>;
  /** The `WWW-Authenticate` value of a `401`; `resourceMetadata` is the metadata URL when published. */
  challenge(failure: AuthFailure | undefined, resourceMetadata?: string): string;
  /** RFC 9728 protected-resource metadata for the resource URL, when the scheme has one. */
  resourceMetadata?(resource: string): JsonObject;
}

/** True when `v` is an {@link AuthFailure}. */
export function isAuthFailure(v: Identity | AuthFailure): v is AuthFailure {
  return (v as AuthFailure).error !== undefined;
}

function bearer(authorization: string | undefined): string | AuthFailure {
  if (!authorization) return { error: 'invalid_request', description: 'No bearer token: send Authorization: Bearer <token>.' };
  const m = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization.trim());
  if (!m) return { error: 'invalid_request', description: 'The Authorization header is not a bearer token.' };
  return m[1]!;
}

const quote = (s: string): string => s.replace(/["\\]/g, '');

function challengeOf(realm: string, failure: AuthFailure | undefined, resourceMetadata?: string): string {
  const parts = [`realm="${realm}"`];
  if (resourceMetadata) parts.push(`resource_metadata="${quote(resourceMetadata)}"`);
  // RFC 6750: a request without credentials gets no error code.
  if (failure && failure.description !== NO_TOKEN) parts.push(`error="${failure.error}"`, `error_description="${quote(failure.description)}"`);
  return `Bearer ${parts.join(', ')}`;
}
const NO_TOKEN = 'No bearer token: send Authorization: Bearer <token>.';

function principalOf(text: unknown, where: string): Principal {
  if (typeof text !== 'string') throw new ToolEnvelopeError('invalid-option', `${where}: principal must be KIND:ID`);
  const colon = text.indexOf(':');
  const kind = text.slice(0, colon);
  if (colon <= 0 || colon === text.length - 1 || !isPrincipalKind(kind)) {
    throw new ToolEnvelopeError(
      'invalid-option',
      `${where}: principal must be KIND:ID with KIND one of ${PRINCIPAL_KINDS.join(', ')}; got ${JSON.stringify(text)}`,
    );
  }
  return { kind: kind as Principal['kind'], id: text.slice(colon + 1) };
}

/** The SHA-256 digest (hex) a tokens file stores for a token. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * An authenticator over a parsed tokens document:
 * `{ tokens: [{ sha256, principal: 'user:alice', tenant?: 'acme', roles?: ['approver'], claims?: { dept: 'research' } }] }`
 * (`claims`: what policy conditions see as `identity.claims`).
 */
export function tokenAuthenticator(doc: unknown, source = 'tokens file'): TokenAuthenticator {
  if (!isJsonObject(doc) || !Array.isArray(doc.tokens)) throw new ToolEnvelopeError('invalid-option', `${source}: expected { tokens: [...] }`);
  for (const key of Object.keys(doc)) {
    if (key !== 'tokens') throw unknownKey(`${source}: ${key}`, key, key, ['tokens']);
  }
  if (doc.tokens.length === 0) throw new ToolEnvelopeError('invalid-option', `${source}: tokens is empty: with no token nobody could authenticate`);
  const byDigest = new Map<string, Identity>();
  const roles = new Set<string>();
  for (const [i, t] of doc.tokens.entries()) {
    const where = `${source}: tokens[${i}]`;
    if (!isJsonObject(t)) throw new ToolEnvelopeError('invalid-option', `${where} must be an object`);
    // A misspelt key (`role:`) ignored would give the token no roles, or no tenant, without a word.
    for (const key of Object.keys(t)) {
      if (!(TOKEN_KEYS as readonly string[]).includes(key)) throw unknownKey(`${where}.${key}`, `tokens[${i}].${key}`, key, TOKEN_KEYS);
    }
    if (typeof t.sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(t.sha256)) {
      throw new ToolEnvelopeError('invalid-option', `${where}.sha256 must be the hex SHA-256 of the token (the token itself is never stored)`);
    }
    if (t.tenant !== undefined && typeof t.tenant !== 'string') throw new ToolEnvelopeError('invalid-option', `${where}.tenant must be a string`);
    if (t.roles !== undefined && (!Array.isArray(t.roles) || t.roles.some((r) => typeof r !== 'string'))) {
      throw new ToolEnvelopeError('invalid-option', `${where}.roles must be a list of strings`);
    }
    const principal = principalOf(t.principal, where);
    if (typeof t.tenant === 'string') principal.tenant_id = t.tenant;
    const digest = t.sha256.toLowerCase();
    if (byDigest.has(digest)) throw new ToolEnvelopeError('invalid-option', `${where}: the same token digest appears twice`);
    if (t.claims !== undefined && !isJsonObject(t.claims)) throw new ToolEnvelopeError('invalid-option', `${where}.claims must be an object`);
    const identity: Identity = { principal, roles: Object.freeze([...((t.roles as string[] | undefined) ?? [])]), via: 'token' as const };
    for (const role of identity.roles) roles.add(role);
    // What policy conditions see as identity.claims: the entry's own, never the token.
    if (isJsonObject(t.claims)) identity.claims = deepFreeze(structuredClone(t.claims));
    byDigest.set(digest, Object.freeze(identity));
  }
  return {
    kind: 'tokens',
    roles: Object.freeze([...roles]),
    async authenticate(authorization) {
      const token = bearer(authorization);
      if (typeof token !== 'string') return token;
      return byDigest.get(tokenDigest(token)) ?? { error: 'invalid_token', description: 'The bearer token is not known to this gateway.' };
    },
    challenge: (failure) => challengeOf('tool-envelope', failure),
  };
}

function jsonOrYaml(text: string): unknown {
  if (text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch {
      // A YAML flow mapping ({tokens: [...]}), or bad JSON the YAML parser reports.
    }
  }
  return parseYamlWithin(text);
}

/**
 * A key the tokens file does not know (a misspelt `role:` would give the token no roles). The
 * issue's `params` carry the key and the expected ones, as a config file's do (the CLI adds a
 * did-you-mean).
 */
function unknownKey(where: string, path: string, key: string, expected: readonly string[]): ToolEnvelopeError {
  const message = `unknown key (expected ${expected.length === 1 ? expected[0] : `one of ${expected.join(', ')}`})`;
  return new ToolEnvelopeError('invalid-option', `${where}: ${message}`, {
    issues: [{ code: 'unknown-key', path, message, params: { key, expected: [...expected] } }],
  });
}

/** Loads a tokens file (JSON or YAML, at most {@link TOKENS_FILE_MAX_BYTES}) into an authenticator. */
export async function loadTokenAuthenticator(file: string): Promise<TokenAuthenticator> {
  let text: string;
  try {
    text = await readBoundedText(file, TOKENS_FILE_MAX_BYTES, 'the tokens file');
  } catch (err) {
    if (err instanceof ToolEnvelopeError) throw err;
    throw new ToolEnvelopeError('invalid-option', `cannot read the tokens file ${file}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    // JSON (a tokens file written by a program) by the fast parser; YAML otherwise, or when that fails.
    doc = jsonOrYaml(text);
  } catch (err) {
    if (err instanceof ToolEnvelopeError && err.code === 'too-deep')
      throw new ToolEnvelopeError('too-deep', `the tokens file ${file}: ${err.message}`, { cause: err });
    throw new ToolEnvelopeError('invalid-option', `the tokens file ${file} is not JSON or YAML: ${(err as Error).message}`, { cause: err });
  }
  return tokenAuthenticator(doc, file);
}

export interface OAuthOptions {
  /** The authorization server (`iss` of its tokens). */
  issuer: string;
  /** This gateway's resource URL: tokens must name it in `aud`. */
  audience: string;
  /** The issuer's JWKS URL (default: `jwks_uri` of its RFC 8414 / OpenID metadata). */
  jwksUrl?: string;
  /** Accepted signature algorithms (default: asymmetric ones only). */
  algorithms?: string[];
  /** Claim naming the tenant (default `tenant_id`). */
  tenantClaim?: string;
  /** Clock skew tolerated, seconds (default 30). */
  clockToleranceSec?: number;
  /** Verified tokens remembered (until their `exp`, at most 5 min), so a session's calls are not re-verified; default 10 000, `0`: none. */
  cacheSize?: number;
}

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

async function discoverJwks(issuer: string): Promise<string> {
  const u = new URL(issuer);
  const path = u.pathname === '/' ? '' : u.pathname;
  for (const candidate of [`${u.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`]) {
    try {
      const res = await fetch(candidate, { signal: AbortSignal.timeout(5_000) });
      if (!res.ok) continue;
      const meta = (await res.json()) as { jwks_uri?: unknown };
      if (typeof meta.jwks_uri === 'string') return meta.jwks_uri;
    } catch {
      // Try the next well-known location.
    }
  }
  throw new ToolEnvelopeError('invalid-option', `the issuer ${issuer} publishes no jwks_uri; pass the JWKS URL explicitly`);
}

/**
 * An OAuth 2.1 resource-server authenticator: JWT access tokens verified against the issuer's JWKS
 * (cached), `iss` = `issuer`, `aud` containing `audience`, `exp`/`nbf` checked. The principal is
 * `user:<sub>` with the tenant from `tenantClaim`; roles from `roles` (a list) and `scope`.
 */
export function oauthAuthenticator(options: OAuthOptions): Authenticator {
  for (const k of ['issuer', 'audience'] as const) {
    try {
      new URL(options[k]);
    } catch {
      throw new ToolEnvelopeError('invalid-option', `OAuth ${k} must be a URL, got ${JSON.stringify(options[k])}`);
    }
  }
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let pending: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keys = async (): Promise<ReturnType<typeof createRemoteJWKSet>> => {
    if (jwks) return jwks;
    pending ??= (async () => createRemoteJWKSet(new URL(options.jwksUrl ?? (await discoverJwks(options.issuer))), { timeoutDuration: 5_000 }))();
    pending.catch(() => (pending = undefined));
    return (jwks = await pending);
  };
  const tenantClaim = options.tenantClaim ?? 'tenant_id';
  const cacheSize = options.cacheSize ?? 10_000;
  // Token → identity and the time it stops being valid; insertion order makes the oldest go first.
  const verified = new Map<string, { identity: Identity; until: number }>();
  return {
    kind: 'oauth',
    async authenticate(authorization) {
      const token = bearer(authorization);
      if (typeof token !== 'string') return token;
      const hit = verified.get(token);
      if (hit) {
        if (Date.now() < hit.until) return hit.identity;
        verified.delete(token);
      }
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, await keys(), {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: options.algorithms ?? ASYMMETRIC,
          clockTolerance: options.clockToleranceSec ?? 30,
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        return { error: 'invalid_token', description: describeJoseError(err) };
      }
      const identity = identityOfClaims(payload, tenantClaim);
      if (cacheSize > 0) {
        if (verified.size >= cacheSize) verified.delete(verified.keys().next().value as string);
        verified.set(token, { identity, until: Math.min((payload.exp as number) * 1000, Date.now() + 300_000) });
      }
      return identity;
    },
    challenge: (failure, resourceMetadata) => challengeOf('tool-envelope', failure, resourceMetadata),
    resourceMetadata: (resource) => ({
      resource,
      authorization_servers: [options.issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'tool-envelope gateway',
    }),
  };
}

/** The identity a verified token's claims give: `user:<sub>`, the tenant from `tenantClaim`, roles from `roles` and `scope`. */
function identityOfClaims(payload: JWTPayload, tenantClaim: string): Identity {
  const principal: Principal = { kind: 'user', id: String(payload.sub) };
  const tenant = payload[tenantClaim];
  if (typeof tenant === 'string' && tenant !== '') principal.tenant_id = tenant;
  const roles = new Set<string>();
  if (Array.isArray(payload.roles)) for (const r of payload.roles) if (typeof r === 'string') roles.add(r);
  if (typeof payload.scope === 'string') for (const s of payload.scope.split(' ')) if (s) roles.add(s);
  // The verified token's claims, for policy conditions (identity.claims); the token itself is not kept in them.
  const claims = deepFreeze(structuredClone(payload) as JsonObject);
  return Object.freeze({ principal: Object.freeze(principal), roles: Object.freeze([...roles]), via: 'oauth' as const, claims });
}

function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'The token expired.';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `The token's "${err.claim}" claim is not valid for this gateway.`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'The token signature does not verify.';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'The token is not signed with an accepted algorithm.';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'No key of the issuer matches the token.';
  if (err instanceof joseErrors.JOSEError) return 'The token is not a valid signed JWT.';
  // The JWKS could not be fetched: the client's token may be fine, but it cannot be checked now.
  return 'The token could not be verified.';
}

/** Frozen all the way down: an identity's claims are shared by every call of its sessions. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

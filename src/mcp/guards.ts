/**
 * Guards of the gateway between sessions and upstreams: refusing a request an upstream cannot
 * take, and the key of a tenant's upstream instance (asking a client to confirm: confirm-rounds.ts).
 */
import type { Request } from '@modelcontextprotocol/server';
import { failure, toolError, type Principal, type ToolOutcome } from 'tool-envelope/core';
import { jsonBytesBound } from './result-size.js';
import type { Upstream } from './upstream.js';

/**
 * The refusal of a request larger than its upstream can take (see `UpstreamSpec.maxRequestBytes`),
 * or `undefined` when it fits.
 *
 * @example
 * ```ts
 * requestTooLarge(upstream, { method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(12e6) } } })?.error?.code; // 'request-too-large'
 * ```
 */
export function requestTooLarge(up: Upstream, req: Request): ToolOutcome | undefined {
  const limit = up.spec.maxRequestBytes ?? (up.spec.url ? 16 * 1024 * 1024 : 8 * 1024 * 1024);
  // An upper bound decides most requests without serialising them (a walk: no string per call).
  if (jsonBytesBound(req.params ?? {}, limit) + 64 <= limit) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(req.params ?? {}), 'utf8') + 64;
  if (bytes <= limit) return undefined;
  return failure(
    toolError('invalid-argument', 'request-too-large', `The request is ${bytes} bytes; the upstream '${up.name}' takes at most ${limit}. It was not sent.`, {
      details: { upstream: up.name, sizeBytes: bytes, limitBytes: limit },
    }),
  );
}

/**
 * The tenant instance key of a principal: its tenant, or the principal itself when it has none.
 *
 * @example
 * ```ts
 * tenantKey({ kind: 'user', id: 'alice', tenant_id: 'acme' }); // 'tenant:acme'
 * ```
 */
export function tenantKey(p: Principal): string {
  return p.tenant_id !== undefined ? `tenant:${p.tenant_id}` : `principal:${p.kind}:${p.id}`;
}

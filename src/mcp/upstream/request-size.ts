/**
 * The size of a request toward an upstream: one larger than the upstream can take is refused
 * before it is sent.
 */
import type { Request } from '@modelcontextprotocol/server';
import { failure, toolError, type ToolOutcome } from 'tool-envelope/core';
import { jsonBytesBound } from '../wire/result-size.js';
import type { Upstream } from './upstream.js';

/**
 * The refusal of a request larger than its upstream can take (see `UpstreamSpec.maxRequestBytes`),
 * or `undefined` when it fits.
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

/**
 * The SDK `Transport` to one upstream: the SDK's `StreamableHTTPClientTransport` for a URL (its
 * answers bounded while they stream), the gateway's `ChildProcessTransport` for a command; and the
 * progress relay put in front of the SDK's dispatch on it.
 */
import { type ProgressCallback, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { upstreamEnvironment } from './env.js';
import { type ChildProcessParams, ChildProcessTransport } from './child-process.js';
import { upstreamFetch } from './node-fetch.js';
import type { UpstreamSpec } from './types.js';

/** A new transport to the upstream `spec` describes, no answer over `maxResultBytes` read whole. */
export function upstreamTransport(spec: UpstreamSpec, maxResultBytes: number): Transport {
  if (spec.url) {
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      fetch: upstreamFetch(maxResultBytes),
      ...(spec.headers ? { requestInit: { headers: spec.headers } } : {}),
    });
  }
  const params: ChildProcessParams = { command: spec.command!, args: spec.args ?? [], stderr: 'pipe', maxMessageBytes: maxResultBytes };
  params.env = upstreamEnvironment({ inherit: spec.inheritEnv !== false, ...(spec.env ? { set: spec.env } : {}) });
  if (spec.cwd) params.cwd = spec.cwd;
  return new ChildProcessTransport(params);
}

/**
 * Makes progress notifications carrying one of `relays`' tokens go straight to that relay, ahead of
 * the SDK's dispatch (which handles notifications a microtask late, so a last progress sent just
 * before the answer would be lost); everything else goes on to the SDK. Call after `connect`.
 */
export function relayProgressFirst(transport: Transport, relays: ReadonlyMap<string, ProgressCallback>): void {
  const protocolOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('method' in message && message.method === 'notifications/progress' && !('id' in message)) {
      const params = message.params as { progressToken?: unknown } | undefined;
      const relay = typeof params?.progressToken === 'string' ? relays.get(params.progressToken) : undefined;
      if (relay) {
        const { progressToken: _t, ...rest } = params as Record<string, unknown>;
        relay(rest as Parameters<typeof relay>[0]);
        return;
      }
    }
    protocolOnMessage?.(message, extra);
  };
}

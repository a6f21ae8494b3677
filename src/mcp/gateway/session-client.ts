/**
 * What the gateway sends a session's client: a request an upstream asks while serving one of the
 * session's requests, and notifications.
 */
import { ResultSchema } from '@modelcontextprotocol/core';
import type { Notification, Request, Result, Server, ServerContext, ServerNotification, ServerRequest } from '@modelcontextprotocol/server';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { missingCapabilities, missingCapabilityError, requiredCapabilitiesOf } from './client-capabilities.js';
import type { ModernInput } from '../rounds/input.js';
import { rpcError } from '../wire/rpc-errors.js';
import { belowSessionLevel } from './log-levels.js';

/** The upstream that asks its client, and whom it is serving. */
export interface AskingUpstream {
  name: string;
  /** The sessions with requests in flight on it, and those requests. */
  calling: Map<Server, Set<ServerContext>> | undefined;
  /** The input rounds of a modern-era call: it has no session to send on. */
  modernInput?: (extra: ServerContext) => ModernInput | undefined;
}

/**
 * Relays a request an upstream sends its client (sampling, elicitation, roots) to the one session
 * whose request the upstream is serving: never to another client. A shared upstream serving several
 * sessions at once cannot say which one asked (stdio has no such field), so that fails rather than guess.
 */
export async function askSessionClient(req: Request, signal: AbortSignal, asking: AskingUpstream): Promise<Result> {
  const { name: upstream, calling, modernInput } = asking;
  const sessions = [...(calling?.entries() ?? [])];
  if (sessions.length === 0)
    throw rpcError(ProtocolErrorCode.InvalidRequest, `${req.method}: no client request is in flight on this upstream, so no client may be asked`);
  if (sessions.length > 1) {
    throw rpcError(
      ProtocolErrorCode.InvalidRequest,
      `${req.method}: ${sessions.length} client sessions have requests in flight on upstream '${upstream}'; the gateway cannot tell which one this belongs to (run the upstream per session to isolate them)`,
    );
  }
  const [server, extras] = sessions[0]!;
  const extra = [...extras].at(-1)!;
  // A modern-era call has no session to send on: its client gets the request in an input_required result.
  const input = modernInput?.(extra);
  const missing = missingCapabilities(requiredCapabilitiesOf(req) ?? {}, input ? input.capabilities : server.getClientCapabilities());
  if (missing) {
    // If the call fails without it, it needed it: answered as the SDK's own server answers a round
    // its request did not declare for (-32021, HTTP 400). An upstream that asks only in passing
    // (server-everything's roots/list) carries on, and so does the call.
    input?.lacks(missingCapabilityError(missing, req.method));
    throw rpcError(ProtocolErrorCode.MethodNotFound, `The client of this session does not support ${req.method}`);
  }
  if (input) return input.ask(req, signal);
  // Related to the session's request, so that over HTTP it travels on that request's own stream.
  return extra.mcpReq.send(req as ServerRequest, ResultSchema, { signal }) as Promise<Result>;
}

/**
 * The session whose request an upstream is serving, and that request (its latest), when one session
 * alone has requests in flight on it: what the upstream says meanwhile is about that request.
 */
export function soleCaller(calling: Map<Server, Set<ServerContext>> | undefined): [Server, ServerContext] | undefined {
  if (calling?.size !== 1) return undefined;
  const [server, extras] = [...calling][0]!;
  const extra = [...extras].at(-1);
  return extra ? [server, extra] : undefined;
}

/**
 * Sends a notification on the stream of a client's request: over HTTP it arrives before that
 * request's answer, as it would directly, and a 2026-07-28 request has no other stream.
 */
export function notifyRequest([server, extra]: [Server, ServerContext], n: Notification): void {
  if (belowSessionLevel(server, n)) return;
  extra.mcpReq.notify(n as ServerNotification).catch(() => {});
}

/**
 * Sends a notification to one client session; a session that is gone or not interested (the SDK's
 * capability checks) is left alone.
 */
export function notifySession(server: Server, n: Notification): void {
  if (belowSessionLevel(server, n)) return;
  server.notification(n as ServerNotification).catch(() => {});
}

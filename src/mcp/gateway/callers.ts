/**
 * Who is calling the gateway: each session's verified identity, its key for isolated upstream
 * instances, and the session of each request being handled (so that what an upstream asks while
 * serving it goes back to that session).
 */
import type { Server } from '@modelcontextprotocol/server';
import type { Identity } from '../../governance/identity.js';
import { instanceKeyOf } from '../upstream/instances.js';
import type { Upstream } from '../upstream/upstream.js';

export class Callers {
  private readonly identities = new WeakMap<Server, Identity>();
  private readonly sessionKeys = new WeakMap<Server, string>();
  /** The session of each request being handled, by its handler's context (a WeakMap entry: no async context tracking). */
  private readonly origins = new WeakMap<object, Server>();

  constructor(readonly defaultIdentity: Identity) {}

  /** A session's identity, set once from its authentication. */
  bind(server: Server, identity: Identity): void {
    this.identities.set(server, identity);
  }

  /** Who a session's calls act for: its verified identity, else the operator's. */
  identityOf(server: Server | undefined): Identity {
    return (server && this.identities.get(server)) ?? this.defaultIdentity;
  }

  /** Marks a request as coming from `server`. */
  tag(ctx: object, server: Server): void {
    this.origins.set(ctx, server);
  }

  serverOf(ctx: object | undefined): Server | undefined {
    return ctx ? this.origins.get(ctx) : undefined;
  }

  /** The instance of an isolated upstream that serves a session (its tenant's, or its own). */
  instanceKey(up: Upstream, server: Server): string {
    return instanceKeyOf(up.spec, server, this.sessionKeys, this.identityOf(server).principal);
  }

  /** The session's own instance key, if it was given one. */
  sessionKey(server: Server): string | undefined {
    return this.sessionKeys.get(server);
  }
}

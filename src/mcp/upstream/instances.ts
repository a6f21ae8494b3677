/**
 * Upstream instances per tenant or per session, for upstreams that keep state (a memory server, a
 * shell): each key gets its own process, started on first use, so one tenant's state and crashes
 * stay its own. The gateway's shared instance still answers `tools/list` for everyone.
 */
import { randomUUID } from 'node:crypto';
import { ToolEnvelopeError, type Principal } from 'tool-envelope/core';
import type { Upstream, UpstreamSpec } from './upstream.js';

/**
 * How an upstream is shared: one process for everyone (`shared`, the default), one per tenant of
 * the verified principal, or one per client session.
 */
export type UpstreamIsolation = NonNullable<UpstreamSpec['isolation']>;

/** The instances of one upstream, by key. */
export class UpstreamPool {
  private readonly instances = new Map<string, Promise<Upstream>>();
  private readonly keys = new Map<Upstream, string>();

  constructor(
    private readonly make: () => Upstream,
    /** Most instances at once; beyond it a new key is refused. */
    private readonly max: number,
  ) {}

  /** The instance of a key, started on first use. */
  get(key: string): Promise<Upstream> {
    let p = this.instances.get(key);
    if (p) return p;
    if (this.instances.size >= this.max) {
      return Promise.reject(new ToolEnvelopeError('invalid-option', `no more than ${this.max} upstream instances may run at once`));
    }
    const up = this.make();
    this.keys.set(up, key);
    p = up.start().then(
      () => up,
      async (err: unknown) => {
        // A failed start is not cached: the next call tries again.
        this.instances.delete(key);
        this.keys.delete(up);
        await up.close().catch(() => {});
        throw err;
      },
    );
    this.instances.set(key, p);
    return p;
  }

  /** The key an instance serves (`undefined`: not one of this pool's). */
  keyOf(up: Upstream): string | undefined {
    return this.keys.get(up);
  }

  /** Stops the instance of a key (its session ended). */
  async release(key: string): Promise<void> {
    const p = this.instances.get(key);
    if (!p) return;
    this.instances.delete(key);
    const up = await p.catch(() => undefined);
    if (up) {
      this.keys.delete(up);
      await up.close();
    }
  }

  /** Number of running (or starting) instances. */
  get size(): number {
    return this.instances.size;
  }

  /** Stops every instance. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.instances.keys()].map((k) => this.release(k)));
  }
}

/** The gateway refuses a configuration with no upstream, two upstreams of one name, or a reserved name. */
export function checkUpstreamNames(specs: readonly UpstreamSpec[]): void {
  const names = new Set<string>();
  for (const spec of specs) {
    if (names.has(spec.name)) throw new ToolEnvelopeError('invalid-option', `duplicate upstream name '${spec.name}'`);
    // `@` names are the gateway's own (a paused call's task handle is stored under `@approval`).
    if (spec.name.startsWith('@')) throw new ToolEnvelopeError('invalid-option', `upstream name '${spec.name}' is reserved: it may not start with '@'`);
    names.add(spec.name);
  }
  if (specs.length === 0) throw new ToolEnvelopeError('invalid-option', 'the gateway needs at least one upstream');
}

/**
 * The key of the instance of an isolated upstream that serves a session: its tenant's, or (per-session
 * isolation) one of its own, made on first use and remembered in `sessionKeys`.
 */
export function instanceKeyOf<S extends object>(spec: UpstreamSpec, session: S, sessionKeys: WeakMap<S, string>, principal: Principal): string {
  if (spec.isolation !== 'session') return tenantKey(principal);
  let key = sessionKeys.get(session);
  if (!key) sessionKeys.set(session, (key = `session:${randomUUID()}`));
  return key;
}

/** The tenant instance key of a principal: its tenant, or the principal itself when it has none. */
export function tenantKey(p: Principal): string {
  return p.tenant_id !== undefined ? `tenant:${p.tenant_id}` : `principal:${p.kind}:${p.id}`;
}

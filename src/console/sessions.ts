/**
 * The console's server-side sessions: a random id in an HttpOnly, SameSite=Strict cookie maps to an
 * identity and a CSRF token held here. A session ends at its idle or absolute expiry or at
 * sign-out, after which its id is refused; an id the server did not mint is never adopted
 * (no session fixation): signing in always mints a new one.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ConsoleIdentity } from './identity.js';

/** One signed-in session. */
export interface ConsoleSession {
  readonly id: string;
  readonly identity: ConsoleIdentity;
  /** The token every state-changing request must carry. */
  readonly csrf: string;
  readonly createdAt: number;
  lastSeenAt: number;
}

/** Expiry of the sessions. */
export interface SessionOptions {
  /** A session unused this long ends; default 30 min. */
  idleMs?: number;
  /** A session ends this long after sign-in whatever its use; default 12 h. */
  absoluteMs?: number;
  /** Most live sessions; the oldest ends first beyond it. Default 10 000. */
  max?: number;
  now?: () => number;
}

const token = (): string => randomBytes(32).toString('base64url');

/** True when two secrets are equal, in constant time. */
export function sameSecret(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The live sessions of one console (in this process's memory: a replica's console signs in its own users). */
export class SessionStore {
  private readonly live = new Map<string, ConsoleSession>();
  private readonly idleMs: number;
  private readonly absoluteMs: number;
  private readonly max: number;
  private readonly now: () => number;

  constructor(options: SessionOptions = {}) {
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.absoluteMs = options.absoluteMs ?? 12 * 3_600_000;
    this.max = options.max ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  create(identity: ConsoleIdentity): ConsoleSession {
    if (this.live.size >= this.max) this.live.delete(this.live.keys().next().value as string);
    const now = this.now();
    const s: ConsoleSession = { id: token(), identity, csrf: token(), createdAt: now, lastSeenAt: now };
    this.live.set(s.id, s);
    return s;
  }

  /** The live session of an id, its idle clock restarted; `undefined` for an unknown, ended or expired one. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined) return undefined;
    const s = this.live.get(id);
    if (!s) return undefined;
    const now = this.now();
    if (now - s.lastSeenAt >= this.idleMs || now - s.createdAt >= this.absoluteMs) {
      this.live.delete(id);
      return undefined;
    }
    s.lastSeenAt = now;
    return s;
  }

  end(id: string): void {
    this.live.delete(id);
  }
}

/**
 * The console's server-side sessions: a random id in an HttpOnly, SameSite=Strict cookie maps to an
 * identity, kept in the store's console-session table (store/console-sessions.ts) so that every
 * console over the store (gateway replicas, the standalone console) knows it. The store holds only
 * the id's SHA-256; the CSRF token is derived from the id, so it is not stored either. A session
 * ends at its idle or absolute expiry or at sign-out, after which its id is refused everywhere; an
 * id the server did not mint is never adopted (no session fixation): signing in always mints one.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ConsoleSessionTable } from '../store/console-sessions.js';
import type { ConsoleIdentity } from './identity.js';

/** One signed-in session. */
export interface ConsoleSession {
  readonly id: string;
  readonly identity: ConsoleIdentity;
  /** The token every state-changing request must carry. */
  readonly csrf: string;
  readonly createdAt: number;
}

/** Expiry of the sessions. */
export interface SessionOptions {
  /** A session unused this long ends; default 30 min. */
  idleMs?: number;
  /** How often an open stream (live calls) checks that its session has not ended; default 15 s. */
  streamCheckMs?: number;
  /** A session ends this long after sign-in whatever its use; default 12 h. */
  absoluteMs?: number;
  now?: () => number;
}

/** True when two secrets are equal, in constant time. */
export function sameSecret(a: string | undefined, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
// Another hash of the id than the stored one, so the store's rows do not give it away.
const csrfOf = (id: string): string => createHash('sha256').update(`tool-envelope console csrf\0${id}`).digest('base64url');
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/** The sessions of the consoles over one store. */
export class SessionStore {
  private readonly idleMs: number;
  private readonly absoluteMs: number;
  /** How stale a session's last use may be before a request writes it again (one write a minute at most). */
  private readonly touchMs: number;
  private readonly streamCheckMs: number;
  private readonly now: () => number;

  constructor(
    private readonly table: ConsoleSessionTable,
    options: SessionOptions = {},
  ) {
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.absoluteMs = options.absoluteMs ?? 12 * 3_600_000;
    this.touchMs = Math.min(60_000, this.idleMs / 10);
    this.streamCheckMs = options.streamCheckMs ?? 15_000;
    this.now = options.now ?? Date.now;
  }

  async create(identity: ConsoleIdentity): Promise<ConsoleSession> {
    const now = this.now();
    const id = randomBytes(32).toString('base64url');
    await this.table.create({
      idHash: sha256(id),
      identity: JSON.stringify(identity),
      createdAt: now,
      lastSeenAt: now,
      idleUntil: now + this.idleMs,
      expiresAt: now + this.absoluteMs,
    });
    return { id, identity, csrf: csrfOf(id), createdAt: now };
  }

  /** The live session of an id, its idle clock restarted; `undefined` for an unknown, ended or expired one. */
  async get(id: string | undefined): Promise<ConsoleSession | undefined> {
    if (id === undefined || !SESSION_ID.test(id)) return undefined;
    const now = this.now();
    const idHash = sha256(id);
    const r = await this.table.get(idHash, now);
    if (!r) return undefined;
    if (now - r.lastSeenAt >= this.touchMs) await this.table.touch(idHash, now, now + this.idleMs);
    return { id, identity: JSON.parse(r.identity) as ConsoleIdentity, csrf: csrfOf(id), createdAt: r.createdAt };
  }

  /**
   * Ends an open answer (a live stream) once its session has ended: signed out on any console over
   * the store, or expired. Checking is not use: it does not restart the idle clock.
   */
  endWithSession(id: string, res: ServerResponse): void {
    const idHash = sha256(id);
    const timer = setInterval(() => {
      this.table.get(idHash, this.now()).then(
        (r) => r === undefined && res.end(),
        () => {}, // the store did not answer: ask again next time
      );
    }, this.streamCheckMs);
    timer.unref();
    res.once('close', () => clearInterval(timer));
  }

  async end(id: string): Promise<void> {
    if (SESSION_ID.test(id)) await this.table.end(sha256(id));
  }
}

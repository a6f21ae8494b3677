/**
 * Task handles: the unguessable names the gateway gives its callers for upstream tasks, and the
 * caller binding they are stored under. A handle is 256 random bits; the store keeps its SHA-256
 * only, next to the digest of the caller it was issued to.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The prefix of every handle the gateway issues (so a log line names what it is). */
export const TASK_HANDLE_PREFIX = 'teh_';
/** Random bytes per handle (256 bits; the issue asks for at least 128). */
export const TASK_HANDLE_BYTES = 32;
// base64url of 32 bytes is 43 characters.
const HANDLE_RE = /^teh_[A-Za-z0-9_-]{43}$/;

/**
 * Who a handle belongs to: the tenant and the verified principal from authentication (never from
 * the request), and the transport session where sessions exist.
 *
 * @example
 * ```ts
 * const caller: TaskCaller = { tenant: 'acme', principal: 'user:alice', session: extra.sessionId };
 * ```
 */
export interface TaskCaller {
  tenant: string;
  principal: string;
  /** The 2025-era session id; absent on the stateless modern era. */
  session?: string;
}

/**
 * A new handle: `teh_` and 256 bits from the system CSPRNG, base64url.
 *
 * @example
 * ```ts
 * mintTaskHandle(); // 'teh_Vq3…' (47 characters)
 * ```
 */
export function mintTaskHandle(): string {
  return TASK_HANDLE_PREFIX + randomBytes(TASK_HANDLE_BYTES).toString('base64url');
}

/**
 * Whether a string has the shape of a handle (checked before any store lookup, so junk of any
 * size never reaches the database).
 *
 * @example
 * ```ts
 * isTaskHandleShape(mintTaskHandle()); // true
 * isTaskHandleShape('task-1');         // false
 * ```
 */
export function isTaskHandleShape(value: unknown): value is string {
  return typeof value === 'string' && HANDLE_RE.test(value);
}

/**
 * The hex SHA-256 a handle is stored under.
 *
 * @example
 * ```ts
 * await store.taskHandles.get(taskHandleHash(handle), taskOwnerKey(caller), Date.now());
 * ```
 */
export function taskHandleHash(handle: string): string {
  return createHash('sha256').update(handle, 'utf8').digest('hex');
}

/**
 * The digest of a caller that a handle is bound to. Each part is length-prefixed, so no two
 * different callers share a digest.
 *
 * @example
 * ```ts
 * taskOwnerKey({ tenant: 'acme', principal: 'user:alice' }) !== taskOwnerKey({ tenant: 'acme', principal: 'user:bob' }); // true
 * ```
 */
export function taskOwnerKey(caller: TaskCaller): string {
  const h = createHash('sha256');
  for (const part of [caller.tenant, caller.principal, caller.session ?? '']) h.update(`${Buffer.byteLength(part, 'utf8')}:${part};`, 'utf8');
  return h.digest('hex');
}

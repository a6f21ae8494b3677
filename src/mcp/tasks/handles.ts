/**
 * Task handles: the unguessable names the gateway gives its callers for upstream tasks, and the
 * caller binding they are stored under. A handle is 256 random bits; the store keeps its SHA-256
 * only, next to the digest of the caller it was issued to.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** The prefix of every handle the gateway issues (so a log line names what it is). */
export const TASK_HANDLE_PREFIX = 'teh_';
/** Random bytes per handle (256 bits; the issue asks for at least 128). */
export const TASK_HANDLE_BYTES = 32;
// base64url of 32 bytes is 43 characters.
const HANDLE_RE = /^teh_[A-Za-z0-9_-]{43}$/;

/**
 * Who a handle belongs to: the tenant and the verified principal from authentication (never from
 * the request), and the transport session where sessions exist.
 */
export interface TaskCaller {
  tenant: string;
  principal: string;
  /** The 2025-era session id; absent on the stateless modern era. */
  session?: string;
}

/** A new handle: `teh_` and 256 bits from the system CSPRNG, base64url. */
export function mintTaskHandle(): string {
  return TASK_HANDLE_PREFIX + randomBytes(TASK_HANDLE_BYTES).toString('base64url');
}

/**
 * Whether a string has the shape of a handle (checked before any store lookup, so junk of any
 * size never reaches the database).
 */
export function isTaskHandleShape(value: unknown): value is string {
  return typeof value === 'string' && HANDLE_RE.test(value);
}

/** The hex SHA-256 a handle is stored under. */
export function taskHandleHash(handle: string): string {
  return createHash('sha256').update(handle, 'utf8').digest('hex');
}

/**
 * The digest of a caller that a handle is bound to. Each part is length-prefixed, so no two
 * different callers share a digest.
 */
export function taskOwnerKey(caller: TaskCaller): string {
  const h = createHash('sha256');
  for (const part of [caller.tenant, caller.principal, caller.session ?? '']) h.update(`${Buffer.byteLength(part, 'utf8')}:${part};`, 'utf8');
  return h.digest('hex');
}

// The AES-256-GCM key a handle is sealed under: only the same secret for the same caller opens it.
function sealKey(secret: string, owner: string): Buffer {
  const h = createHash('sha256').update('tool-envelope task handle seal v1;', 'utf8');
  for (const part of [secret, owner]) h.update(`${Buffer.byteLength(part, 'utf8')}:${part};`, 'utf8');
  return h.digest();
}

/**
 * A handle sealed (AES-256-GCM) under a secret the caller presents again (its idempotency key) and
 * the caller's owner digest, so that a stored replay record never holds a handle in the clear and
 * only the same caller with the same key can open it.
 */
export function sealTaskHandle(handle: string, secret: string, owner: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(secret, owner), iv);
  const body = Buffer.concat([cipher.update(handle, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** Opens a sealed handle: the handle, or undefined for another secret, another caller, or junk. */
export function openTaskHandle(sealed: unknown, secret: string, owner: string): string | undefined {
  if (typeof sealed !== 'string' || sealed.length > 200) return undefined;
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < 29) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey(secret, owner), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    const handle = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    return isTaskHandleShape(handle) ? handle : undefined;
  } catch {
    return undefined;
  }
}

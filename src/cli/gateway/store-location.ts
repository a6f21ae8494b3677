/**
 * A location as shown to people (a store, an upstream URL): a URL's password as `***` and the
 * values of query-string parameters that name secrets (`?token=`, `&sig=`) as `[REDACTED]`.
 */
import { redactQuerySecrets } from '../../store/query-secrets.js';

// `scheme://user:password@`: the password runs to the last `@` before the path (one may hold an `@`).
const PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/@?#]*):[^/?#]*@/i;

/** `location` with its URL password and query-string secrets hidden. */
export function hidePassword(location: string): string {
  const masked = location.replace(PASSWORD, '$1:***@');
  return redactQuerySecrets(masked) ?? masked;
}

/** True for the memory store (`--store memory`): it lives in the gateway's process, out of any other's reach. */
export function isMemoryStore(location: string): boolean {
  return location === 'memory' || location === ':memory:';
}

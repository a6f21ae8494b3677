/**
 * A location as shown to people (a store, an upstream URL): a URL's password as `***` and the
 * values of query-string parameters that name secrets (`?token=`, `&sig=`) as `[REDACTED]`. In the
 * store layer so that every layer above that prints a location (the gateway's config, the CLI)
 * hides the same things.
 */
import { redactQuerySecrets } from './query-secrets.js';

// `scheme://user:password@`: the password runs to the last `@` before the path (one may hold an `@`).
const PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/@?#]*):[^/?#]*@/i;

/** `location` with its URL password (`postgres://app:***@db/x`) and query-string secrets hidden. */
export function hidePassword(location: string): string {
  const masked = location.replace(PASSWORD, '$1:***@');
  return redactQuerySecrets(masked) ?? masked;
}

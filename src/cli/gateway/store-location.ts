/**
 * Locations as shown to people, and which store a `--store` location names. The masking itself is
 * the store layer's (store/hide-url-secrets.ts), shared with the gateway's config errors.
 */
export { hidePassword } from '../../store/hide-url-secrets.js';

/** True for the memory store (`--store memory`): it lives in the gateway's process, out of any other's reach. */
export function isMemoryStore(location: string): boolean {
  return location === 'memory' || location === ':memory:';
}

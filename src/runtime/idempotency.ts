/**
 * Moved to `src/governance/idempotency.ts` (`tool-envelope/governance`); re-exported here so existing imports keep working.
 */
export * from '../governance/idempotency.js';

/**
 * Moved to `src/governance/policy.ts` (`tool-envelope/governance`); re-exported here so existing imports keep working.
 */
export * from '../governance/policy.js';

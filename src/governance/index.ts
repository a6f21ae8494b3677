/**
 * tool-envelope/governance: the one governance pipeline (policy, identity, idempotency, signed
 * approvals, audit) that the governed runtime and the MCP gateway run every call through.
 */
export * from './pipeline.js';
export { ApprovalDesk, approverInChain } from './approvals.js';
export * from './approval-signature.js';
export * from './policy.js';
export * from './idempotency.js';
export * from './identity.js';

/**
 * Approval policy: the types (`policy-types.ts`), resolving a call's decision
 * (`policy-resolve.ts`), the declarative rule language compiled once per policy
 * (`policy-rules.ts`), and documents checked against their JSON Schema and compiled
 * (`policy-check.ts`, `policy-load.ts`). One import for all of them.
 */
export * from './policy-types.js';
export * from './policy-resolve.js';
export { policyRegExpsCompiled } from './policy-rules.js';
export { WHEN_LIMITS, WHEN_VARIABLES } from './policy-cel.js';
export * from './policy-explain.js';
export { checkPolicyDocument, POLICY_LIMITS } from './policy-check.js';
export { compilePolicy, createDefaultPolicy, defaultPolicy, loadPolicyFile, parsePolicy } from './policy-load.js';
export { PolicyReloader, type PolicyReloadOptions, type PolicyReloadResult } from './policy-reload.js';
export { policyDocumentSchema } from './generated/policy-validator.js';

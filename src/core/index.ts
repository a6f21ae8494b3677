/**
 * tool-envelope core: the canonical model, the three contracts, validation,
 * conversion, previews and error classification. No runtime dependencies.
 */
export * from './json.js';
export * from './taxonomy.js';
export * from './errors.js';
export * from './model.js';
export * from './tool-failure.js';
export { classifyThrown, sanitizeMessage, type ClassifyOptions } from './classify.js';
export { replaceUrlParts, urlSchemeStart } from './url-scheme.js';
export * from './preview.js';
export * from './plain-failure.js';
export * from './json-safe.js';
export * from './contracts/registry.js';
// MCEC's two codec entry points for its revision (decodeValidMcec, encodeMcecAs) stay internal.
export {
  MCEC_SYNTHESIZED_ERRORS,
  type McecBase,
  type McecError,
  type McecToolResult,
  type McecWarning,
  checkMcec,
  decodeMcec,
  encodeMcec,
  mcecContract,
  mcecSchema,
  relocateErrorNot,
  validateMcec,
} from './contracts/mcec.js';
export * from './contracts/mcec-2026-07.js';
export * from './contracts/dw.js';
export * from './contracts/dw-14.js';
export * from './contracts/contextos.js';
export * from './contracts/safe-mutation.js';
export * from './peer.js';
export * from './trace-context.js';

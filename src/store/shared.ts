/**
 * The store drivers' shared logic, re-exported from the files that hold it (for code that imports
 * it from here): query building (query.ts), row mapping (rows.ts), the on-disk body format
 * (audit-body.ts), the started record (started-record.ts), stats (stats.ts), the retention timer
 * (retention.ts), store errors (guards.ts) and audit ids (ids.ts).
 *
 * @example
 * ```ts
 * import { newAuditId, startedAuditRecord } from './shared.js';
 * ```
 */
export { auditBodyText, copyAuditRecord, documentsOf, freezeAuditRecord } from './audit-body.js';
export { assertOpen, storeFailure } from './guards.js';
export { newAuditId } from './ids.js';
export {
  AUDIT_STATUSES,
  DEFAULT_PAGE,
  MAX_PAGE,
  auditByIdSql,
  auditWhere,
  decodeCursor,
  encodeCursor,
  iterateByPages,
  matchesAudit,
  pageLimit,
  toolCallKey,
} from './query.js';
export { startRetention } from './retention.js';
export {
  APPROVAL_COLUMNS,
  AUDIT_COLUMNS,
  approvalFromRow,
  approvalRowValues,
  auditFromRow,
  auditFromValues,
  auditRowValues,
  idempotencyFromRow,
} from './rows.js';
export { startedAuditRecord } from './started-record.js';
export { computeStats } from './stats.js';

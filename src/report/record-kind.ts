/**
 * What a record of the audit log counts as, the one rule `audit stats` and the HTML report share:
 * an execution (a call), the stored outcome of a repeated idempotency key returned again (a replay:
 * the tool did not run), or a call waiting for an approver (a pause: once decided, the same call gets
 * a second, final record, the call); and which statuses are failures.
 */
import { isSuccessStatus } from 'tool-envelope/core';
import { AUDIT_STATUSES } from '../store/query.js';
import type { AuditRecord, AuditStatus } from '../store/types.js';

/** What a record counts as: an execution (`call`), a replay of a stored outcome, or a pause. */
export type RecordKind = 'call' | 'replay' | 'paused';

/** What `r` counts as; a replay of a paused outcome is a replay. */
export function recordKind(r: Pick<AuditRecord, 'status' | 'replay'>): RecordKind {
  if (r.replay === true) return 'replay';
  return r.status === 'paused' ? 'paused' : 'call';
}

/**
 * The statuses that count as failures in reports and stats: every status but
 * the successes (`ok`, `completed`) and `paused` (waiting, not failed). `interrupted` (the call was
 * executing when its process died: nobody knows whether it took effect) counts as a failure.
 */
export const FAILURE_STATUSES: readonly AuditStatus[] = AUDIT_STATUSES.filter((s) => isFailureStatus(s));

/** True for a failure status (see {@link FAILURE_STATUSES}). */
export function isFailureStatus(status: AuditStatus): boolean {
  if (status === 'interrupted' || status === 'started') return true;
  return !isSuccessStatus(status) && status !== 'paused';
}

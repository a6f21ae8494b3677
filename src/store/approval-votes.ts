/**
 * The approval-vote table: the signed approvals of a request that needs several distinct approvers
 * (a policy rule's `approvers: N`, governance/approval-quorum.ts). One row per request and approver,
 * so the same identity approving twice counts once; a vote is recorded only while its request is
 * pending, and the votes come back in the order they were recorded.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** One approver's signed approval of a request. */
export interface ApprovalVote {
  approvalId: string;
  approver: string;
  at: number;
  reason: string | null;
  /** The operator-key signature of the request's facts and this approver (approval-signature.ts). */
  signature: string;
}

/** The table's operations, on every store (`store.approvalVotes`). */
export interface ApprovalVoteTable {
  /**
   * Records a vote unless its approver already voted or the request is not pending; answers
   * whether it was recorded and every approver who voted so far, in order.
   */
  add(vote: ApprovalVote): Promise<{ added: boolean; approvers: string[] }>;
  /** The votes of a request, in the order they were recorded. */
  list(approvalId: string): Promise<ApprovalVote[]>;
}

/** The SQL column names, in {@link approvalVoteValues} order. */
export const APPROVAL_VOTE_COLUMNS = ['approval_id', 'approver', 'at', 'reason', 'signature'] as const;

/** Checks a vote and returns its column values. */
export function approvalVoteValues(v: ApprovalVote): [string, string, number, string | null, string] {
  for (const key of ['approvalId', 'approver', 'signature'] as const) {
    if (typeof v[key] !== 'string' || v[key] === '') throw new ToolEnvelopeError('invalid-option', `approval vote ${key} must be a non-empty string`);
  }
  if (!Number.isSafeInteger(v.at)) throw new ToolEnvelopeError('invalid-option', 'approval vote at must be an integer');
  if (v.reason !== null && typeof v.reason !== 'string') throw new ToolEnvelopeError('invalid-option', 'approval vote reason must be a string or null');
  return [v.approvalId, v.approver, v.at, v.reason, v.signature];
}

/** A row read back from SQL as a vote. */
export function approvalVoteFromRow(row: Record<string, unknown>): ApprovalVote {
  return {
    approvalId: String(row.approval_id),
    approver: String(row.approver),
    at: Number(row.at),
    reason: row.reason === null || row.reason === undefined ? null : String(row.reason),
    signature: String(row.signature),
  };
}

/** The in-memory table (the memory store's); `pending(id)` says whether a request is pending. */
export function createMemoryApprovalVotes(check: () => void, pending: (approvalId: string) => boolean): ApprovalVoteTable {
  const rows = new Map<string, ApprovalVote[]>();
  return {
    async add(vote) {
      check();
      approvalVoteValues(vote);
      const votes = rows.get(vote.approvalId) ?? [];
      const added = pending(vote.approvalId) && !votes.some((v) => v.approver === vote.approver);
      if (added) rows.set(vote.approvalId, [...votes, { ...vote }]);
      return { added, approvers: (rows.get(vote.approvalId) ?? []).map((v) => v.approver) };
    },
    async list(approvalId) {
      check();
      return (rows.get(approvalId) ?? []).map((v) => ({ ...v }));
    },
  };
}
